"""Operating system and Python facts: what hwcheck runs on, WSL, containers."""

from __future__ import annotations

import os
import re
import sys

from hwcheck.base import platform_seam
from hwcheck.base.inputs import joined, plain_path, read_head
from hwcheck.probes.result import OK, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

# platform.python_implementation()'s spelling of sys.implementation.name.
IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalVM", "ironpython": "IronPython"}


class _Uname:
    __slots__ = ("system", "release", "machine")

    def __init__(self, system: str, release: str, machine: str) -> None:
        self.system, self.release, self.machine = system, release, machine


def _uname() -> _Uname:
    # The platform module costs doctor ~2 ms to import; os.uname says the same on POSIX.
    if hasattr(os, "uname"):
        uname = os.uname()
        return _Uname(uname.sysname, uname.release, uname.machine)
    import platform

    return _Uname(platform.system(), platform.release(), platform.machine())


def probe(
    *,
    root: str | Path = "/",
    environ: Mapping[str, str] | None = None,
    system: str | None = None,
) -> ProbeResult:
    """The "os" and "python" facts of this machine."""
    root = plain_path(root)
    environ = os.environ if environ is None else environ
    uname = _uname()
    system = system or platform_seam.kernel_name(uname.system)
    linux = system == "Linux"
    os_facts = {
        "system": system,
        "release": uname.release,
        "machine": uname.machine,
        "wsl": linux and is_wsl(root, environ),
        "container": container(root, environ) if linux else None,
    }
    if linux:
        os_facts["kernel"] = kernel_version(uname.release)
        os_facts["glibc"] = glibc_version()
    python = {
        "version": ".".join(str(part) for part in sys.version_info[:3]),
        "implementation": IMPLEMENTATIONS.get(sys.implementation.name, sys.implementation.name),
    }
    if sys.executable:  # empty in embedded interpreters
        python["executable"] = sys.executable
    facts = {"os": os_facts, "python": python}
    if linux:
        from hwcheck.probes import memory

        facts["memory"] = memory.read(root)
    return ProbeResult(OK, facts)


def kernel_version(release: str) -> str | None:
    """The leading numbers of a Linux release ("5.15.0-105-generic" -> "5.15.0"); None when it has none."""
    match = re.match(r"[0-9]{1,4}(?:\.[0-9]{1,6}){1,3}", release or "")
    return match.group() if match else None


def glibc_version() -> str | None:
    """The GNU C library's version ("2.35"), "" under another C library (musl), None when unreadable."""
    # confstr asks the C library itself: no program runs, and it answers for this process.
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        return ""  # the name is unknown to this C library: not glibc
    if not text:
        return ""
    match = re.fullmatch(r"glibc ([0-9]{1,4}(?:\.[0-9]{1,6}){1,3})", text.strip()[:64])
    return match.group(1) if match else None


def is_wsl(root: str | os.PathLike[str], environ: Mapping[str, str]) -> bool:
    """Linux under Windows Subsystem for Linux (WSL 1 or 2)."""
    # WSL sets these in every session; the kernel version string names Microsoft
    # ("...-Microsoft" in WSL 1, "...-microsoft-standard-WSL2"), the check the WSL team
    # suggests in github.com/microsoft/WSL/issues/423.
    if environ.get("WSL_DISTRO_NAME") or environ.get("WSL_INTEROP"):
        return True
    try:
        version = read_head(joined(root, "proc/version"), 64 * 1024).decode("utf-8", "replace")
    except OSError:
        return False
    return "microsoft" in version.lower()


def container(root: str | os.PathLike[str], environ: Mapping[str, str]) -> str | None:
    """The container runtime this process runs under, None when none is detected."""
    # Kubernetes first: its pods also carry their runtime's marker file.
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if os.path.exists(joined(root, "run/.containerenv")):
        return "podman"
    if os.path.exists(joined(root, ".dockerenv")):
        return "docker"
    # systemd's container interface: LXC, systemd-nspawn and others set $container.
    return environ.get("container") or None
