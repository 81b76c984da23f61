"""PyTorch wheel variables: the CUDA variant, the GPUs it carries no kernels for, the wheel that does.

Reads rules/knowledge/torch.toml (never imports torch); what a missing kernel means is decided
by rules/policy/compatibility.toml.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import version_less

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(torch: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Extra `torch` variables: variant, arch list, GPUs without kernels and the install that fixes it."""
    version, cuda = torch.get("version"), torch.get("cuda")
    variant = knowledge.torch_variant(version, cuda) if cuda or version else None
    build = knowledge.torch_build(version, variant) if variant else None
    without = []
    for gpu in gpus:
        capability = gpu["compute_capability"]
        if not capability or not variant:
            continue
        if _no_kernels(version, variant, capability):
            without.append(gpu)
    fix = knowledge.torch_fix(version, [g["compute_capability"] for g in gpus if g["compute_capability"]])
    return {
        "variant": variant,
        "arch_list": " ".join(build["sm"] + (build["ptx"] or [])) if build else "",
        "gpus_without_kernels": sorted({gpu["label"] for gpu in without}),
        "missing_sm": sorted({_sm(gpu["compute_capability"]) for gpu in without}),
        "fix_install": fix["install"] if fix and without else None,
        "fix_variant": fix["variant"] if fix and without else None,
    }


def _no_kernels(version: str | None, variant: str, capability: str) -> bool:
    kernels = knowledge.gpu_kernels(knowledge.torch_kernels(version, variant), capability)
    if kernels is not None:
        return not kernels.runs
    if version:
        # An unlisted release: certain only for an architecture first carried by a later release.
        first = knowledge.torch_fix(None, [capability], oldest_first=True)
        oldest = knowledge.torch_oldest_release()
        listed = oldest is not None and not version_less(version, oldest)
        return first is not None and listed and version_less(version, first["version"])
    # Version unknown: only when no listed release of this variant runs the GPU.
    builds = knowledge.torch_builds_for(variant)
    return bool(builds) and not any(
        (kernels := knowledge.gpu_kernels(knowledge.torch_kernels(b["version"], variant), capability))
        and kernels.runs
        for b in builds
    )


def _sm(capability: str) -> str:
    major, _, minor = capability.partition(".")
    return f"sm_{major}{minor[:1] or '0'}"
