"""Filling script templates: values enter the code only as Python literals, never as code."""

from __future__ import annotations

import math
import re
import string
import textwrap

_WORD = re.compile(r"[A-Za-z0-9_.+-]+")


class Word(str):
    """A checked name (policy, framework) that may appear bare in prose and comments."""

    def __new__(cls, text: str) -> Word:
        if not isinstance(text, str) or not _WORD.fullmatch(text):
            raise ValueError(f"not a plain word: {text!r}")
        return super().__new__(cls, text)


LiteralValue = bool | int | float | str | None


def literal(value: LiteralValue) -> str:
    """The Python literal for a plain value (repr); a Word goes in bare; anything else is refused."""
    if isinstance(value, Word):
        return str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    raise TypeError(f"cannot put {type(value).__name__} value {value!r} into generated code")


def fill(template: str, **values: LiteralValue) -> str:
    """Dedent `template` and replace each $name with the literal of values[name] (all required)."""
    return string.Template(textwrap.dedent(template)).substitute(
        {name: literal(value) for name, value in values.items()}
    )


def join_blocks(*blocks: str) -> str:
    """Top-level blocks of a module, two blank lines apart, ending in one newline."""
    return "\n\n\n".join(block.strip("\n") for block in blocks if block.strip()) + "\n"
