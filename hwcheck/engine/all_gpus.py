"""The vendor-neutral `gpus.*` variables: every GPU the process will see, of any vendor.

`gpu.*` is NVIDIA's namespace (as `amd.*`, `intel.*` and `apple.*` are the others'); `gpus.*`
sums them up for rules that ask about the machine's GPUs whatever their maker. The summary is
computed by `variables` from a list of plain per-GPU records, made by `from_devices` from the
`Device` records every plug-in reports (hwcheck.devices.visible): a registered vendor's GPUs
count as the built-in vendors' do.
"""

from __future__ import annotations

from hwcheck.devices.record import MIB

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.devices import Device


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


def from_devices(found: list[Device]) -> list[dict[str, Any]]:
    """Per-GPU records from the devices the process sees (hwcheck.devices.visible), any plug-in's.

    TPU chips and other accelerators are not GPUs; a GPU is named as messages show it.
    """
    return [
        {
            "vendor": device.vendor,
            "name": device.label,
            "memory_mib": device.memory_bytes // MIB if device.memory_bytes else None,
            "unified": device.unified,
            "bf16": device.bfloat16,
            "fp16": device.float16,
            "fp8": device.fp8,
        }
        for device in found
        if device.kind == "gpu"
    ]
