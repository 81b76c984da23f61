"""The architecture lists read from the installed frameworks' own CUDA libraries (facts
`compiled_arches`, from hwcheck/probes/nvidia/builds.py), as the kernel checks take them.

A list read from the files is preferred over every table; one whose walk was cut short by a
bound (`complete` false) proves what it lists but not what it lacks, so it is not used.
"""

from __future__ import annotations

from hwcheck.facts import section
from hwcheck.knowledge import KernelBuild

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What the kernel reasons call each framework's libraries.
_LIBRARIES = {
    "torch": "the installed PyTorch's libtorch_cuda",
    "jax": "the installed jaxlib CUDA plugin",
    "tensorflow": "the installed TensorFlow's libraries",
}


def arch_list(facts: dict[str, Any], framework: str) -> list[str] | None:
    """The sm_XY and compute_XY targets a framework's libraries carry, or None when not read."""
    read = section(section(facts, "compiled_arches"), framework)
    if read.get("complete") is not True:
        return None
    sm = [a for a in _listed(read.get("sm")) if a.startswith("sm_")]
    ptx = [a for a in _listed(read.get("ptx")) if a.startswith("compute_")]
    return [*sm, *ptx] or None


def read_build(facts: dict[str, Any], framework: str, table: KernelBuild | None = None) -> KernelBuild | None:
    """The build as read from its files, keeping the table's deviations and CUDA; None when not read."""
    arches = arch_list(facts, framework)
    if arches is None:
        return None
    sm = tuple(a for a in arches if a.startswith("sm_"))
    ptx = tuple(a for a in arches if a.startswith("compute_"))
    source = f"{_LIBRARIES[framework]} fat binaries, read from the files ({' '.join(arches)})"
    return KernelBuild(sm, ptx, source, table.deviations if table else (), table.cuda if table else None)


def _listed(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
