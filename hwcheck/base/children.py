"""Every child process hwcheck starts, owned: its own process group, killed with it when hwcheck ends.

nvcc and the NVML query start through `spawn_captured`, the bench's measuring processes through
`spawn`: each child
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
import time

from hwcheck.base import platform_seam

TYPE_CHECKING = False
if TYPE_CHECKING:  # subprocess is imported when the bench starts a child: the CLI loads this module early
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeAlias

    Child: TypeAlias = "subprocess.Popen[bytes] | Captured"

# Signals that end hwcheck; SIGHUP is absent on Windows.
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_running: set[Child] = set()
_lock = threading.Lock()
_closed = False  # set at interpreter exit: no child may start after the last kill
# A signal that arrived while the main thread was between starting a child and registering
# it: raised once the child is registered, so it cannot be orphaned.
_starting = 0
_pending: list[int] = []


def spawn(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start `argv` (Popen `options`) as the leader of a new process group, registered until `release`."""
    import subprocess

    return _registered(lambda: subprocess.Popen(list(argv), **platform_seam.new_group_options(), **options))


def spawn_captured(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
    """Start `argv` as `spawn` does, its stdin on /dev/null and its stdout and stderr on pipes."""
    if not hasattr(os, "posix_spawn"):
        import subprocess

        pipe, null = subprocess.PIPE, subprocess.DEVNULL
        return spawn(argv, stdin=null, stdout=pipe, stderr=pipe, env=None if env is None else dict(env))
    return _registered(lambda: Captured(argv, env))


def _registered(start: Callable[[], Child]) -> Any:
    global _starting
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _closed:
            raise OSError("the interpreter is exiting")
        if main:
            _starting += 1
        try:
            process = start()
            _running.add(process)
        finally:
            if main:
                _starting -= 1
    if main and _pending:
        _raise_for(_pending.pop())
    return process


class Captured:
    """A child started by os.posix_spawn, stdin on /dev/null, stdout and stderr on pipes.

    The part of subprocess.Popen that the probes use (pid, stdout, stderr, poll, wait, kill,
    returncode) without importing subprocess, which costs doctor ~5 ms whenever it asks nvcc.
    Started as Popen(start_new_session=True) starts a child: in a new session, with SIGPIPE
    and SIGXFSZ (which Python ignores) back at their defaults.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self.returncode: int | None = None
        environment = os.environ if env is None else env
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            self.pid = os.posix_spawn(
                _program(argv[0], environment),
                list(argv),
                environment,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_write, 1),
                    (os.POSIX_SPAWN_DUP2, err_write, 2),
                ],
                setsid=True,
                setsigdef=[getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)],
            )
        except BaseException:
            os.close(out_read)
            os.close(err_read)
            raise
        finally:
            os.close(out_write)
            os.close(err_write)
        self.stdout = open(out_read, "rb", buffering=0)  # noqa: SIM115  # closed by its owner, as Popen's
        self.stderr = open(err_read, "rb", buffering=0)  # noqa: SIM115

    def poll(self) -> int | None:
        """The exit status (minus the signal that killed it) once the child has ended, reaping it."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0  # reaped elsewhere: the status is lost, as Popen assumes
            else:
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Reap the child, waiting at most `timeout` seconds (None when it is still running then)."""
        if timeout is None:
            while self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    self.returncode = 0
                else:
                    self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        deadline, pause = time.monotonic() + timeout, 0.0005
        while self.poll() is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.05)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the child, unless it has been reaped (its pid may be another's by then)."""
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def _program(name: str, environment: Mapping[str, str]) -> str:
    # A bare name is looked up on the PATH of the child's environment, as Popen looks it up.
    if os.sep in name or (os.altsep and os.altsep in name):
        return name
    for directory in os.get_exec_path(dict(environment)):
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return name  # not found: posix_spawn says so (FileNotFoundError), as Popen would


def kill(process: Child) -> None:
    """SIGKILL the child and every process in its group (a no-op once they are gone)."""
    platform_seam.kill_group(process)
    try:
        process.kill()
    except OSError:
        pass


def release(process: Child, wait: float | None = None) -> None:
    """Kill the child's group, reap the child (waiting at most `wait` seconds) and forget it."""
    kill(process)
    if isinstance(process, Captured):
        process.wait(wait)
    else:
        import subprocess

        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            pass
    with _lock:
        _running.discard(process)


def stop(process: Child, grace: float) -> None:
    """Let the child exit for `grace` seconds, then SIGTERM its group, then SIGKILL it after `grace` more.

    Reaps the child and forgets it, as `release`: a child that ignores SIGTERM costs 2 x `grace`.
    """
    if _exited(process, grace):
        release(process, 0)
        return
    platform_seam.kill_group(process, gently=True)
    _exited(process, grace)
    release(process, 5.0)


def _exited(process: Child, wait: float) -> bool:
    if isinstance(process, Captured):
        return process.wait(wait) is not None
    import subprocess

    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        return False
    return True


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
