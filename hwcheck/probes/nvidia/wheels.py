"""The pip distributions of NVIDIA's CUDA libraries and of JAX's CUDA plugins, by name.

The names live in rules/knowledge (nvidia.toml [pip_wheels], jax.toml [[cuda_major]]). The probes
sit below the knowledge layer, so they read those tables here, through base.tables.load;
hwcheck.knowledge re-exports these readers for the layers above.
"""

from __future__ import annotations

from functools import cache

from hwcheck.base.numbers import numbered
from hwcheck.base.tables import load


@cache
def nvidia_wheels() -> dict[str, tuple[str, str]]:
    """Library ("cudnn") -> NVIDIA's distribution of it ("nvidia-cudnn") and its folder under nvidia/."""
    rows = load("nvidia")["pip_wheels"]["library"]
    return {library: (str(row["name"]), str(row["module"])) for library, row in rows.items()}


def nvidia_wheel(library: str) -> str:
    """NVIDIA's pip distribution of a CUDA library ("cudnn" -> "nvidia-cudnn"; a -cuNN suffix may follow)."""
    return nvidia_wheels()[library][0]


def is_nvidia_wheel(name: str, library: str) -> bool:
    """Whether distribution `name` is NVIDIA's wheel of `library`: the name, or it with -cuNN."""
    package = nvidia_wheel(library)
    return name == package or numbered(name, f"{package}-cu")


@cache
def jax_cuda_plugins() -> tuple[tuple[int, str, str], ...]:
    """JAX's CUDA wheel families, newest CUDA first: (CUDA major, plugin distribution, PJRT distribution)."""
    rows = sorted(load("jax")["cuda_major"], key=lambda row: -int(row["cuda_major"]))
    return tuple((int(row["cuda_major"]), str(row["plugin"]), str(row["pjrt"])) for row in rows)
