"""The `intel` variables: the Intel GPUs, which of them train, and whether PyTorch can drive them.

Only lookups in rules/knowledge/intel.toml happen here; rules/policy/intel.toml decides.
"""

from __future__ import annotations

import re

from hwcheck import knowledge
from hwcheck.devices.record import Asked, Device, Plugin, counted, mebibytes, vendor_gpus
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A PyTorch wheel's local version tag names its variant: 2.5.1+cpu, 2.5.1+cu124, 2.7.0+xpu.
LOCAL_TAG = r"\+(cpu|cu[0-9]+|rocm[0-9.]+|xpu)$"


def intel_variables(facts: dict[str, Any]) -> dict[str, Any]:
    """The `intel` namespace (every key present; unknown values null, false or empty)."""
    gpus = vendor_gpus(facts, "intel")
    described = [(gpu, _family(gpu)) for gpu in gpus]
    bound, trainable = _trainable(described)
    unbound = [(gpu, f) for gpu, f in described if "driver" in gpu and not gpu["driver"] and f]
    torch = section(section(facts, "frameworks"), "torch")
    ipex = str(torch.get("ipex") or "")
    xpu_local = knowledge.intel_ipex()["xpu_local_version"]
    driver = section(facts, "intel_gpu_driver")
    native = knowledge.intel_torch()
    names = [_label(gpu, family) for gpu, family in trainable]
    families = sorted({family["label"] for _gpu, family in trainable})
    label = names[0] if len(names) == 1 else f"{len(names)} Intel GPUs ({', '.join(families)})"
    unbound_ids = sorted({str(gpu.get("pci_device_id") or "")[2:] for gpu, _family in unbound})
    return {
        "present": bool(gpus),
        "count": len(trainable),
        "names": names,
        "label": label if names else "",
        "families": families,
        "xmx": bool(trainable) and all(family.get("xmx") for _gpu, family in trainable),
        "without_xmx": sorted({_label(gpu, f) for gpu, f in trainable if not f.get("xmx")}),
        "unvalidated": sorted({_label(gpu, f) for gpu, f in trainable if not f.get("torch_xpu_validated")}),
        "unbound": sorted({_label(gpu, family) for gpu, family in unbound}),
        # i915.force_probe takes the device ids without 0x, separated by commas.
        "force_probe": ",".join(unbound_ids),
        "drivers": sorted({str(gpu["driver"]) for gpu, _family in bound if gpu.get("driver")}),
        # An XPU build names its SYCL toolchain in torch/version.py; IPEX's xpu builds end in +xpu.
        "torch_xpu": bool(torch.get("xpu"))
        or str(torch.get("version") or "").endswith("+" + xpu_local)
        or ipex.endswith("+" + xpu_local),
        # torch/version.py's xpu, or the wheel's local version tag (+cpu, +cu124, +xpu) names the variant.
        "torch_known": "xpu" in torch or bool(re.search(LOCAL_TAG, str(torch.get("version") or ""))),
        "ipex": ipex or None,
        "native_from": native["native_xpu_from"],
        "install": native["install"],
        "level_zero": driver.get("level_zero"),
        "opencl": driver.get("opencl"),
    }


def _family(gpu: dict[str, Any]) -> dict[str, Any]:
    # The PCI id names the family; a facts file from Windows may give only the driver's name.
    return (
        knowledge.intel_family(gpu.get("pci_device_id"))
        or knowledge.intel_family_by_name(gpu.get("name"))
        or {}
    )


def _label(gpu: dict[str, Any], family: dict[str, Any]) -> str:
    name = str(gpu.get("name") or "Intel GPU")
    architecture = family.get("architecture")
    return f"{name} ({architecture})" if architecture and architecture not in name else name


def _trainable(
    described: list[tuple[dict[str, Any], dict[str, Any]]],
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    """The GPUs a driver claims, and of those the ones that train."""
    # The probe writes driver null for a GPU no driver claims; a facts file that does not say
    # (collect_env's device list, a Windows machine) is taken as driven.
    bound = [(gpu, family) for gpu, family in described if gpu.get("driver") or "driver" not in gpu]
    # A GPU trains when PyTorch validates its family, or its family has XMX matrix engines (Flex).
    trainable = [(gpu, f) for gpu, f in bound if f.get("torch_xpu_validated") or f.get("xmx")]
    return bound, trainable


def variables(asked: Asked) -> dict[str, Any]:
    """The `intel` namespace."""
    return {"intel": intel_variables(asked.facts)}


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The Intel GPUs that train (XPU): a driver claims them and PyTorch validates or XMX runs them."""
    _bound, trainable = _trainable([(gpu, _family(gpu)) for gpu in vendor_gpus(facts, "intel")])
    return [
        Device(
            vendor="intel",
            plugin="intel",
            number=number,
            name=str(gpu.get("name") or "Intel GPU"),
            label=_label(gpu, family),
            memory_bytes=mebibytes(gpu.get("memory_mib")),
            family=family.get("architecture") or family.get("label"),
            runtime="xpu",
            # XMX engines multiply bfloat16 and float16; without them the family's speed is not known here.
            float16=True if family.get("xmx") else None,
            bfloat16=True if family.get("xmx") else None,
            # FP8 where the family's row says (intel.toml fp8, with its source); else unknown.
            fp8=family.get("fp8"),
            tf32=False,
            product_id=str(gpu["pci_device_id"]) if gpu.get("pci_device_id") else None,
        )
        for number, (gpu, family) in enumerate(trainable)
    ]


def doctor_row(facts: dict[str, Any]) -> str:
    """The intel row: each Intel GPU with its driver, and the Level Zero and compute runtimes."""
    gpus = vendor_gpus(facts, "intel")
    if not gpus:
        return ""
    described = []
    for gpu in gpus:
        details = [gpu["arch"]] if gpu.get("arch") else []
        details.append(f"driver {gpu['driver']}" if gpu.get("driver") else "no driver bound")
        described.append(f"{gpu.get('name')} ({', '.join(details)})")
    driver = section(facts, "intel_gpu_driver")
    labels = (("level_zero", "Level Zero"), ("opencl", "compute runtime"))
    versions = [f"{label} {driver[key]}" for key, label in labels if driver.get(key)]
    return ", ".join(counted(described)) + ("; " + ", ".join(versions) if versions else "")


PLUGIN = Plugin(
    name="intel", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="intel"
)
