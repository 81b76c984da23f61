"""Reading what a child process writes: bounded lines, kept text, signal names."""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable
from typing import Any

# Of each line a measuring process writes to stderr, the head is kept (the last STDERR_LINES of
# them, for a failure's reason) and the rest is read past: a script may write gigabytes there.
STDERR_LINE_BYTES = 1000
# The longest answer line read on stdout (a result of MAX_STEPS step times and losses is ~4 MB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def read_lines(
    stream: Any, put: Callable[[Any], None], *, limit: int = MAX_ANSWER_BYTES, keep_head: bool = False
) -> None:
    """Put each line of `stream`, reading at most `limit` bytes of it; None at the end.

    A longer line is read past in chunks, never held whole: its head is put when `keep_head`,
    else an empty line (which no answer is).
    """
    try:
        inside_long_line = False
        while True:
            line = stream.readline(1 << 16 if inside_long_line else limit)
            if not line:
                break
            whole = line.endswith(b"\n")
            if not inside_long_line:
                put(line if whole or keep_head else b"")
            inside_long_line = not whole
    except (OSError, ValueError):
        pass
    finally:
        put(None)


def keep_text(lines: deque[str]) -> Callable[[bytes | None], None]:
    """A `put` for read_lines that keeps each non-empty line, decoded, in `lines`."""

    def keep(line: bytes | None) -> None:
        if line is not None:
            text = line.decode("utf-8", "replace").strip()
            if text:
                lines.append(text)

    return keep


def signal_name(number: int) -> str:
    """SIGILL for 4: the name a signal number has here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
