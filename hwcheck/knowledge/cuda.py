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
    """The architectures a framework build carries, the CUDA it was built with, and its deviations.

    `sm` is None where no source lists the build's architectures; `ptx` None where no source
    says whether it carries PTX. `cuda` ("12.4") bounds both: a toolkit carries code only for
    the architectures it can target (nvidia.toml [cuda_targets]).
    """

    sm: tuple[str, ...] | None
    ptx: tuple[str, ...] | None
    source: str = ""
    deviations: tuple[KernelDeviation, ...] = ()
    cuda: str | None = None


class GpuKernels(NamedTuple):
    """How a build runs on one GPU, and why.

    `path`: "native" (a cubin runs), "ptx_jit" (the driver compiles its PTX), "none" (nothing
    can run), or "ptx_unknown" (no cubin can run; it runs only if the build ships PTX, and no
    source says whether it does).
    """

    path: Literal["native", "ptx_jit", "none", "ptx_unknown"]
    architecture: str  # the sm_XY or compute_XY that runs, "" when none does
    source: str  # the build's architecture list, the CUDA bound, or the deviation that decided
    deviation: bool  # a documented deviation, not the architecture lists, decided
    reason: str = ""  # when the CUDA version decided: what it cannot compile for

    @property
    def runs(self) -> bool:
        """Whether the build certainly runs on the GPU (a cubin, or PTX it ships)."""
        return self.path in ("native", "ptx_jit")


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


def gpu_kernels(
    build: KernelBuild, compute_capability: str | None, *, exact_cubin: bool = False
) -> GpuKernels | None:
    """Whether `build` runs on a GPU of `compute_capability` natively, through PTX JIT, or not at all.

    CUDA's rules: a cubin sm_XY runs on major X at minor Y or higher; PTX compute_XY is
    JIT-compiled for any GPU of X.Y or higher; a build carries code only for architectures its
    CUDA can target. The build's deviations override them. None when the capability is unknown,
    or neither the architecture lists nor the CUDA version decide. `exact_cubin`: a Jetson (Tegra)
    GPU runs only a cubin of its own X.Y (CUDA C++ Programming Guide, binary compatibility: 'supported
    only for the desktop. It is not supported for Tegra.'); PTX still JIT-compiles forward.
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
    jit_fails = next((d for d in applying if d.effect == "ptx_jit_fails"), None)
    if build.sm is None:
        return _derived_kernels(build, gpu, jit_fails)
    native = [
        (number, name)
        for name in build.sm
        if (number := _architecture_number(name))
        and number[0] == gpu[0]
        and (number[1] == gpu[1] if exact_cubin else number[1] <= gpu[1])
    ]
    if native:
        return GpuKernels("native", max(native)[1], build.source, deviation=False)
    if build.ptx is None:
        # PTX of a listed architecture at or below the GPU could be there; nobody says.
        older = [number for name in build.sm if (number := _architecture_number(name)) and number <= gpu]
        if older and not jit_fails:
            return GpuKernels("ptx_unknown", "", build.source, deviation=False)
        return GpuKernels("none", "", jit_fails.source if jit_fails else build.source, jit_fails is not None)
    return _jit(build.ptx, gpu, build.source, jit_fails)


def _jit(
    ptx: tuple[str, ...], gpu: tuple[int, int], source: str, jit_fails: KernelDeviation | None
) -> GpuKernels:
    jit = [(number, name) for name in ptx if (number := _architecture_number(name)) and number <= gpu]
    if jit and jit_fails:
        return GpuKernels("none", "", jit_fails.source, deviation=True)
    if jit:
        return GpuKernels("ptx_jit", max(jit)[1], source, deviation=False)
    return GpuKernels("none", "", source, deviation=False)


def _derived_kernels(
    build: KernelBuild, gpu: tuple[int, int], jit_fails: KernelDeviation | None
) -> GpuKernels | None:
    """No architecture list: what the build's CUDA version alone allows on the GPU (else None)."""
    cuda = parse_version(build.cuda)
    if cuda is None or len(cuda) < 2:
        return None
    toolkit = (cuda[0], cuda[1])
    rows = _cuda_targets()
    same_major = [row for row in rows if row[0][0] == gpu[0] and row[0][1] <= gpu[1]]
    if not same_major or any(_targets(row, toolkit) for row in same_major):
        return None  # a cubin for this GPU may be there (or the table does not know its architecture)
    first = min(row[1] for row in rows if row[0] == gpu) if any(row[0] == gpu for row in rows) else None
    why = f"CUDA {toolkit[0]}.{toolkit[1]} cannot compile for compute capability {gpu[0]}.{gpu[1]}" + (
        f" (first targeted by CUDA {first[0]}.{first[1]})" if first and toolkit < first else ""
    )
    table = "rules/knowledge/nvidia.toml [cuda_targets]"
    source = f"{build.source}; {table}" if build.source else table
    if build.ptx is not None:
        return _jit(build.ptx, gpu, source, jit_fails)._replace(reason=why)
    if jit_fails or not any(_targets(row, toolkit) for row in rows if row[0] <= gpu):
        if jit_fails:
            return GpuKernels("none", "", jit_fails.source, deviation=True)
        return GpuKernels("none", "", source, False, f"{why}, nor for any older architecture")
    return GpuKernels("ptx_unknown", "", source, False, why)


def cuda_targets(cuda_version: str | None, compute_capability: str | None) -> bool | None:
    """Whether a CUDA toolkit ("12.4") can compile for a compute capability; None when unknown."""
    cuda, gpu = parse_version(cuda_version), _capability(compute_capability)
    if cuda is None or len(cuda) < 2 or gpu is None:
        return None
    row = next((row for row in _cuda_targets() if row[0] == gpu), None)
    return _targets(row, (cuda[0], cuda[1])) if row else None


def cuda_lowest_capability(cuda_version: str | None) -> str | None:
    """The oldest compute capability a CUDA toolkit ("13.0") can compile for ("7.5"); None when unknown."""
    cuda = parse_version(cuda_version)
    if cuda is None or len(cuda) < 2:
        return None
    lowest = next((row[0] for row in _cuda_targets() if _targets(row, (cuda[0], cuda[1]))), None)
    return f"{lowest[0]}.{lowest[1]}" if lowest else None


@cache
def _cuda_targets() -> tuple[tuple[tuple[int, int], tuple[int, int], tuple[int, int] | None], ...]:
    rows = []
    for row in load("nvidia")["cuda_targets"]["target"]:
        capability, first = _capability(row["compute_capability"]), _capability(row["first_cuda"])
        last = _capability(row.get("last_cuda"))
        if capability and first:
            rows.append((capability, first, last))
    return tuple(sorted(rows))


def _targets(
    row: tuple[tuple[int, int], tuple[int, int], tuple[int, int] | None], toolkit: tuple[int, int]
) -> bool:
    return row[1] <= toolkit and (row[2] is None or toolkit <= row[2])


def _capability(text: str | None) -> tuple[int, int] | None:
    parsed = parse_version(text)
    return (parsed[0], parsed[1]) if parsed is not None and len(parsed) >= 2 else None


def _architecture_number(name: str) -> tuple[int, int] | None:
    # "sm_86" / "compute_120" -> (8, 6) / (12, 0): the last digit is the minor version.
    digits = name.rpartition("_")[2]
    major, minor = whole_or_none(digits[:-1]), whole_or_none(digits[-1:])
    return (major, minor) if major is not None and minor is not None else None
