"""Which device a bench measures on: the one asked for, or the one the recommendation targets."""

from __future__ import annotations

from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.versions import parse_version
from hwcheck.measure.runner import engine_framework

# PyTorch's devices for Apple's and Intel's GPUs (a Device's runtime), as messages name them.
VENDOR_DEVICES = {"mps": "Apple GPU (MPS)", "xpu": "Intel GPU (XPU)"}


def measured_device(
    requested: str, facts: dict[str, Any], recommended_device: str, framework: str
) -> tuple[str, str | None, str | None]:
    """The device to measure, its name, and why TF32 cannot run there (None when it can)."""
    from hwcheck import devices
    from hwcheck.engine.native import target as advised_target

    # The GPUs this process will see (CUDA_VISIBLE_DEVICES and kin), and their features
    # from the knowledge tables: the same ones the recommendation was made for.
    backend = advised_target(facts, engine_framework(framework)).backend
    vendor_device = requested if requested in VENDOR_DEVICES else None
    if requested == "auto" and recommended_device in VENDOR_DEVICES:
        vendor_device = recommended_device
    if vendor_device is not None:
        return _vendor_target(vendor_device, facts, framework, requested == vendor_device)
    visible = devices.visible(facts, backend)
    # AMD GPUs under ROCm: PyTorch drives them as 'cuda' too (devices/amd.py applies ROCR_VISIBLE_DEVICES).
    gpus = [device for device in visible if device.runtime == "cuda"]
    rocm = [device for device in visible if device.runtime == "rocm"]
    if requested == "gpu" and not gpus and not rocm:
        hidden_by = devices.hiding_variables(facts, backend)
        if hidden_by:
            hide = "hides" if len(hidden_by) == 1 else "hide"
            raise InputError(
                "--device", f"gpu asked for, but {' and '.join(hidden_by)} {hide} every GPU from this process"
            )
        raise InputError(
            "--device",
            "gpu asked for, but no GPU was found on this machine "
            "(NVML lists no NVIDIA GPU and ROCm's KFD topology no AMD GPU)",
        )
    target = (
        requested
        if requested != "auto"
        else ("gpu" if recommended_device == "gpu" and (gpus or rocm) else "cpu")
    )
    if target == "cpu":
        cpu = facts.get("cpu") or {}
        return "cpu", cpu.get("model"), "no TF32 on a CPU"
    if framework == "torch":
        torch_facts = (facts.get("frameworks") or {}).get("torch") or {}
        if torch_facts and not torch_facts.get("cuda") and not torch_facts.get("rocm_build"):
            raise InputError(
                "--device", f"gpu asked for, but torch {torch_facts.get('version')} is a CPU-only build"
            )
    if not gpus:
        # An AMD GPU: the torch child runs on device 'cuda', which ROCm builds map to HIP.
        return "gpu", rocm[0].name, "no TF32 on an AMD GPU (TF32 is an NVIDIA math mode)"
    reason = None
    if any(gpu.tf32 is None for gpu in gpus):
        reason = "the GPU's compute capability is unknown"
    elif not all(gpu.tf32 for gpu in gpus):
        weakest = min(gpus, key=lambda gpu: parse_version(gpu.architecture) or ())
        reason = f"no TF32 below compute capability 8.0 (this GPU has {weakest.architecture})"
    return "gpu", gpus[0].name, reason


def _vendor_target(
    device: str, facts: dict[str, Any], framework: str, asked: bool
) -> tuple[str, str | None, str | None]:
    """mps or xpu when this machine has that GPU and PyTorch can drive it; else why not, or the CPU."""
    from hwcheck import devices

    label = VENDOR_DEVICES[device]
    gpus = [gpu for gpu in devices.visible(facts, "torch") if gpu.runtime == device]
    torch_facts = (facts.get("frameworks") or {}).get("torch") or {}
    if not gpus:
        if asked:
            system = (facts.get("os") or {}).get("system") or "this system"
            raise InputError("--device", f"{device} asked for, but this machine ({system}) has no {label}")
        cpu = facts.get("cpu") or {}
        return "cpu", cpu.get("model"), "no TF32 on a CPU"
    if framework != "torch":
        raise InputError("--device", f"{device} ({label}) is measured with PyTorch only: --framework torch")
    torch_version = torch_facts.get("version")
    if device == "mps" and torch_facts.get("mps_built") is False:
        raise InputError("--device", f"mps asked for, but torch {torch_version} was built without MPS")
    if device == "xpu" and "xpu" in torch_facts and not torch_facts.get("xpu"):
        raise InputError("--device", f"xpu asked for, but torch {torch_version} has no XPU support")
    return device, gpus[0].name, f"no TF32 on the {label}"
