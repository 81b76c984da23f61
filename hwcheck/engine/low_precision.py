"""recommendation.fp8.recipes: each low-precision recipe (FP8 delayed and current scaling, FP8
block scaling, MXFP8, NVFP4) on the GPUs the process sees, from rules/knowledge/low_precision.toml.

A recipe runs only where FP8 training does (recommendation.fp8, decided by the fp8_* derives of
rules/policy/policy.toml): where that is false or unknown, so is every recipe, for the same
reason. Where it runs, a recipe is available when every GPU's compute capability is one its row
supports, false when one is below its floor or one the row lists as unsupported, and unknown
(null) for a capability the table does not list.
"""

from __future__ import annotations

from hwcheck.base.versions import version_less
from hwcheck.knowledge.stacks import low_precision_recipes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def recipes(gpu: dict[str, Any], derived: dict[str, Any], fp8: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """recipe id -> {available, reason, source} for the gpu.* variables and the FP8 decision."""
    return {row["id"]: _recipe(row, gpu, derived, fp8) for row in low_precision_recipes()}


def _recipe(
    row: dict[str, Any], gpu: dict[str, Any], derived: dict[str, Any], fp8: dict[str, Any]
) -> dict[str, Any]:
    source = row["source"]
    if fp8.get("available") is not True:
        state = None if fp8.get("available") is None else False
        return {"available": state, "reason": str(fp8.get("reason") or ""), "source": source}
    capabilities = [cc for cc in gpu.get("capabilities") or [] if isinstance(cc, str)]
    label = row["label"]
    for cc in capabilities:
        names = _named(gpu, cc)
        if version_less(cc, row["min_cc"]):
            why = f"{label} needs compute capability {row['min_cc']} or higher; {names} has {cc}"
            return {"available": False, "reason": why, "source": source}
        if cc in row.get("unsupported", ()):
            why = f"{row['unsupported_reason']}; {names} has {cc}"
            return {"available": False, "reason": why, "source": source}
    unlisted = [cc for cc in capabilities if cc not in row["supported"]]
    if unlisted or not capabilities:
        listed = ", ".join(row["supported"])
        unread = ", ".join(unlisted) or "unknown"
        why = f"Transformer Engine lists {label} on compute capability {listed}, not on {unread}"
        return {"available": None, "reason": why, "source": source}
    cuda = derived.get("fp8_cuda")
    floor = row.get("min_cuda")
    if floor and isinstance(cuda, str) and version_less(cuda, floor):
        why = f"{label} needs CUDA {floor} or newer; the framework runs on CUDA {cuda}"
        return {"available": False, "reason": why, "source": source}
    why = f"every GPU runs {label} (compute capability {', '.join(capabilities)}; {row['api']})"
    return {"available": True, "reason": why, "source": source}


def _named(gpu: dict[str, Any], capability: str) -> str:
    """The GPUs of one compute capability, by their labels ("NVIDIA GeForce RTX 5090 (CC 12.0)")."""
    names = [name for name in gpu.get("models") or [] if f"(CC {capability})" in str(name)]
    return ", ".join(names) or f"a GPU of compute capability {capability}"
