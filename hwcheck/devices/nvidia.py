"""NVIDIA's GPUs: discrete boards, MIG devices and the Jetson (Tegra) integrated GPU.

The GPUs a CUDA process sees (devices/cuda_visibility.py applies CUDA_VISIBLE_DEVICES and
kin), their compute capability and features from rules/knowledge/gpus.toml, the driver and
the Jetson's L4T release: the `gpu`, `visibility`, `pci`, `driver` and `tegra` namespaces, and
the GPUs' links, states and peer-to-peer in `node` (devices/nvidia_node.py).
"""

from __future__ import annotations

import hwcheck.devices.cuda_visibility as cuda_visibility
import hwcheck.devices.nvidia_compat as nvidia_compat
import hwcheck.devices.nvidia_node as nvidia_node
import hwcheck.devices.tegra as tegra
from hwcheck import knowledge
from hwcheck.base.versions import major_minor, parse_version
from hwcheck.devices.record import Asked, Device, Plugin, counted, mebibytes
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.devices.cuda_visibility import Visibility


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The NVIDIA GPUs (MIG devices as GPUs, a Jetson's integrated GPU) a CUDA process sees, in its order."""
    facts = tegra.with_integrated_gpu(facts)
    seen = cuda_visibility.resolve(facts, framework)
    return [_device(number, gpu, _describe_gpu(gpu), facts) for number, gpu in enumerate(seen.gpus)]


def described(facts: dict[str, Any], framework: str | None = None) -> list[dict[str, Any]]:
    """The visible GPUs as the rules' helpers read them (label, compute capability, features)."""
    seen = cuda_visibility.resolve(tegra.with_integrated_gpu(facts), framework)
    return [_describe_gpu(gpu) for gpu in seen.gpus]


def _device(number: int, gpu: dict[str, Any], row: dict[str, Any], facts: dict[str, Any]) -> Device:
    integrated = bool(gpu.get("integrated"))
    known = bool(row["compute_capability"])
    # A Jetson's GPU allocates from the SoC's memory: the total it shares, its share unpublished.
    memory = _host_total(facts) if integrated else mebibytes(gpu.get("memory_mib"))
    return Device(
        vendor="nvidia",
        plugin="nvidia",
        number=number,
        name=cuda_visibility.describe(gpu),
        label=row["label"],
        memory_bytes=memory,
        unified=integrated,
        architecture=row["compute_capability"],
        family=row["family"],
        runtime="cuda",
        # Full-rate float16 is the tensor cores' (Volta on); older GPUs compute it slowly or not at all.
        float16=row["tensor_cores"] if known else None,
        bfloat16=row["bf16"] if known else None,
        tf32=row["tf32"] if known else None,
        fp8=row["fp8"] if known else None,
        mig=row["mig"],
        product_id=str(gpu["pci_device_id"]) if gpu.get("pci_device_id") else None,
    )


def _host_total(facts: dict[str, Any]) -> int | None:
    total = section(facts, "memory").get("total_bytes")
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None


def driver_cuda(facts: dict[str, Any]) -> str | None:
    """The newest CUDA the NVIDIA driver runs: NVML's, else the driver table's, a Jetson's from L4T."""
    driver = complete_driver(_driver(section(facts, "nvidia_driver")), section(facts, "os"))
    return tegra.complete_driver(driver, tegra.variables(facts)).get("cuda")


def variables(asked: Asked) -> dict[str, Any]:
    """The `gpu`, `visibility`, `pci`, `driver` and `tegra` namespaces, and the GPUs' part of `node`."""
    seen = cuda_visibility.resolve(asked.facts, asked.backend)
    gpus = [_describe_gpu(gpu) for gpu in seen.gpus]
    jetson = tegra.variables(asked.facts)
    driver = complete_driver(_driver(section(asked.facts, "nvidia_driver")), asked.operating_system)
    return {
        "gpu": _gpus(gpus),
        "visibility": _visibility(seen, gpus, asked.environment),
        "pci": _pci(section(asked.facts, "pci")),
        "driver": tegra.complete_driver(driver, jetson),
        "tegra": jetson,
        "node": nvidia_node.variables(asked.facts, list(seen.gpus)),
    }


driver_platform = nvidia_compat.driver_platform


def complete_driver(driver: dict[str, Any], operating_system: dict[str, Any]) -> dict[str, Any]:
    """The driver variables with `cuda` taken from the driver table when NVML did not report it."""
    completed = {**driver, "cuda_from": "NVML" if driver.get("cuda") else ""}
    if not driver.get("cuda") and driver.get("version"):
        newest = knowledge.newest_cuda_for_driver(driver["version"], driver_platform(operating_system))
        if newest:
            completed["cuda"] = newest
            completed["cuda_from"] = "the CUDA release notes' driver table"
            completed["newest_tensorflow"] = knowledge.newest_tensorflow_for_cuda(newest)
    return completed


def _visibility(seen: Visibility, gpus: list[dict[str, Any]], environment: dict[str, Any]) -> dict[str, Any]:
    """What hid GPUs from the process, for rules and messages (the GPUs themselves: gpu.*)."""
    hidden = seen.hidden
    arch_list = environment.get("TORCH_CUDA_ARCH_LIST")
    capabilities = [g["compute_capability"] for g in gpus if g["compute_capability"]]
    missing = cuda_visibility.arch_list_missing(arch_list, capabilities) if isinstance(arch_list, str) else []
    instances, used = cuda_visibility.mig_instances(seen)
    return {
        "physical_count": len(seen.physical),
        "count": len(gpus),
        "variable": seen.variable or "",
        "value": seen.value if seen.value is not None else "",
        "visible": [f"cuda:{number} = {gpu['label']}" for number, gpu in enumerate(gpus)],
        "hidden": [cuda_visibility.describe(gpu) for gpu in hidden],
        "hidden_text": ", ".join(cuda_visibility.describe(gpu) for gpu in hidden),
        "physical_names": [cuda_visibility.describe(gpu) for gpu in seen.physical],
        "available": cuda_visibility.available(seen.physical),
        "stopped_at": seen.stopped_at if seen.stopped_at is not None else "",
        "stop_reason": seen.stop_reason,
        "ignored": ",".join(seen.ignored),
        "repeated": seen.repeated,
        "unresolved": seen.unresolved,
        "order": seen.order,
        "order_ambiguous": seen.order_ambiguous,
        "mixed": len({(g.get("name"), g.get("compute_capability")) for g in seen.physical}) > 1,
        "container_devices": seen.container_devices,
        "torch_arch_list_missing": sorted(set(missing)),
        "torch_arch_list_fix": ";".join([str(arch_list).strip(" ;"), *sorted(set(missing))]).strip(";"),
        "xla_mem_fraction": cuda_visibility.fraction(environment.get("XLA_PYTHON_CLIENT_MEM_FRACTION")),
        "mig_instances": instances,
        "mig_used": used,
    }


def _gpus(described: list[dict[str, Any]]) -> dict[str, Any]:
    known = [gpu for gpu in described if gpu["compute_capability"]]
    weakest = min(known, key=lambda gpu: gpu["cc_value"], default=None)
    capabilities = sorted(
        {gpu["compute_capability"] for gpu in known}, key=lambda text: parse_version(text) or ()
    )
    everyone = bool(described) and len(known) == len(described)
    return {
        "count": len(described),
        "names": [gpu["label"] for gpu in described],
        "models": sorted({gpu["label"] for gpu in described}),
        "cc_known": everyone,
        "unknown_names": [gpu["name"] for gpu in described if not gpu["compute_capability"]],
        "unlisted": sorted(
            {
                gpu["label"]
                for gpu in described
                if gpu["compute_capability"] and not gpu["listed"] and not gpu["assumed"]
            }
        ),
        "assumed": sorted({gpu["assumed"] for gpu in described if gpu["assumed"]}),
        "min_cc": weakest["cc_value"] if weakest else 0.0,
        "min_cc_text": weakest["compute_capability"] if weakest else None,
        "weakest": weakest["label"] if weakest else None,
        "capabilities": capabilities,
        "families": sorted({gpu["family"] for gpu in known if gpu["family"]}),
        "mixed": len(capabilities) > 1 or len({g["tensor_cores"] for g in known}) > 1,
        "tensor_cores": everyone and all(gpu["tensor_cores"] for gpu in known),
        "bf16": everyone and all(gpu["bf16"] for gpu in known),
        "tf32": everyone and all(gpu["tf32"] for gpu in known),
        "fp8": everyone and all(gpu["fp8"] for gpu in known),
        **{
            f"fp8_{key}_min" if key != "source" else "fp8_floor_source": value
            for key, value in knowledge.fp8_floors(capabilities).items()
        },
        "no_tensor_cores": sorted(
            {gpu["label"] for gpu in known if gpu["cc_value"] >= 7.0 and not gpu["tensor_cores"]}
        ),
        "mig": sorted({gpu["label"] for gpu in described if gpu["mig"]}),
        "jetson": any(gpu["segment"] == "jetson" for gpu in described),
        "memory_mib_min": min((g["memory_mib"] for g in described if g["memory_mib"]), default=0),
    }


def gpu_capability(gpu: dict[str, Any]) -> str | None:
    """A GPU's compute capability: the probed one, else the knowledge table's for its name or PCI id."""
    if gpu.get("compute_capability"):
        return str(gpu["compute_capability"])
    model = knowledge.gpu_model(str(gpu.get("name") or ""), gpu.get("pci_device_id")) or {}
    return model.get("compute_capability")


def placed_capability(gpu: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """A GPU's compute capability, and the family row when only its family placed it (else None)."""
    known = gpu_capability(gpu)
    if known:
        return known, None
    # A name the table lacks is placed by its family, and the advice says it was assumed.
    family = knowledge.gpu_family(str(gpu.get("name") or ""))
    return (family["compute_capability"], family) if family else (None, None)


def capability_text(gpu: dict[str, Any]) -> str:
    """A GPU's compute capability for display: the known one, the family's marked 'assumed', else '?'."""
    capability, family = placed_capability(gpu)
    return f"{capability} assumed" if family else capability or "?"


def _describe_gpu(gpu: dict[str, Any]) -> dict[str, Any]:
    name = str(gpu.get("name") or "unknown GPU")
    # Early drivers call new boards "Graphics Device": the PCI device id names them then.
    pci_device_id = gpu.get("pci_device_id")
    model = knowledge.gpu_model(name, pci_device_id) or {}
    if name == "Graphics Device" and model.get("name"):
        name = f"{model['name']} (NVML: Graphics Device)"
    capability, family = placed_capability(gpu)
    features = knowledge.gpu_features(capability, name, pci_device_id) if capability else {}
    parsed = parse_version(capability) or ()
    cc_value = float(".".join(str(part) for part in parsed[:2])) if parsed else 0.0
    shown = cuda_visibility.describe({**gpu, "name": name})
    return {
        "name": name,
        "label": f"{shown} (CC {capability})" if capability else shown,
        "compute_capability": capability,
        "cc_value": cc_value,
        "family": features.get("family"),
        "tensor_cores": bool(features.get("tensor_cores")),
        "bf16": bool(features.get("bf16")),
        "tf32": bool(features.get("tf32")),
        "fp8": bool(features.get("fp8")),
        "segment": model.get("segment"),
        # The table names the board; when it does not, the features are assumed from the
        # compute capability alone (a board newer than the table, a laptop variant).
        "listed": bool(model) or tegra.own_name(gpu),
        "assumed": (
            f"{shown}: assumed {family['family']} (CC {capability}) as {family['reason']}" if family else ""
        ),
        "mig": bool(gpu.get("mig")),
        "memory_mib": gpu.get("memory_mib") or 0,
    }


def _pci(pci: dict[str, Any]) -> dict[str, Any]:
    devices = [d for d in pci.get("devices") or [] if isinstance(d, dict)]
    nvidia = [
        d
        for d in devices
        if d.get("vendor") == "nvidia" or d.get("vendor_id") == knowledge.pci_vendor_id("nvidia")
    ]
    return {
        "known": bool(pci),
        "nvidia": len(nvidia),
        "nvidia_unbound": sum(1 for d in nvidia if d.get("driver") != "nvidia"),
        "nvidia_drivers": sorted({d.get("driver") or "none" for d in nvidia}),
        "nvidia_device_nodes": any(d.get("device_nodes") for d in nvidia),
        "amd": sum(
            1
            for d in devices
            if d.get("vendor") == "amd" or d.get("vendor_id") == knowledge.pci_vendor_id("amd")
        ),
    }


def _driver(driver: dict[str, Any]) -> dict[str, Any]:
    cuda = major_minor(driver.get("cuda"))
    return {
        "known": bool(driver.get("version")),
        "version": driver.get("version"),
        "cuda": cuda,
        "newest_tensorflow": knowledge.newest_tensorflow_for_cuda(cuda),
    }


def doctor_row(facts: dict[str, Any]) -> str:
    """The gpu row: the NVIDIA GPUs the process sees, the driver, what hid the others ("" with none)."""
    seen = cuda_visibility.resolve(tegra.with_integrated_gpu(facts))
    if not seen.physical:
        return ""
    names = [
        f"{cuda_visibility.describe(gpu)} (CC {capability_text(gpu)}"
        f"{', MIG' if gpu.get('mig') and not gpu.get('mig_device') else ''})"
        for gpu in seen.gpus
    ]
    text = ", ".join(counted(names)) or "no GPU visible to the process"
    driver = section(facts, "nvidia_driver")
    if driver.get("version"):
        text += f"; driver {driver['version']} (CUDA {driver.get('cuda') or '?'})"
    if seen.variable and (seen.hidden or seen.stopped_at is not None):
        hidden = ", ".join(counted([cuda_visibility.describe(gpu) for gpu in seen.hidden]))
        text += f"; {seen.variable}={seen.value!r}" + (f" hides {hidden}" if hidden else "")
        if seen.stopped_at is not None:
            text += f": {seen.stopped_at!r} {seen.stop_reason}"
    return text


PLUGIN = Plugin(
    name="nvidia",
    visible=visible,
    variables=variables,
    complete=tegra.with_integrated_gpu,
    doctor_row=doctor_row,
    doctor_label="gpu",
    compat=nvidia_compat.variables,
)
