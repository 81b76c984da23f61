"""JAX's CUDA wheel families and their minimum compute capabilities: rules/knowledge/jax.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load
from hwcheck.base.versions import parse_version, version_key
from hwcheck.knowledge.cuda import KernelBuild

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@cache
def _jax_majors() -> dict[int, dict[str, Any]]:
    return {int(row["cuda_major"]): row for row in load("jax")["cuda_major"]}


def jax_cuda(cuda_major: int | None) -> dict[str, Any] | None:
    """JAX's CUDA wheel family for a CUDA major version: plugin, install command, minimum CC and driver."""
    row = _jax_majors().get(cuda_major) if isinstance(cuda_major, int) else None
    return dict(row) if row else None


def jax_minimum_capability(jaxlib_version: str | None, cuda_major: int | None) -> str | None:
    """The lowest compute capability a jaxlib CUDA build runs on, from the table; None when unknown."""
    row = jax_cuda(cuda_major)
    if row:
        return str(row["minimum_compute_capability"])
    release = parse_version(jaxlib_version)
    floors = [
        (version_key(change["jaxlib"]), change["minimum_compute_capability"])
        for change in load("jax").get("change", ())
        if "minimum_compute_capability" in change
    ]
    reached = [floor for first, floor in sorted(floors) if release is not None and release >= first]
    return reached[-1] if reached else None


def jax_kernels(jaxlib_version: str | None, cuda: str | None) -> KernelBuild:
    """The architectures jaxlib's own CUDA kernels carry (jax.toml [[arch_policy]]), with its CUDA.

    The row of the build's CUDA major in force at the jaxlib release; `sm` None for a jaxlib
    older than every row or a CUDA major without rows (then only `cuda` bounds it, when it has
    a minor version).
    """
    cuda_major = (parse_version(cuda) or (None,))[0]
    release = parse_version(jaxlib_version)
    rows = sorted(
        (version_key(row["jaxlib_from"]), row)
        for row in load("jax").get("arch_policy", ())
        if cuda_major in row["cuda_majors"]
    )
    in_force = [row for first, row in rows if release is not None and first <= release]
    bound = cuda if cuda and len(version_key(cuda)) >= 2 else None
    if not in_force:
        return KernelBuild(None, None, f"jaxlib {jaxlib_version} (no architecture list recorded)", (), bound)
    row = in_force[-1]
    source = f"jaxlib's build policy for CUDA {cuda_major} from {row['jaxlib_from']}: {row['source']}"
    return KernelBuild(tuple(row["sm"]), tuple(row.get("ptx", ())), source, (), bound)
