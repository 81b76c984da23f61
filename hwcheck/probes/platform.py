"""Operating system and Python facts: what hwcheck runs on, WSL, containers."""

from __future__ import annotations

import os
import platform as _platform
import sys
from collections.abc import Mapping
from pathlib import Path

from hwcheck.probes import OK, ProbeResult


def probe(
    *,
    root: str | Path = "/",
    environ: Mapping[str, str] | None = None,
    system: str | None = None,
) -> ProbeResult:
    """The "os" and "python" facts of this machine."""
    root = Path(root)
    environ = os.environ if environ is None else environ
    system = system or _platform.system()
    linux = system == "Linux"
    os_facts = {
        "system": system,
        "release": _platform.release(),
        "machine": _platform.machine(),
        "wsl": linux and is_wsl(root, environ),
        "container": container(root, environ) if linux else None,
    }
    python = {
        "version": _platform.python_version(),
        "implementation": _platform.python_implementation(),
    }
    if sys.executable:  # empty in embedded interpreters
        python["executable"] = sys.executable
    return ProbeResult(OK, {"os": os_facts, "python": python})


def is_wsl(root: Path, environ: Mapping[str, str]) -> bool:
    """Linux under Windows Subsystem for Linux (WSL 1 or 2)."""
    # WSL sets these in every session; the kernel version string names Microsoft
    # ("...-Microsoft" in WSL 1, "...-microsoft-standard-WSL2"), the check the WSL team
    # suggests in github.com/microsoft/WSL/issues/423.
    if environ.get("WSL_DISTRO_NAME") or environ.get("WSL_INTEROP"):
        return True
    try:
        version = (root / "proc/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "microsoft" in version.lower()


def container(root: Path, environ: Mapping[str, str]) -> str | None:
    """The container runtime this process runs under, None when none is detected."""
    # Kubernetes first: its pods also carry their runtime's marker file.
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if (root / "run/.containerenv").exists():
        return "podman"
    if (root / ".dockerenv").exists():
        return "docker"
    # systemd's container interface: LXC, systemd-nspawn and others set $container.
    return environ.get("container") or None
