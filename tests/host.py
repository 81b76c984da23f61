"""An independent reading of the machine the tests run on, for tests about "this machine".

Tests never remember the machine they were written on (the project moves between Intel
with AMX, AMD without it, and ARM, with and without a GPU). Instead they compare what
hwcheck reports with this second reading, done here without any hwcheck code, and the
`host` marker skips a test whose subject is absent, saying why:

    @pytest.mark.host("amx")          # runs only where /proc/cpuinfo lists amx_bf16
    @pytest.mark.host("no_nvidia_gpu", "tensorflow")
"""

from __future__ import annotations

import ctypes.util
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path


@cache
def cpuinfo_fields() -> dict[str, str]:
    """The first processor block of /proc/cpuinfo as {field: value}; empty off Linux."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


@cache
def cpu_flags() -> frozenset[str]:
    """The kernel's CPU flags (x86 `flags`, ARM `Features`), lower case."""
    fields = cpuinfo_fields()
    return frozenset((fields.get("flags") or fields.get("Features") or "").lower().split())


def cpu_arch() -> str:
    """The machine name the kernel reports (x86_64, aarch64, ...)."""
    return os.uname().machine


@cache
def nvml_library() -> str | None:
    """Where the loader finds libnvidia-ml, or None: the GPU probe cannot work without it."""
    return ctypes.util.find_library("nvidia-ml")


@cache
def nvidia_smi_gpus() -> int | None:
    """How many GPUs `nvidia-smi -L` lists; None when nvidia-smi is not there or fails."""
    command = shutil.which("nvidia-smi")
    if command is None:
        return None
    try:
        listed = subprocess.run([command, "-L"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def has_nvidia_gpu() -> bool:
    """Whether the driver here shows at least one NVIDIA GPU."""
    return nvml_library() is not None and bool(nvidia_smi_gpus())


@cache
def distribution_version(name: str) -> str | None:
    """The installed version of distribution `name`, read from its metadata."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# What a test can require of the host, with the reason shown when it is skipped.
REQUIREMENTS = {
    "linux": (lambda: sys.platform.startswith("linux"), "not Linux"),
    "proc_cpuinfo": (lambda: bool(cpuinfo_fields()), "no readable /proc/cpuinfo"),
    "x86": (lambda: cpu_arch() in ("x86_64", "i686", "i386"), "not an x86 CPU"),
    "amx": (lambda: "amx_bf16" in cpu_flags(), "this CPU has no AMX (no amx_bf16 in /proc/cpuinfo)"),
    "no_amx": (lambda: "amx_bf16" not in cpu_flags(), "this CPU has AMX"),
    "nvidia_gpu": (has_nvidia_gpu, "no NVIDIA GPU (no libnvidia-ml or nvidia-smi lists none)"),
    "no_nvidia_gpu": (lambda: nvml_library() is None, "an NVIDIA driver library is installed here"),
    "cuda_toolkit": (lambda: Path("/usr/local/cuda/include/cuda.h").is_file(), "no CUDA toolkit headers"),
    "root": (lambda: hasattr(os, "geteuid") and os.geteuid() == 0, "not running as root"),
    "tensorflow": (lambda: importlib.util.find_spec("tensorflow") is not None, "TensorFlow not installed"),
}


def unmet(requirements: tuple[str, ...]) -> str | None:
    """Why this host cannot run a test that needs `requirements`, or None when it can."""
    for requirement in requirements:
        if requirement not in REQUIREMENTS:
            raise ValueError(f"unknown host requirement {requirement!r}; known: {', '.join(REQUIREMENTS)}")
        available, reason = REQUIREMENTS[requirement]
        if not available():
            return reason
    return None
