"""Where rich output goes: a terminal gets its width and colours, a pipe or file plain lines."""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from hwcheck.base.wrap import columns

# Spaces at the end of a line, before any colour codes that close it.
TRAILING_SPACES = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)
# Wide enough that no line of a report is wrapped: a pipe or file gets each line whole.
UNWRAPPED = 100_000


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal; FORCE_COLOR (non-empty) says it is one, as force-color.org asks."""
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream: TextIO) -> bool:
    """Colour on a terminal or under FORCE_COLOR, never under NO_COLOR (no-color.org) or in a pipe."""
    return not os.environ.get("NO_COLOR") and is_terminal(stream)


@contextmanager
def output(stream: TextIO | None = None) -> Iterator[Any]:
    """A rich Console whose text reaches `stream` (stdout) when the block ends, without trailing spaces.

    rich pads table cells to the full width and wraps at 80 columns when it cannot see a
    terminal; text read by a pager, grep or a diff wants neither.
    """
    from rich.console import Console

    stream = stream or sys.stdout
    colour = wants_colour(stream)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=columns(stream) or UNWRAPPED,
        force_terminal=colour,
        no_color=not colour,
        color_system="auto" if colour else None,
        highlight=False,
        soft_wrap=False,
    )
    yield console
    stream.write(TRAILING_SPACES.sub(r"\1", buffer.getvalue()))
    stream.flush()
