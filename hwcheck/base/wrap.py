"""Text that fits the terminal: prose wrapped with its indent kept, code wrapped as code.

Every command that prints for a terminal sizes its lines with terminal_width() (COLUMNS, else
the terminal, else 80) and wraps them here. Prose continues under its own indent; a code line
is never cut: its trailing comment moves above it, and what is still too long breaks after a
comma inside brackets (Python's implicit continuation), indented four more.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hwcheck.base.numbers import whole_or_none

# The narrowest width wrapped to, whatever COLUMNS or the terminal says.
MIN_COLUMNS = 20
# A comment after code, as hwcheck writes it: two spaces, '#', a space.
CODE_COMMENT = "  # "


def columns(stream: Any) -> int | None:
    """The width to wrap at: COLUMNS when set, else the terminal's; None (no wrapping) in a pipe or file."""
    given = whole_or_none(os.environ.get("COLUMNS", "").strip())
    if given is not None:
        return max(given, MIN_COLUMNS)
    try:
        if stream is not None and stream.isatty():
            return max(os.get_terminal_size(stream.fileno()).columns, MIN_COLUMNS)
    except (AttributeError, OSError, ValueError):
        pass
    return None


def terminal_width(default: int = 80) -> int:
    """The columns to fit: COLUMNS, else the terminal's, else `default`."""
    return columns(sys.__stdout__) or default


def cells(text: str) -> int:
    """The terminal columns `text` takes: an East Asian wide or fullwidth character two, a
    combining or zero-width one none, every other one (ASCII included) one."""
    if text.isascii():
        return len(text)
    return sum(_cell(char) for char in text)


def _cell(char: str) -> int:
    import unicodedata  # only for non-ASCII text

    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def wrap_text(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """`text` in lines of at most `width` terminal columns (a word longer than that stays whole,
    but a run of wide East Asian characters breaks between them), every line after the first
    under `indent`; the first starts with `first` (default: `indent`)."""
    lead = indent if first is None else first
    if cells(lead) + cells(text) <= width and "\n" not in text:
        return [lead + text]
    if not (text.isascii() and lead.isascii() and indent.isascii()):
        return _wrap_cells(text, width, lead, indent)
    import textwrap  # only where a line needs wrapping: doctor's start-up does without it

    lines = textwrap.wrap(
        text,
        width=max(width, len(lead) + 1, len(indent) + 1),
        initial_indent=lead,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return lines or [lead.rstrip()]


def _wrap_cells(text: str, width: int, lead: str, indent: str) -> list[str]:
    """wrap_text for text with characters wider or narrower than one column: greedy, by cells."""
    lines: list[str] = []
    line, used, bare = lead, cells(lead), True  # bare: nothing after the lead or indent yet
    for word in text.split():
        size, gap = cells(word), 0 if bare else 1
        if used + gap + size <= width or (bare and size <= len(word)):
            line, used, bare = line + " " * gap + word, used + gap + size, False
            continue
        if size <= len(word):  # no wide character: the word stays whole on a line of its own
            lines.append(line)
            line, used = indent + word, cells(indent) + size
            continue
        # East Asian text breaks between any two characters; a combining one (no cells) stays on.
        for char in word:
            size = _cell(char)
            if not bare and used + gap + size > width:
                lines.append(line)
                line, used, gap = indent, cells(indent), 0
            line, used, bare, gap = line + " " * gap + char, used + gap + size, False, 0
    lines.append(line)
    return [kept.rstrip() for kept in lines if kept.strip()] or [lead.rstrip()]


def wrap_code(line: str, width: int) -> list[str]:
    """A Python line that still runs when copied: its comment above it, then breaks after commas
    inside brackets; a line with no such break is left whole, never cut."""
    if cells(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    if line.lstrip().startswith("#"):  # a comment line: more comment lines
        return wrap_text(line.lstrip()[1:].strip(), width, indent + "# ")
    code, found, comment = line.partition(CODE_COMMENT)
    if found and code.strip() and _outside_strings(code):
        above = wrap_text(comment, width, indent + "# ")
        return above + wrap_code(code.rstrip(), width)
    return _break_in_brackets(line, width, indent + "    ")


def _outside_strings(code: str) -> bool:
    """Whether `code` closes every quote it opens (so a '  # ' after it starts a comment)."""
    quote = ""
    for char in code:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
    return not quote


def _break_in_brackets(line: str, width: int, continuation: str, depth: int = 0) -> list[str]:
    """`line` broken after the last comma inside brackets that keeps it within `width` (`depth`:
    the brackets already open where it starts)."""
    quote, cut, cut_depth = "", -1, depth
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth > 0 and line[index + 1 : index + 2] == " ":
            if index + 1 > width and cut >= 0:
                break
            cut, cut_depth = index, depth
    if cut < 0 or cut + 1 >= len(line.rstrip()):
        return [line]
    rest = continuation + line[cut + 2 :]
    if len(rest) >= len(line):
        return [line]
    return [line[: cut + 1], *_break_in_brackets(rest, width, continuation, cut_depth)]


def wrap_shell(command: str, width: int, continuation: str = "  ") -> list[str]:
    """A shell command that still runs when pasted: broken before its options with a trailing
    backslash, the options indented; one that cannot break stays whole, never cut."""
    if cells(command) <= width:
        return [command]
    head, *options = command.split(" --")
    lines = [head]
    for option in options:
        if len(lines[-1]) + len(option) + 3 <= width - 2:
            lines[-1] += " --" + option
        else:
            lines.append(continuation + "--" + option)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]
