"""PyTorch wheel variables: the CUDA variant, the GPUs it carries no kernels for, the wheel that does.

Reads rules/knowledge/torch.toml and nvidia.toml [cuda_targets] (never imports torch); what a
missing kernel means is decided by rules/policy/compatibility.toml.
"""

from __future__ import annotations

import re

from hwcheck import knowledge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(
    torch: dict[str, Any],
    gpus: list[dict[str, Any]],
    read: knowledge.KernelBuild | None = None,
    *,
    aarch64: bool = False,
    tegra: bool = False,
) -> dict[str, Any]:
    """Extra `torch` variables: variant, arch list, GPUs without kernels and the install that fixes it.

    `read` is the build's architecture list read from its own libtorch_cuda (engine/compiled.py):
    when given, it decides instead of the tables. The tables list the x86_64 wheels: on an aarch64
    machine (`aarch64`) without a list read from the files, what they deny is unknown, not absent.
    On a Jetson (`tegra`) a cubin runs only on its own compute capability, and NVIDIA's JetPack
    builds (a local version tagged +...nvYY.MM) are made for its GPU.
    """
    version, cuda = torch.get("version"), torch.get("cuda")
    variant = knowledge.torch_variant(version, cuda) if cuda or version else None
    build = knowledge.torch_build(version, variant) if variant else None
    arch_list = " ".join(build["sm"] + (build["ptx"] or [])) if build else ""
    if read is not None:
        table = knowledge.torch_kernels(version, variant, cuda) if variant else None
        read = read._replace(deviations=table.deviations if table else (), cuda=table.cuda if table else cuda)
        arch_list = " ".join((*(read.sm or ()), *(read.ptx or ())))
    without: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    reasons: list[str] = []
    sources: list[str] = []
    for gpu in gpus:
        capability = gpu["compute_capability"]
        if not capability or not (variant or read):
            continue
        kernels = (
            knowledge.gpu_kernels(read, capability)
            if read
            else _kernels(version, str(variant), cuda, capability)
        )
        if kernels is None or kernels.path not in ("none", "ptx_unknown"):
            continue
        if (
            aarch64
            and read is None
            and kernels.path == "none"
            and not kernels.deviation
            and not kernels.reason
        ):
            kernels = kernels._replace(path="ptx_unknown", reason=_AARCH64_UNKNOWN.format(sm=_sm(capability)))
        (without if kernels.path == "none" else unknown).append(gpu)
        sources.append(kernels.source)
        reasons.append(_reason(kernels, capability, variant or "installed", arch_list, read))
    fix = knowledge.torch_fix(version, [g["compute_capability"] for g in gpus if g["compute_capability"]])
    return {
        "variant": variant,
        "local_build": knowledge.local_build(version),
        "arch_list": arch_list,
        "gpus_without_kernels": sorted({gpu["label"] for gpu in without}),
        "gpus_ptx_unknown": sorted({gpu["label"] for gpu in unknown}),
        "kernels_reason": "; ".join(dict.fromkeys(reasons)),
        "kernels_source": "; ".join(dict.fromkeys(sources)),
        "missing_sm": sorted({_sm(gpu["compute_capability"]) for gpu in without + unknown}),
        "fix_install": fix["install"] if fix and (without or unknown) else None,
        "fix_variant": fix["variant"] if fix and (without or unknown) else None,
    }


# rules/knowledge/torch.toml's notes: its architecture lists are the Linux x86_64 wheels'; the
# aarch64 wheels (and NVIDIA's JetPack builds) carry lists of their own.
_AARCH64_UNKNOWN = (
    "the architecture lists hwcheck has are the x86_64 wheels', which lack {sm}; the aarch64 builds carry "
    "lists of their own, and this one's could not be read from its libtorch_cuda"
)


def _jetpack_build(version: str | None) -> bool:
    """NVIDIA's PyTorch for JetPack: 2.5.0a0+872d972e41.nv24.08 (docs.nvidia.com, PyTorch for Jetson)."""
    return bool(re.search(r"\+[0-9a-z.]*\.nv[0-9]{2}\.[0-9]{2}$", str(version or "")))


def _kernels(
    version: str | None, variant: str, cuda: str | None, capability: str, *, exact_cubin: bool = False
) -> knowledge.GpuKernels | None:
    if not version:
        # Version unknown: certain when no release of this variant runs the GPU.
        builds = knowledge.torch_builds_for(variant)
        answers = [
            knowledge.gpu_kernels(
                knowledge.torch_kernels(b["version"], variant), capability, exact_cubin=exact_cubin
            )
            for b in builds
        ]
        if builds and all(k is not None and k.path == "none" for k in answers):
            return knowledge.GpuKernels("none", "", builds[-1]["source"], deviation=False)
    return knowledge.gpu_kernels(
        knowledge.torch_kernels(version, variant, cuda), capability, exact_cubin=exact_cubin
    )


def _reason(
    kernels: knowledge.GpuKernels,
    capability: str,
    variant: str,
    arch_list: str,
    read: knowledge.KernelBuild | None = None,
) -> str:
    """Why a build has no kernels (or maybe none) for a GPU, in one clause."""
    if kernels.reason:
        return kernels.reason
    if read is not None and not kernels.deviation:
        return f"{_sm(capability)} is not among the architectures of {read.source}"
    if kernels.deviation:
        return f"PyTorch's binaries carry no code for compute capability {capability} ({kernels.source})"
    unknown = kernels.path == "ptx_unknown"
    shipped = "it may ship PTX, which no source confirms" if unknown else "it ships no PTX"
    carried = f"the architectures the {variant} wheels carry ({arch_list})"
    cuda = knowledge.torch.variant_cuda(variant)
    beyond = (
        f" (CUDA {cuda} cannot compile for compute capability {capability} at all)"
        if knowledge.cuda_targets(cuda, capability) is False
        else ""
    )
    return f"{_sm(capability)} is not among {carried}{beyond}, and {shipped}"


def _sm(capability: str) -> str:
    major, _, minor = capability.partition(".")
    return f"sm_{major}{minor[:1] or '0'}"
