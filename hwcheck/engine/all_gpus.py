"""The vendor-neutral `gpus.*` variables: every GPU the process will see, of any vendor.

`gpu.*` is NVIDIA's namespace (as `amd.*`, `intel.*` and `apple.*` are the others'); `gpus.*`
sums them up for rules that ask about the machine's GPUs whatever their maker. The summary is
computed by `variables` from a list of plain per-GPU records, so where those records come from
(today the vendor namespaces, through `from_context`) can change without touching it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MIB_PER_GIB = 1024


def variables(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The `gpus` namespace from per-GPU records (vendor, name, memory_mib, unified, bf16, fp16, fp8).

    memory_mib and the three precisions are None where unknown; a precision is True when the
    GPU's matrix units run it at full rate. An `all_*` is null when no GPU says false and one
    does not know; `memory_mib_min` is the lowest memory read (null when none was).
    """
    memories = [gpu["memory_mib"] for gpu in gpus if gpu.get("memory_mib")]
    return {
        "count": len(gpus),
        "vendors": sorted({gpu["vendor"] for gpu in gpus}),
        "names": [gpu["name"] for gpu in gpus],
        "memory_mib_min": min(memories) if memories else None,
        "memory_known": bool(gpus) and len(memories) == len(gpus),
        "unified": any(gpu.get("unified") for gpu in gpus),
        "all_bf16": _every(gpus, "bf16"),
        "all_fp16": _every(gpus, "fp16"),
        "all_fp8": _every(gpus, "fp8"),
    }


def _every(gpus: list[dict[str, Any]], feature: str) -> bool | None:
    """Three-valued all(): False when one GPU lacks it, None when one is unknown, else True."""
    if not gpus:
        return False
    values = [gpu.get(feature) for gpu in gpus]
    if False in values:
        return False
    return None if None in values else True


def from_context(context: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-GPU records read from the vendor namespaces (gpu, amd, intel, apple) of a built context.

    The namespaces summarise their GPUs: each GPU gets its vendor's every-GPU features, unknown
    where the vendor's table could not place them, and its vendor's lowest memory.
    """
    nvidia, amd, intel, apple = context["gpu"], context["amd"], context["intel"], context["apple"]
    nvidia_known = bool(nvidia["cc_known"])
    records = [
        _record(
            "nvidia",
            name,
            nvidia["memory_mib_min"],
            nvidia["jetson"],
            nvidia_known,
            nvidia["bf16"],
            nvidia["tensor_cores"],
            nvidia["fp8"],
        )
        for name in nvidia["names"]
    ]
    records += [
        _record(
            "amd",
            name,
            amd["memory_mib_min"],
            False,
            bool(amd["known"]),
            amd["bf16"],
            amd["fp16"],
            amd["fp8"],
        )
        for name in amd["names"]
    ]
    # Intel's table knows XMX engines (bfloat16 and float16 at full rate), not FP8.
    records += [
        {**_record("intel", name, 0, False, True, intel["xmx"], intel["xmx"], False), "fp8": None}
        for name in intel["names"]
    ]
    if apple["present"]:
        memory = apple["memory_gib"] * MIB_PER_GIB
        records.append(_record("apple", apple["chip"] or "Apple GPU", memory, True, False, None, None, None))
    return records


def _record(
    vendor: str, name: str, memory_mib: int, unified: bool, known: bool, bf16: Any, fp16: Any, fp8: Any
) -> dict[str, Any]:
    return {
        "vendor": vendor,
        "name": name,
        "memory_mib": memory_mib or None,
        "unified": unified,
        "bf16": bool(bf16) if known else None,
        "fp16": bool(fp16) if known else None,
        "fp8": bool(fp8) if known else None,
    }
