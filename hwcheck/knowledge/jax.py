"""JAX's CUDA wheel families and their minimum compute capabilities: rules/knowledge/jax.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load
from hwcheck.base.versions import parse_version, version_key

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
