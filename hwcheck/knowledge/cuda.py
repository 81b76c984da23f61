"""CUDA toolkits and their drivers (nvidia.toml [cuda_drivers]), and which GPUs a framework build runs on."""

from __future__ import annotations

from functools import cache

from hwcheck.base.numbers import whole_or_none
from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Literal


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


class KernelDeviation(NamedTuple):
    """A documented exception to CUDA's rules for one build, for GPUs of a compute capability range.

    `effect` is "no_kernels" (the build runs nothing on them) or "ptx_jit_fails" (its PTX does
    not JIT-compile for them, so only SASS runs).
    """

    compute_capability_min: str
    compute_capability_max: str | None
    effect: Literal["no_kernels", "ptx_jit_fails"]
    source: str


class KernelBuild(NamedTuple):
    """The architectures a framework build carries and the deviations documented for it.

    `sm` is None where no source lists the build's architectures; `ptx` None where no source
    says whether it carries PTX (counted as none).
    """

    sm: tuple[str, ...] | None
    ptx: tuple[str, ...] | None
    source: str = ""
    deviations: tuple[KernelDeviation, ...] = ()


class GpuKernels(NamedTuple):
    """How a build runs on one GPU: `path` "native" (SASS), "ptx_jit" or "none", and why."""

    path: Literal["native", "ptx_jit", "none"]
    architecture: str  # the sm_XY or compute_XY that runs, "" when none does
    source: str  # the build's architecture list, or the deviation that decided
    deviation: bool  # a documented deviation, not the architecture lists, decided

    @property
    def runs(self) -> bool:
        """Whether the build runs on the GPU at all."""
        return self.path != "none"


def kernel_deviations(rows: Iterable[dict[str, Any]], release: str | None) -> tuple[KernelDeviation, ...]:
    """The `[[kernel_deviation]]` rows of a framework's table that cover `release` ("2.16.1" is 2.16)."""
    parsed = parse_version(major_minor(release))
    if parsed is None:
        return ()
    return tuple(
        KernelDeviation(
            row["compute_capability_min"], row.get("compute_capability_max"), row["effect"], row["source"]
        )
        for row in rows
        if version_key(row["release_from"]) <= parsed
        and ("release_through" not in row or parsed <= version_key(row["release_through"]))
    )


def gpu_kernels(build: KernelBuild, compute_capability: str | None) -> GpuKernels | None:
    """Whether `build` runs on a GPU of `compute_capability` natively, through PTX JIT, or not at all.

    CUDA's rules: a cubin sm_XY runs on major X at minor Y or higher; PTX compute_XY is
    JIT-compiled for any GPU of X.Y or higher. The build's deviations override them. None when
    the capability is unknown, or the build's architectures are and no deviation decides.
    """
    gpu = _capability(compute_capability)
    if gpu is None:
        return None
    applying = [
        deviation
        for deviation in build.deviations
        if (low := _capability(deviation.compute_capability_min)) is not None
        and low <= gpu
        and ((high := _capability(deviation.compute_capability_max)) is None or gpu <= high)
    ]
    for deviation in applying:
        if deviation.effect == "no_kernels":
            return GpuKernels("none", "", deviation.source, deviation=True)
    if build.sm is None:
        return None
    native = [
        (number, name)
        for name in build.sm
        if (number := _architecture_number(name)) and number[0] == gpu[0] and number[1] <= gpu[1]
    ]
    if native:
        return GpuKernels("native", max(native)[1], build.source, deviation=False)
    jit = [
        (number, name) for name in build.ptx or () if (number := _architecture_number(name)) and number <= gpu
    ]
    jit_fails = next((d for d in applying if d.effect == "ptx_jit_fails"), None)
    if jit and jit_fails:
        return GpuKernels("none", "", jit_fails.source, deviation=True)
    if jit:
        return GpuKernels("ptx_jit", max(jit)[1], build.source, deviation=False)
    return GpuKernels("none", "", build.source, deviation=False)


def _capability(text: str | None) -> tuple[int, int] | None:
    parsed = parse_version(text)
    return (parsed[0], parsed[1]) if parsed is not None and len(parsed) >= 2 else None


def _architecture_number(name: str) -> tuple[int, int] | None:
    # "sm_86" / "compute_120" -> (8, 6) / (12, 0): the last digit is the minor version.
    digits = name.rpartition("_")[2]
    major, minor = whole_or_none(digits[:-1]), whole_or_none(digits[-1:])
    return (major, minor) if major is not None and minor is not None else None
