"""Every child process hwcheck starts, owned: its own process group, killed with it when hwcheck ends.

nvcc, the NVML query and the bench's measuring processes all start through `spawn`: each child
leads a new session (so one killpg reaches whatever it started, and a terminal's Ctrl-C reaches
only hwcheck), and is registered until `release` reaps it. Whatever way hwcheck ends, the
registered groups are killed: at the deadline by their owner, at a normal exit or an error by
atexit, and at SIGINT, SIGTERM or SIGHUP by the handlers the command line installs
(`install_signal_handlers`), which kill first and then unwind, so no finally block waits on a
child and no partial output file is left (the safe writer removes its temporary file).
"""

from __future__ import annotations

import atexit
import os
import signal
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess is imported when a child is started: the CLI loads this module early
    import subprocess
    from collections.abc import Sequence
    from typing import Any

# Signals that end hwcheck; SIGHUP is absent on Windows.
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_running: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()
_closed = False  # set at interpreter exit: no child may start after the last kill
# A signal that arrived while the main thread was between starting a child and registering
# it: raised once the child is registered, so it cannot be orphaned.
_starting = 0
_pending: list[int] = []


def spawn(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start `argv` (Popen `options`) as the leader of a new process group, registered until `release`."""
    global _starting
    import subprocess

    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _closed:
            raise OSError("the interpreter is exiting")
        if main:
            _starting += 1
        try:
            process = subprocess.Popen(list(argv), start_new_session=True, **options)
            _running.add(process)
        finally:
            if main:
                _starting -= 1
    if main and _pending:
        _raise_for(_pending.pop())
    return process


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and every process in its group (a no-op once they are gone)."""
    if hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass  # the group is gone, or the child left it: the kill below still reaches it
    try:
        process.kill()
    except OSError:
        pass


def release(process: subprocess.Popen[bytes], wait: float | None = None) -> None:
    """Kill the child's group, reap the child (waiting at most `wait` seconds) and forget it."""
    import subprocess

    kill(process)
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        pass
    with _lock:
        _running.discard(process)


def kill_all() -> None:
    """Kill every registered child with its group (safe in a signal handler: takes no lock)."""
    # tuple() of a set is one C call under the GIL: no thread changes it midway.
    for process in tuple(_running):
        kill(process)


def install_signal_handlers() -> dict[int, Any]:
    """On SIGINT, SIGTERM and SIGHUP: kill every child's group, then end hwcheck by unwinding.

    Returns the handlers replaced, for `restore_signal_handlers`."""
    replaced = {}
    for number in ENDING_SIGNALS:
        if signal.getsignal(number) is signal.SIG_IGN:
            continue  # started under nohup or with SIGINT ignored: keep it so
        replaced[number] = signal.signal(number, _on_signal)
    return replaced


def restore_signal_handlers(replaced: dict[int, Any]) -> None:
    """Put back the handlers install_signal_handlers replaced (hwcheck.cli.main called in-process)."""
    for number, handler in replaced.items():
        signal.signal(number, handler)


def _on_signal(number: int, frame: Any) -> None:
    kill_all()
    if _starting:
        _pending.append(number)  # a child is being started: raised once it is registered
        return
    _raise_for(number)


def _raise_for(number: int) -> None:
    if number == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + number)


def _kill_all_at_exit() -> None:
    # A probe thread abandoned at doctor's deadline may still own a child: it must not outlive us.
    global _closed
    with _lock:
        _closed = True
    kill_all()


atexit.register(_kill_all_at_exit)
