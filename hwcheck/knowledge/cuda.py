"""CUDA toolkits, their minimum drivers, and which GPUs compiled code runs on (nvidia.toml)."""

from __future__ import annotations

from functools import cache
from typing import Any

from hwcheck.base.numbers import whole_or_none
from hwcheck.base.tables import load
from hwcheck.base.versions import parse_version, version_key


@cache
def _cuda_toolkits() -> tuple[list[tuple[tuple[int, ...], dict[str, Any]]], dict[int, dict[str, Any]]]:
    table = load("nvidia")["cuda_drivers"]
    toolkits = sorted(
        ((version_key(row["version"]), row) for row in table["toolkit"]), key=lambda pair: pair[0]
    )
    compat = {row["cuda_major"]: row for row in table["minor_compatibility"]}
    return toolkits, compat


def cuda_driver_minimum(cuda_version: str) -> dict[str, Any] | None:
    """Minimum drivers for a CUDA toolkit ("12.4" is the GA release, "12.4.1" Update 1)."""
    parsed = parse_version(cuda_version) if isinstance(cuda_version, str) else None
    if not parsed or len(parsed) < 2:
        return None
    toolkits, compat = _cuda_toolkits()
    family = compat.get(parsed[0])
    if family is None:
        return None
    same_minor = [(version, row) for version, row in toolkits if version[:2] == parsed[:2]]
    if len(parsed) == 2:
        release = same_minor[0][1] if same_minor else None
    else:
        # An update the table does not list needs at least the newest listed one before it.
        release = next((row for version, row in reversed(same_minor) if version <= parsed[:3]), None)
    return {
        "cuda": ".".join(str(part) for part in parsed),
        "toolkit": release["label"] if release else None,
        "linux": release["linux"] if release else None,
        "windows": release.get("windows") if release else None,
        "minor_compat_linux": family["linux"],
        "minor_compat_windows": family["windows"],
    }


def newest_cuda_for_driver(driver_version: str | None, platform: str = "linux") -> str | None:
    """The newest CUDA toolkit ("12.2") whose every feature a driver version supports, or None.

    Compares against the toolkit driver NVIDIA lists per release (linux or windows); later
    toolkits of the same major may still run through minor version compatibility. NVIDIA lists no
    Windows driver for CUDA 13.x, so on windows the answer stops at 12.9.
    """
    driver = parse_version(driver_version) if isinstance(driver_version, str) else None
    if not driver or platform not in ("linux", "windows"):
        return None
    toolkits, _ = _cuda_toolkits()
    supported = [
        version
        for version, row in toolkits
        if (listed := parse_version(row.get(platform))) is not None and listed <= driver
    ]
    return f"{supported[-1][0]}.{supported[-1][1]}" if supported else None


def _architecture_number(name: str) -> tuple[int, int] | None:
    # "sm_86" / "compute_120" -> (8, 6) / (12, 0): the last digit is the minor version.
    digits = name.rpartition("_")[2]
    major, minor = whole_or_none(digits[:-1]), whole_or_none(digits[-1:])
    return (major, minor) if major is not None and minor is not None else None


def architectures_run(sm: list[str], ptx: list[str] | None, compute_capability: str | None) -> bool | None:
    """Whether code for `sm` (SASS) or `ptx` (PTX) runs on a GPU of `compute_capability`; None if unknown.

    SASS runs on its own major version at the same or a higher minor (sm_80 on CC 8.6); the
    driver JIT-compiles PTX for any GPU at or above the PTX's architecture.
    """
    parsed = parse_version(compute_capability)
    if parsed is None or len(parsed) < 2:
        return None
    gpu = (parsed[0], parsed[1])
    for name in sm:
        number = _architecture_number(name)
        if number and number[0] == gpu[0] and number[1] <= gpu[1]:
            return True
    return any((number := _architecture_number(name)) and number <= gpu for name in ptx or ())
