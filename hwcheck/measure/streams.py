"""Reading what a child process writes: bounded lines, a bounded tail, bounded answers, signal names."""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

# Of what a measuring process writes to stderr only the last STDERR_TAIL_BYTES are kept (for a
# failure's reason), read in chunks and never as whole lines: a script may write gigabytes there,
# on one line.
STDERR_TAIL_BYTES = 64 * 1024
STDERR_CHUNK_BYTES = 64 * 1024
# The longest answer line read on stdout (a result of MAX_STEPS step times and losses is ~4 MB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
# How often a wait for an answer checks that the child still runs: a child that died while a
# process it started holds its output open sends no end of file.
POLL_SECONDS = 0.2
# How long the readers may still bring what a child wrote before it ended.
DRAIN_SECONDS = 0.5


class AnswerError(ValueError):
    """A line from a child that is no answer: too long, too deep, not JSON, or holding NaN or Infinity."""


def parse_answer(line: bytes | str, *, limit: int = MAX_ANSWER_BYTES) -> Any:
    """One answer line's JSON value, bounded in size and depth, finite numbers only (else AnswerError).

    Parsed as every outside JSON document is (base/inputs.parse_json): nested at most
    MAX_NESTING levels, NaN, Infinity and numbers past a float's range refused.
    """
    from hwcheck.base.errors import InputError
    from hwcheck.base.inputs import parse_json

    if len(line) > limit:
        raise AnswerError(f"an answer of {len(line)} bytes, over the {limit}-byte bound")
    if not line.strip():  # read_lines puts an empty line for one over its bound
        raise AnswerError(f"an empty answer, or one over the {limit}-byte bound")
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        return parse_json(text, "the answer")
    except InputError as error:
        raise AnswerError(error.problem) from None


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


class Tail:
    """The last `size` bytes a stream carried, read in chunks by `read` (a reader thread's target)."""

    def __init__(self, size: int = STDERR_TAIL_BYTES) -> None:
        self.size = size
        self.kept = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def read(self, stream: Any) -> None:
        """Read `stream` to its end, keeping only its last `size` bytes."""
        read = getattr(stream, "read1", None) or stream.read
        try:
            while True:
                chunk = read(STDERR_CHUNK_BYTES)
                if not chunk:
                    break
                with self._lock:
                    self.total += len(chunk)
                    self.kept += chunk
                    if len(self.kept) > self.size:
                        del self.kept[: len(self.kept) - self.size]
        except (OSError, ValueError):
            pass

    def text(self, limit: int | None = None) -> str:
        """What is kept, decoded, its lines stripped and blank ones dropped; the last `limit` characters."""
        with self._lock:
            data, cut = bytes(self.kept), self.total > len(self.kept)
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
        if cut and lines:
            lines = lines[1:] or lines  # the first line kept is a fragment of a longer one
        text = "\n".join(line for line in lines if line)
        if limit is not None and len(text) > limit:
            text = "..." + text[-(limit - 3) :]
        return text

    def last_line(self) -> str:
        """The last non-blank line kept (a failure's reason), or an empty string."""
        lines = self.text().splitlines()
        return lines[-1] if lines else ""


def tail_reader(stream: Any, tail: Tail) -> threading.Thread:
    """A started daemon thread reading `stream` into `tail`."""
    thread = threading.Thread(target=tail.read, args=(stream,), daemon=True)
    thread.start()
    return thread


class Ended:
    """`next_line`'s answer when the child ended but its output stays open (a process it started holds it)."""


class TimedOut:
    """What `next_line` returns at the deadline."""


ENDED, TIMED_OUT = Ended(), TimedOut()


def next_line(
    lines: queue.Queue[bytes | None], process: Any, deadline: float
) -> bytes | None | Ended | TimedOut:
    """The child's next line on stdout; None at its end of file; ENDED or TIMED_OUT otherwise.

    The wait checks the process itself every POLL_SECONDS: once it has ended, its output gets
    DRAIN_SECONDS to bring what it wrote last, then its end is known from its exit status even
    when a process it started still holds the pipe open.
    """
    ended: float | None = None
    while True:
        try:
            return lines.get(timeout=max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))
        except queue.Empty:
            pass
        now = time.monotonic()
        if ended is None and process.poll() is not None:
            ended = now
        if ended is not None and now - ended >= DRAIN_SECONDS:
            return ENDED
        if now >= deadline:
            return TIMED_OUT


def signal_name(number: int) -> str:
    """SIGILL for 4: the name a signal number has here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
