"""One question to a child process: a JSON job on stdin, one keyed answer line back, every read bounded.

`doctor --verify` and `fit --measure` ask their children this way. The child's end is known from
the process itself, not from its pipes (a process it started may hold them for as long as it
runs); its stderr is kept as a bounded tail; its answer is parsed as every outside JSON is.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any

from hwcheck.base import children
from hwcheck.base.records import NamedTuple
from hwcheck.measure.interpreter import child_argv, interpreter
from hwcheck.measure.streams import (
    ENDED,
    MAX_ANSWER_BYTES,
    TIMED_OUT,
    AnswerError,
    Tail,
    TimedOut,
    next_line,
    parse_answer,
    read_lines,
    signal_name,
    tail_reader,
)

# What a signal that ends a child usually means, said beside its name.
SIGNAL_MEANINGS = {
    "SIGILL": "illegal instruction",
    "SIGSEGV": "segmentation fault",
    "SIGKILL": "out of memory?",
    "SIGBUS": "bus error",
    "SIGABRT": "aborted",
}


class Asked(NamedTuple):
    """The child's answer under its key, or why there is none."""

    answer: dict[str, Any] | None
    outcome: str  # "answered", "timeout" or "error"
    reason: str  # why there is no answer; empty when answered
    signal: str | None  # the signal that ended the child, by name
    errors: Tail  # the end of its stderr


def ask(
    module: str, job: dict[str, Any], key: str, timeout: float, *, limit: int = MAX_ANSWER_BYTES
) -> Asked:
    """Run `module` in a child of the user's interpreter, send it `job`, read its `key` answer."""
    errors = Tail()  # the end of stderr, in bytes: never whole lines, however long
    try:
        process = children.spawn(
            child_argv(module), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as error:
        return Asked(
            None, "error", f"could not start {interpreter()}: {error.strerror or error}", None, errors
        )
    lines: queue.Queue[bytes | None] = queue.Queue()
    answer_reader = threading.Thread(
        target=read_lines, args=(process.stdout, lines.put), kwargs={"limit": limit}, daemon=True
    )
    answer_reader.start()
    readers = [answer_reader, tail_reader(process.stderr, errors)]
    try:
        assert process.stdin is not None
        try:
            process.stdin.write((json.dumps(job) + "\n").encode())
            process.stdin.close()
        except OSError:
            pass  # it died at once: its status says why
        found = answer_line(lines, process, time.monotonic() + timeout, key, limit=limit)
        if isinstance(found, TimedOut):
            return Asked(None, "timeout", f"no answer within {timeout:g} s", None, errors)
        try:
            process.wait(5.0)
        except subprocess.TimeoutExpired:
            pass
        if isinstance(found, dict):
            return Asked(found, "answered", "", None, errors)
        return ended(process.returncode, errors, found)
    finally:
        children.release(process, 5.0)
        for reader in readers:
            # Not waited for long: a process the child started may hold its pipes for as long as it runs.
            reader.join(0.1)


def answer_line(
    lines: queue.Queue[bytes | None],
    process: Any,
    deadline: float,
    key: str,
    *,
    limit: int = MAX_ANSWER_BYTES,
) -> dict[str, Any] | str | None | TimedOut:
    """The first answer under `key`, TIMED_OUT at the deadline, else None or why an answer was refused.

    An answer too long, too deep or holding a non-finite number is refused (streams.parse_answer).
    """
    refused = None
    while True:
        line = next_line(lines, process, deadline)
        if line is TIMED_OUT:
            return TIMED_OUT
        if line is None or line is ENDED:
            return refused
        assert isinstance(line, bytes)
        try:
            parsed = parse_answer(line, limit=limit)
        except AnswerError as error:
            refused = f"its answer was refused: {error}"
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get(key), dict):
            return dict(parsed[key])


def ended(code: int | None, errors: Tail, refused: str | None = None) -> Asked:
    """How a child that gave no answer ended: the signal that killed it, or its exit status."""
    if code is not None and code < 0:
        name = signal_name(-code)
        meaning = SIGNAL_MEANINGS.get(name)
        return Asked(None, "error", f"killed by {name}" + (f" ({meaning})" if meaning else ""), name, errors)
    if refused is not None:
        return Asked(None, "error", f"exited with status {code}; {refused}", None, errors)
    return Asked(None, "error", f"exited with status {code} without an answer", None, errors)
