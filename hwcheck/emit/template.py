"""Rendering script templates: values enter the code only as Python literals, never as code.

The scripts are Jinja2 templates in hwcheck/emit/templates/ (one per framework, with shared
parts under parts/). Every `{{ expression }}` goes through `literal()`, so a value reaches
the script as a Python literal unless it was marked Word or Prose here; `{% if %}` picks the
code for the policy, the Keras version and the guard.
"""

from __future__ import annotations

import math
import re
import string
import textwrap
from functools import cache
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).parent / "templates"

_WORD = re.compile(r"[A-Za-z0-9_.+-]+")
# Strings made only of these characters read the same between double quotes.
_PLAIN_STRING = re.compile(r"[A-Za-z0-9_ .,:;+\-/=()]*")


class Word(str):
    """A checked name (policy, framework) that may appear bare in prose and comments."""

    def __new__(cls, text: str) -> Word:
        """`text` as a Word; ValueError unless it is letters, digits and _ . + - only."""
        if not isinstance(text, str) or not _WORD.fullmatch(text):
            raise ValueError(f"not a plain word: {text!r}")
        return super().__new__(cls, text)


class Prose(str):
    """Text written in this package (never user input) that may appear bare in a docstring."""

    def __new__(cls, text: str) -> Prose:
        """`text` as Prose; ValueError if it holds triple quotes or a backslash."""
        if '"""' in text or "\\" in text:
            raise ValueError("prose must not contain triple quotes or backslashes")
        return super().__new__(cls, text)


LiteralValue = bool | int | float | str | None


def literal(value: LiteralValue) -> str:
    """The Python literal for a plain value (repr); Word and Prose go in bare; nothing else does."""
    if isinstance(value, (Word, Prose)):
        return str(value)
    if isinstance(value, str) and _PLAIN_STRING.fullmatch(value):
        return f'"{value}"'
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float) and math.isfinite(value):
        # 1e+30 as ruff format writes it: 1e30.
        return repr(value).replace("e+", "e")
    raise TypeError(f"cannot put {type(value).__name__} value {value!r} into generated code")


def fill(template: str, **values: LiteralValue) -> str:
    """Dedent `template` and replace each $name with the literal of values[name] (all required)."""
    return string.Template(textwrap.dedent(template)).substitute(
        {name: literal(value) for name, value in values.items()}
    )


def join_blocks(docstring: str, *blocks: str) -> str:
    """A module: its docstring, then top-level blocks two blank lines apart, one final newline."""
    body = "\n\n\n".join(block.strip("\n") for block in blocks if block.strip())
    return docstring.strip("\n") + "\n\n" + body + "\n"


@cache
def _environment() -> Any:
    import jinja2  # imported here: only `hwcheck config` renders templates

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=literal,
    )


def render(name: str, **context: Any) -> str:
    """The text of template `name` (e.g. "torch.py.jinja") with `context`; a missing name raises."""
    text: str = _environment().get_template(name).render(**context)
    return text
