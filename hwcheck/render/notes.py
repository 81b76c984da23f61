"""Notes on standard error ("hwcheck: warning: ..."), sized for the terminal like standard output."""

from __future__ import annotations

import sys


def note(text: str) -> None:
    """Print one note on standard error, wrapped under a two-space indent where stderr is sized.

    Standard error is wrapped by the same rule as standard output (COLUMNS, else the terminal):
    a log file or a pipe gets the note whole, on one line, so a grep still finds it.
    """
    from hwcheck.base.wrap import columns, wrap_text

    width = columns(sys.stderr)
    lines = wrap_text(text, width, indent="  ", first="") if width else [text]
    print("\n".join(lines), file=sys.stderr)
