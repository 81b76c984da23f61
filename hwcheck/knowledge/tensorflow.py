"""TensorFlow's tested build configurations and GPU kernels: rules/knowledge/tensorflow.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version, version_key
from hwcheck.knowledge.cuda import KernelBuild, kernel_deviations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@cache
def _tensorflow_builds() -> dict[str, dict[str, Any]]:
    rows = load("tensorflow")["build"]
    return {release: row for row in rows if (release := major_minor(row["version"])) is not None}


def _python_versions(tested_range: str) -> list[str]:
    # "3.9-3.12" -> ["3.9", "3.10", "3.11", "3.12"]
    low, _, high = tested_range.partition("-")
    low_parts, high_parts = parse_version(low), parse_version(high)
    if not low_parts or not high_parts or low_parts[0] != high_parts[0] or len(low_parts) < 2:
        return [tested_range]
    return [f"{low_parts[0]}.{minor}" for minor in range(low_parts[1], high_parts[1] + 1)]


def tensorflow_build(version: str) -> dict[str, Any] | None:
    """TensorFlow's tested Linux GPU configuration for a release ("2.16.1" matches 2.16.x)."""
    release = major_minor(version) if isinstance(version, str) else None
    row = _tensorflow_builds().get(release) if release is not None else None
    if row is None:
        return None
    table = load("tensorflow")
    parsed = version_key(row["version"])
    return {
        "version": row["version"],
        "cuda": row["cuda"],
        "cudnn": row["cudnn"],
        "python": _python_versions(row["python"]),
        "python_range": row["python"],
        "compiler": row["compiler"],
        "build_tools": row["build_tools"],
        "keras": 3 if parsed >= version_key(table["keras"]["keras3_from"]) else 2,
        "windows_native_gpu": parsed[:2] <= version_key(table["windows"]["last_native_gpu"]),
        "windows_gpu": dict(row["windows_gpu"]) if "windows_gpu" in row else None,
    }


def tensorflow_cpu_release(version: str | None) -> dict[str, Any] | None:
    """The x86-64 instructions an official release's wheels need beyond the rest ([[cpu.x86_64.release]]).

    None for a release built like the others (AVX alone, [cpu.x86_64] requires); a local build
    ("2.4.0+local") is the user's own and matches no row.
    """
    if not isinstance(version, str):
        return None
    rows = load("tensorflow")["cpu"]["x86_64"].get("release", [])
    row = next((row for row in rows if row["version"] == version), None)
    return dict(row) if row is not None else None


def newest_tensorflow_for_cuda(cuda_version: str | None) -> str | None:
    """The newest TensorFlow release built for a CUDA of `cuda_version`'s major version or older.

    A driver runs any CUDA of its own major version through minor version
    compatibility, so this is the newest release an old driver can still run.
    """
    supported = parse_version(cuda_version)
    if supported is None:
        return None
    runnable = [
        row["version"] for row in load("tensorflow")["build"] if version_key(row["cuda"])[:1] <= supported[:1]
    ]
    return max(runnable, key=version_key, default=None)


def tensorflow_gpu_bfloat16_slow(version: str | None) -> str | None:
    """Why mixed_bfloat16 is slow on GPUs in TensorFlow `version` (the table's evidence), or None."""
    table = load("tensorflow").get("gpu_bfloat16")
    release = parse_version(major_minor(version))
    if not table or release is None or not table.get("unsupported_through"):
        return None
    if release > version_key(table["unsupported_through"]):
        return None
    return "; ".join(str(item) for item in table.get("evidence", ())) or "rules/knowledge/tensorflow.toml"


def tensorflow_kernels(
    version: str | None, arch_list: list[str] | None = None, cuda: str | None = None
) -> KernelBuild:
    """The SASS and PTX architectures a TensorFlow build carries, with its deviations and CUDA.

    First the installed wheel's own build_info list (`arch_list`: nightlies and local builds
    record theirs too), else the table's row for the release, else - for a release newer than
    every row - TensorFlow's build configuration of the newest row before it; `sm` is None
    for a release older than every row, where only the build's CUDA (`cuda`) bounds it.
    """
    release = major_minor(version) if isinstance(version, str) else None
    deviations = kernel_deviations(load("tensorflow").get("kernel_deviation", ()), release)
    if arch_list:
        sm = tuple(arch for arch in arch_list if arch.startswith("sm_"))
        ptx = tuple(arch for arch in arch_list if arch.startswith("compute_"))
        return KernelBuild(
            sm, ptx, f"the installed TensorFlow's build_info ({', '.join(arch_list)})", deviations, cuda
        )
    rows = _tensorflow_builds()
    row = (rows.get(release) if release is not None else None) or {}
    if "sm" in row:
        return KernelBuild(
            tuple(row["sm"]), tuple(row.get("ptx", ())), row.get("arch_source", ""), deviations, cuda
        )
    listed = sorted((version_key(key), key) for key, row in rows.items() if "sm" in row)
    parsed = version_key(release)
    if release is not None and listed and parsed > listed[-1][0]:
        newest = rows[listed[-1][1]]
        source = (
            f"TensorFlow's build configuration as of {listed[-1][1]} (TF_CUDA_COMPUTE_CAPABILITIES; "
            f"{release} has no row of its own): {newest.get('arch_source', '')}"
        )
        return KernelBuild(tuple(newest["sm"]), tuple(newest.get("ptx", ())), source, deviations, cuda)
    return KernelBuild(None, None, f"TensorFlow {version} (no architecture list recorded)", deviations, cuda)
