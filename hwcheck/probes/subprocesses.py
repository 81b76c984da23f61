"""Runs a program under a deadline and an output cap, and kills everything it started.

Every probe that runs a program or native code that could hang, flood or crash (nvcc,
NVML) goes through `run` (or `start` then `Running.wait`): the child is started by
hwcheck.base.children in its own process group, so at the deadline, and whenever hwcheck
ends, SIGKILL reaches it and every process it started; its output is read in chunks up to
a cap, never buffered without bound.
"""

from __future__ import annotations

import os
import select
import signal
import time

from hwcheck.base import children, platform_seam
from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

OK, FAILED, SIGNALLED, TIMED_OUT, FLOODED, NOT_STARTED = (
    "ok",
    "failed",
    "signalled",
    "timed-out",
    "flooded",
    "not-started",
)
OUTPUT_CAP = 1024 * 1024
CHUNK = 64 * 1024
# How often a wait looks whether the child itself has exited while something it
# left behind still holds its output pipe open.
POLL_SECONDS = 0.05
ERROR_TAIL = 300  # characters of the child's stderr quoted in a reason


class Finished(NamedTuple):
    """How a child ended: a status above, what it printed on stdout, and (when not OK) a
    predicate for "<program> ...": "gave no answer within 2 s", "was killed by SIGSEGV"."""

    status: str
    output: str
    reason: str | None = None


class Running:
    """A started child; `wait` collects it."""

    def __init__(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.process = children.spawn_captured(argv, env)

    def wait(self, output_cap: int = OUTPUT_CAP) -> Finished:
        """Read the child's output until it exits, floods or reaches its deadline; reap it."""
        try:
            if platform_seam.selectable_pipes():
                status, output, errors = self._read_posix(output_cap)
            else:
                status, output, errors = self._read_elsewhere(output_cap)
        finally:
            self.close()
        returncode = self.process.returncode
        assert returncode is not None  # release() reaps the child without a time limit
        text = output.decode("utf-8", "replace")
        if status == TIMED_OUT:
            return Finished(TIMED_OUT, text, f"gave no answer within {self.timeout:g} s")
        if status == FLOODED:
            return Finished(FLOODED, text, f"printed more than {output_cap // 1024} KiB and was stopped")
        if returncode < 0:
            return Finished(SIGNALLED, text, f"was killed by {_signal_name(-returncode)}")
        if returncode > 0:
            last = _last_line(errors.decode("utf-8", "replace"))
            return Finished(FAILED, text, f"exited with status {returncode}" + (f": {last}" if last else ""))
        return Finished(OK, text)

    def kill(self) -> None:
        """SIGKILL the child and every process in its group (a no-op once they are gone)."""
        children.kill(self.process)

    def close(self) -> None:
        """Kill the child with its group, reap it and close its pipes (what `wait` ends with)."""
        children.release(self.process)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()

    def _read_posix(self, output_cap: int) -> tuple[str | None, bytes, bytes]:
        assert self.process.stdout is not None and self.process.stderr is not None
        out_fd, err_fd = self.process.stdout.fileno(), self.process.stderr.fileno()
        chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
        open_fds = [out_fd, err_fd]
        total = 0
        status = None
        pause = 0.0001
        while status is None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                status = TIMED_OUT
                break
            if not open_fds:
                # Both pipes closed: the child is exiting (or closed them and went on). It
                # mostly is, within a fraction of a millisecond: look again soon, then less often.
                if self._exited():
                    break
                time.sleep(min(remaining, pause))
                pause = min(pause * 2, 0.002)
                continue
            ready, _, _ = select.select(open_fds, [], [], min(remaining, POLL_SECONDS))
            for fd in ready:
                data = os.read(fd, CHUNK)
                if not data:
                    open_fds.remove(fd)
                    continue
                chunks[fd].append(data)
                total += len(data)
                if total > output_cap:
                    status = FLOODED
            if not ready and self._exited():
                break  # the child is gone; what it started still holds the pipe: stop here
        return status, b"".join(chunks[out_fd]), b"".join(chunks[err_fd])

    def _read_elsewhere(self, output_cap: int) -> tuple[str | None, bytes, bytes]:
        # Windows pipes cannot be selected: reader threads (base/platform_seam) under the same cap.
        assert self.process.stdout is not None and self.process.stderr is not None
        pipes = (self.process.stdout, self.process.stderr)
        stop, output, errors = platform_seam.read_in_threads(
            pipes, self.deadline, output_cap, self._exited, CHUNK, POLL_SECONDS
        )
        return {"deadline": TIMED_OUT, "cap": FLOODED}.get(stop or ""), output, errors

    def _exited(self) -> bool:
        """Whether the child has exited, without reaping it, so its group id stays its own."""
        if not hasattr(os, "waitid"):
            return self.process.poll() is not None
        try:
            answer = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return answer is not None


def start(argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> Running:
    """Start `argv` in its own session with `timeout` seconds to finish; OSError if it cannot run."""
    return Running(argv, timeout, env)


def run(
    argv: Sequence[str],
    timeout: float,
    *,
    output_cap: int = OUTPUT_CAP,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run `argv` to the end, the deadline or the output cap, whichever comes first."""
    try:
        running = start(argv, timeout, env)
    except OSError as error:
        return Finished(NOT_STARTED, "", f"could not run: {error.strerror or error}")
    return running.wait(output_cap)


def kill_all() -> None:
    """Kill every child still running, with what it started (for a probe past its deadline)."""
    children.kill_all()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][-ERROR_TAIL:] if lines else ""
