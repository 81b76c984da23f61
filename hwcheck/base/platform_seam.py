"""Which system hwcheck runs on, and each POSIX-only operation with a working path on each.

Linux, macOS and Windows differ in what a probe may read (/proc and /sys are Linux's), how a
child is put in a group of its own and killed with what it started (a POSIX session and
killpg; a Windows process group and CTRL_BREAK_EVENT or TerminateProcess), how a pipe is read
without blocking (select; a reader thread on Windows, whose pipes cannot be selected) and
whether there are user ids (no geteuid, pwd or chown on Windows). Every such call goes
through here. `use` sets the system the probes see, so tests replay macOS and Windows on
Linux; operations on real processes follow the system that really runs them.
"""

from __future__ import annotations

import os
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

LINUX, DARWIN, WINDOWS = "linux", "darwin", "win32"
SYSTEMS = (LINUX, DARWIN, WINDOWS)
# Windows' value of subprocess.CREATE_NEW_PROCESS_GROUP (WinBase.h), absent from subprocess elsewhere.
CREATE_NEW_PROCESS_GROUP = 0x00000200
_chosen: str | None = None  # set by `use`: the system the probes see instead of this one


def host_system() -> str:
    """The system this interpreter really runs on: linux, darwin or win32 (others as sys.platform)."""
    for name in SYSTEMS:
        if sys.platform.startswith(name):
            return name
    return sys.platform


def system() -> str:
    """The system the probes see: the one chosen with `use`, else the one this runs on."""
    return _chosen or host_system()


def use(name: str | None) -> None:
    """See `name` (linux, darwin, win32) as the system from now on; None: the real one again."""
    global _chosen
    if name is not None and name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}: one of {', '.join(SYSTEMS)}")
    _chosen = name


def kernel_files() -> bool:
    """Whether /proc and /sys describe this machine (Linux only; macOS and Windows have neither)."""
    return system() == LINUX


def kernel_name(real: str | None = None) -> str:
    """What platform.system() says on the system the probes see (Linux, Darwin, Windows); `real`,
    the real one's answer, unless `use` chose another."""
    if real is not None and _chosen is None:
        return real
    return {LINUX: "Linux", DARWIN: "Darwin", WINDOWS: "Windows"}.get(system(), system())


def new_group_options(name: str | None = None) -> dict[str, Any]:
    """Popen options that start a child leading a process group of its own on system `name`."""
    if (name or host_system()) == WINDOWS:
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def kill_group(process: Any, *, gently: bool = False, name: str | None = None) -> None:
    """End the child's group: SIGKILL (SIGTERM when `gently`) on POSIX; on Windows the child itself,
    with CTRL_BREAK_EVENT when `gently` (its group hears it), else TerminateProcess."""
    try:
        if (name or host_system()) == WINDOWS:
            if gently:
                import signal

                process.send_signal(getattr(signal, "CTRL_BREAK_EVENT", 1))
            else:
                process.kill()
            return
        import signal

        os.killpg(process.pid, signal.SIGTERM if gently else signal.SIGKILL)
    except (OSError, ValueError):
        pass  # the group is gone, or the child left it: the caller's kill of the child still reaches it


def selectable_pipes(name: str | None = None) -> bool:
    """Whether pipes can be waited on with select (POSIX); Windows reads them in threads."""
    return (name or host_system()) != WINDOWS


def read_in_threads(
    pipes: tuple[IO[bytes], IO[bytes]],
    deadline: float,
    cap: int,
    exited: Callable[[], bool],
    chunk: int = 64 * 1024,
    poll: float = 0.05,
) -> tuple[str | None, bytes, bytes]:
    """Read two pipes to their end in reader threads: (None, out, err), or ("deadline" | "cap", ...).

    Stops early once the child has exited and nothing more came within `poll` seconds (what it
    started may still hold the pipes open). The threads are daemons: the caller's kill closes
    the pipes and ends them.
    """
    import queue

    arrived: queue.Queue[tuple[int, bytes]] = queue.Queue()

    def pump(index: int, pipe: IO[bytes]) -> None:
        try:
            while data := os.read(pipe.fileno(), chunk):
                arrived.put((index, data))
        except (OSError, ValueError):
            pass
        arrived.put((index, b""))

    for index, pipe in enumerate(pipes):
        threading.Thread(target=pump, args=(index, pipe), daemon=True).start()
    chunks: tuple[list[bytes], list[bytes]] = ([], [])
    open_pipes, total, stop = 2, 0, None
    while open_pipes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stop = "deadline"
            break
        try:
            index, data = arrived.get(timeout=min(remaining, poll))
        except queue.Empty:
            if exited():
                break
            continue
        if not data:
            open_pipes -= 1
            continue
        chunks[index].append(data)
        total += len(data)
        if total > cap:
            stop = "cap"
            break
    return stop, b"".join(chunks[0]), b"".join(chunks[1])


def effective_ids() -> tuple[int, int] | None:
    """This process's effective user and group ids; None where there are none (Windows)."""
    if not hasattr(os, "geteuid") or system() == WINDOWS:
        return None
    return os.geteuid(), os.getegid()


def give_to(path: str, uid: int, gid: int) -> None:
    """chown `path` where owners exist; elsewhere (Windows) nothing to do. Errors are ignored."""
    if hasattr(os, "chown") and system() != WINDOWS:
        try:
            os.chown(path, uid, gid)
        except OSError:
            pass


def password_home() -> str | None:
    """This user's home from the password database; None where there is none (Windows) or no entry."""
    if system() == WINDOWS or not hasattr(os, "geteuid"):
        return None
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return None


def host_name() -> str:
    """This machine's host name: uname's node name on POSIX (no socket import), gethostname elsewhere."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def utf8_when_redirected(streams: tuple[Any, ...], name: str | None = None) -> None:
    """On Windows, write redirected output as UTF-8: the ANSI code page it defaults to lacks
    characters hwcheck prints (the status marks, names from outside). A console already takes any."""
    if (name or host_system()) != WINDOWS:
        return
    for stream in streams:
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure") and not stream.isatty():
            try:
                stream.reconfigure(encoding="utf-8")
            except (OSError, ValueError):
                pass  # already written to in another encoding: left as it is
