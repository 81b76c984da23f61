"""The `verified.*` variables: what `hwcheck doctor --verify` observed, read by rules/policy/verify.toml.

An observation beats an inference: a training step that failed on the GPU makes the GPU
unusable for the advice (rules/policy's gpu_usable reads verified.gpu_failed), and the
framework's own device list is set against the probes' by the rules.
"""

from __future__ import annotations

import posixpath
import re

from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_TEXT = 8000  # characters of error, warnings and stderr the error-text rules search
ACCELERATORS = ("gpu", "mps", "xpu", "tpu")
# A recorded framework name reaches a message only when it is one of these.
FRAMEWORKS = ("torch", "jax", "keras", "tensorflow")


def variables(facts: dict[str, Any], framework: str) -> dict[str, Any]:
    """verified.*: known, outcome, the device the step ran on, the devices seen, the text to match.

    An observation made for another framework than the one advised (a replayed facts file read
    with another --framework) is not this advice's: `applies` is false and nothing follows from it.
    """
    seen = section(facts, "verified")
    requested = section(seen, "requested")
    devices = [d for d in _list(seen.get("devices")) if isinstance(d, dict)]
    gpus = [d for d in devices if d.get("kind") == "gpu"]
    outcome = _text(seen.get("outcome"))
    device = _text(seen.get("device")) or _text(section(seen, "requested").get("device"))
    installed = section(seen, "installed")
    file, module = _text(seen.get("file")), _text(installed.get("module"))
    other_copy = bool(file and module) and not inside(file, module)
    parts = [seen.get("error"), *_list(seen.get("warnings")), seen.get("stderr")]
    text = "\n".join(part for part in parts if isinstance(part, str))[:MAX_TEXT]
    version = _text(seen.get("version"))
    observed = _text(requested.get("framework")) or _text(seen.get("framework"))
    observed = observed if observed in FRAMEWORKS else ""
    same_framework = bool(seen) and observed == framework
    applies = same_framework and not other_copy
    policy = _text(requested.get("policy"))
    failed = applies and outcome not in ("ok", "skipped")
    family = "keras" if framework in ("keras", "tensorflow") else framework
    fallback = section(seen, "fallback")
    return {
        "known": bool(seen),
        "applies": applies,
        "imported": bool(version or file),
        "outcome": outcome,
        "ok": outcome == "ok",
        "device": device,
        "policy": policy,
        # The precision in the words of the advice's framework ("bfloat16 autocast" for PyTorch).
        "precision": _precision(policy, family, device),
        "framework": observed,
        "label": f"{observed} {version}".strip() if observed else "the framework",
        "version": version,
        "file": file,
        "installed_module": module,
        "installed_version": _text(installed.get("version")),
        "other_copy": same_framework and other_copy,
        "error": _text(seen.get("error")),
        "signal": _text(seen.get("signal")),
        "text": text,
        "seconds": round(float(seen["seconds"]), 1) if isinstance(seen.get("seconds"), int | float) else 0.0,
        "gpu_count": len(gpus),
        # The advice's GPUs are the ones this framework listed (with_observed_gpus): the probes found none.
        "gpus_observed": any(
            isinstance(g, dict) and g.get("observed") is True for g in _list(facts.get("gpus"))
        ),
        "gpu_names": [_text(d.get("name")) for d in gpus],
        "accelerators": sorted({_text(d.get("kind")) for d in devices if d.get("kind") in ACCELERATORS}),
        "device_names": [_device_name(d) for d in devices],
        # The step was asked of the accelerator and did not complete there: the observation wins.
        "gpu_failed": failed and device == "gpu",
        "failed_device": device if failed else "",
        # The advice the failed step led to, verified in turn (when the device or policy changed).
        "fallback": {
            "known": bool(fallback),
            "ok": fallback.get("outcome") == "ok",
            "device": _text(fallback.get("device")),
            "policy": _text(fallback.get("policy")),
            "precision": _precision(_text(fallback.get("policy")), family, _text(fallback.get("device"))),
            "error": _text(fallback.get("error")),
        },
        "arch_list": [a for a in _list(seen.get("arch_list")) if isinstance(a, str)],
        "cuda": _text(seen.get("cuda")),
        "hip": _text(seen.get("hip")),
    }


# The variables that choose GPUs: the framework that listed them had already applied them.
_CHOOSING = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")


def with_observed_gpus(facts: dict[str, Any], framework: str) -> dict[str, Any]:
    """The facts with the NVIDIA GPUs the verifying framework listed in `gpus`, when the probes
    found no GPU at all (NVML missing, a container without the PCI tree); unchanged otherwise.

    Only a CUDA build's own list counts (PyTorch's torch.version.cuda without HIP, JAX's cuda
    platform), each GPU with the compute capability the framework read from it: what it
    observed beats the probes' silence. The GPUs are marked `observed`.
    """
    if any(isinstance(gpu, dict) for gpu in facts.get("gpus") or []):
        return facts
    seen = section(facts, "verified")
    if not seen or not variables(facts, framework)["applies"]:
        return facts
    cuda_build = bool(_text(seen.get("cuda"))) and not _text(seen.get("hip"))
    observed: list[dict[str, Any]] = []
    for device in _list(seen.get("devices")):
        if not isinstance(device, dict) or device.get("kind") != "gpu":
            continue
        platform = _text(device.get("platform"))
        capability = _text(device.get("compute_capability"))
        if not (cuda_build or platform == "cuda") or not re.fullmatch(r"\d{1,2}\.\d{1,2}", capability):
            continue
        gpu: dict[str, Any] = {
            "index": len(observed),
            "vendor": "nvidia",
            "name": _text(device.get("name"))[:200] or "NVIDIA GPU",
            "compute_capability": capability,
            "observed": True,
        }
        if isinstance(device.get("memory_mib"), int) and not isinstance(device.get("memory_mib"), bool):
            gpu["memory_mib"] = device["memory_mib"]
        observed.append(gpu)
    if not observed:
        return facts
    environment = {k: v for k, v in section(facts, "environment").items() if k not in _CHOOSING}
    return {**facts, "gpus": observed, "environment": environment}


def inside(file: str, module: str) -> bool:
    """Whether `file` lies in the folder `module` (recorded paths, compared as text)."""
    folder = posixpath.normpath(module.replace("\\", "/"))
    path = posixpath.normpath(file.replace("\\", "/"))
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _precision(policy: str, family: str, device: str) -> str:
    from hwcheck.engine.measured import variant_label

    try:
        return variant_label(policy, family, device) if policy != "float32" else "float32"
    except KeyError:
        return policy


def _device_name(device: dict[str, Any]) -> str:
    """ "CPU", "GPU NVIDIA H100 80GB HBM3 (compute capability 9.0)": a device as the framework listed it."""
    kind, name = _text(device.get("kind")).upper(), _text(device.get("name"))
    if kind == "CPU":
        return "CPU"  # TensorFlow names it /physical_device:CPU:0, PyTorch and JAX cpu
    capability = _text(device.get("compute_capability"))
    return f"{kind} {name}".strip() + (f" (compute capability {capability})" if capability else "")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
