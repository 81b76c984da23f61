"""The one parser of whole numbers that come from outside: indices, ports, version parts, counts.

Python's int() takes any Unicode digit ("１" is 1) and raises a bare ValueError past 4,300
digits; CUDA, drivers and sockets read ASCII only, and no index, port, version part or count
has more than a few digits. Every number parsed from outside text goes through here: ASCII
digits only, at most MAX_DIGITS of them, else an InputError naming where the text came from.
"""

from __future__ import annotations

import re

from hwcheck.base.errors import InputError

# 18 digits always fit in a signed 64-bit integer, and nothing hwcheck reads needs more.
MAX_DIGITS = 18
# The bound of every integer in a document from outside (a report, facts, a cache entry, a
# framework's answer): a signed 64-bit integer, what the rules engine (CEL) and every file
# format hwcheck writes can hold. A larger one is refused where it is read, never carried on.
MAX_INTEGER = 2**63 - 1
MIN_INTEGER = -(2**63)
DIGITS = "[0-9]"  # for patterns that find numbers: \d would match every Unicode digit
_LEADING = r"\+?([0-9]+)"
MIB = 1024**2
GIB = 1024**3


def parse_whole(text: str, source: str, *, maximum: int | None = None, digits: int = MAX_DIGITS) -> int:
    """`text` (ASCII digits only, at most `digits` of them) as a number of at most `maximum`,
    else an InputError naming `source`."""
    if not isinstance(text, str) or not text.isascii() or not text.isdigit():
        raise InputError(source, f"{_shown(text)} is not a whole number (ASCII digits 0-9 only)")
    if len(text) > digits:
        raise InputError(source, f"a number of {len(text)} digits is too long (at most {digits})")
    value = int(text)
    if maximum is not None and value > maximum:
        raise InputError(source, f"{value} is too large (at most {maximum})")
    return value


def whole_or_none(text: str) -> int | None:
    """`text` as a number when it is one parse_whole accepts, else None (an unknown part)."""
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > MAX_DIGITS:
        return None
    return int(text)


def numbered(name: str, prefix: str) -> bool:
    """Whether `name` is `prefix` and a number in ASCII digits: nvidia0, accel3, nvidia-cudnn-cu12."""
    number = name[len(prefix) :]
    return name.startswith(prefix) and number.isascii() and number.isdigit()


def leading_whole(text: str, source: str) -> int | None:
    """The number `text` starts with (an optional "+", then ASCII digits, read as strtoul does);
    None when it starts with none, an InputError naming `source` when it is too long."""
    match = re.match(_LEADING, text)
    if match is None:
        return None
    return parse_whole(match.group(1), source)


def json_integer(text: str) -> int:
    """A JSON integer's text as a number (json.loads's parse_int): ValueError beyond 64 bits."""
    digits = len(text) - text.startswith("-")
    # 19 digits are the most a 64-bit integer has: longer text is refused before int() reads it.
    value = int(text) if digits <= 19 else None
    if value is None or not MIN_INTEGER <= value <= MAX_INTEGER:
        raise ValueError(f"the integer {_shown_digits(text)} is beyond 64 bits (at most {MAX_INTEGER})")
    return value


def wide_integer(document: object) -> str | None:
    """Where `document` (dicts and lists from outside, given as objects) holds an integer beyond
    64 bits, as "gpus[0].memory_mib"; None when every integer is within json_integer's bound."""
    stack: list[tuple[object, str]] = [(document, "")]
    seen: set[int] = set()  # a dict or list reached twice is walked once: shared parts stay linear
    while stack:
        node, where = stack.pop()
        if isinstance(node, int) and not isinstance(node, bool):
            if not MIN_INTEGER <= node <= MAX_INTEGER:
                return where.lstrip(".") or "top level"
            continue
        if not isinstance(node, dict | list | tuple) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            stack.extend((value, f"{where}.{key}") for key, value in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((value, f"{where}[{index}]") for index, value in enumerate(node))
    return None


def contains_itself(document: object) -> str | None:
    """Where `document` (dicts and lists given as objects) holds a dict or list that contains
    itself, as "gpus[0].self"; None when it is a tree (shared parts included)."""
    # Depth first, iteratively: a container is "open" while its own parts are walked, and an
    # open one met again is a cycle. A finished one is not walked again (shared parts are fine).
    open_ids: set[int] = set()
    done: set[int] = set()
    stack: list[tuple[object, str, bool]] = [(document, "", False)]
    while stack:
        node, where, leaving = stack.pop()
        if leaving:
            open_ids.discard(id(node))
            done.add(id(node))
            continue
        if not isinstance(node, dict | list | tuple) or id(node) in done:
            continue
        if id(node) in open_ids:
            return where.lstrip(".") or "top level"
        open_ids.add(id(node))
        stack.append((node, where, True))
        if isinstance(node, dict):
            stack.extend((value, f"{where}.{key}", False) for key, value in node.items())
        else:
            stack.extend((value, f"{where}[{index}]", False) for index, value in enumerate(node))
    return None


def _shown_digits(text: str) -> str:
    digits = len(text) - text.startswith("-")
    return text if len(text) <= 24 else f"{text[:12]}... ({digits} digits)"


def _shown(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def bytes_text(value: int | None) -> str:
    """A size in bytes as people read it: 64 MiB, 1.0 GiB ("unknown" for None)."""
    if value is None:
        return "unknown"
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / MIB:.0f} MiB"
