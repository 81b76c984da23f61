"""Untrusted text made safe to print: the one place control characters and markup are neutralised.

Facts, reports, GPU names, host names, environment variables and file names come from
other machines and other programs. Printed raw, an ESC starts a terminal escape (OSC-8
links, title changes, cursor moves), a newline forges a line of output, a bidi override
reorders what the reader sees, a `[bold]` is taken as rich markup, and a lone surrogate
(from a file name or a JSON `\\ud800`) cannot be encoded as UTF-8 at all.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# C0 controls, DEL, C1 controls, the Arabic letter mark, LRM/RLM, line and paragraph
# separators, the bidi embeddings/overrides (U+202A-U+202E) and isolates (U+2066-U+2069),
# and surrogates: in a valid str every surrogate is a lone one. The patterns are compiled
# on first use (re caches them): their Unicode ranges cost ~1 ms each to compile, and ASCII
# text, most of what doctor writes, is checked without them.
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SURROGATE = "[\ud800-\udfff]"
# What json.dumps(ensure_ascii=False) leaves raw but a terminal or an encoder chokes on.
_UNSAFE_IN_JSON = "[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def terminal_text(value: Any, *, markup: bool = False) -> str:
    """`value` as text safe for a terminal: unsafe characters as visible escapes (`\\x1b`, `\\n`,
    `\\u202e`, `\\ud800`), and rich markup escaped when `markup` (the text goes into markup)."""
    text = value if isinstance(value, str) else str(value)
    # Printable ASCII is everything but C0 controls and DEL: nothing to escape.
    if not (text.isascii() and text.isprintable()) and re.search(_UNSAFE, text):
        text = re.sub(_UNSAFE, _visible_escape, text)
    if markup:
        from rich.markup import escape

        text = escape(text)
    return text


def csv_cell(value: Any) -> Any:
    """A CSV cell: text made terminal-safe and kept from being read as a spreadsheet formula."""
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA_STARTS):
        value = "'" + value
    return terminal_text(value)


def json_text(document: Any) -> str:
    """`document` as indented JSON ending in a newline: non-ASCII text stays readable, while
    control, bidi and lone-surrogate characters are written as \\u escapes (json.loads gives
    back the same string, and the output always encodes as UTF-8)."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    if text.isascii() and "\x7f" not in text:
        return text + "\n"
    # Outside strings JSON has only ASCII, so every match is inside a string, where a
    # \\uXXXX escape means exactly that character.
    return re.sub(_UNSAFE_IN_JSON, lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"


def without_lone_surrogates(value: Any) -> Any:
    """`value` (nested dicts, lists, strings) with each lone surrogate written as its `\\udXXX`
    escape: such a string cannot be encoded as UTF-8, nor handed to the CEL engine."""
    if isinstance(value, str):
        if value.isascii() or not re.search(_SURROGATE, value):
            return value
        return re.sub(_SURROGATE, _visible_escape, value)
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(without_lone_surrogates(item) for item in value)
    return value


def _visible_escape(match: re.Match[str]) -> str:
    character = match.group()
    if character in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
