"""Replayed `hwcheck doctor --verify` observations: recorded facts plus what a framework printed.

Each error text is quoted from the public issue or source named beside it. tests/test_verify.py
checks each maps to its finding; tests/test_rule_coverage.py counts them among the test machines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import FIXTURES

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"
MI300X = FIXTURES / "facts" / "mi300x-x8-torch251-rocm62.json"
CPU = FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json"
APPLE = FIXTURES / "facts" / "apple-m2max-macos152-tf217-metal110.json"

# (the text as the framework printed it, the rule, where it was reported)
ERRORS = [
    (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "verify-no-kernel-image",
        "https://github.com/pytorch/pytorch/issues/31285",
    ),
    (
        "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime "
        "version at /opt/conda/conda-bld/pytorch_1524586445097/work/aten/src/THC/THCGeneral.cpp:70",
        "verify-cuda-driver-insufficient",
        "https://github.com/BobLiu20/YOLOv3_PyTorch/issues/12",
    ),
    (
        "RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT "
        "API version (0.54) and framework PJRT API version 0.51).",
        "verify-pjrt-mismatch",
        "https://github.com/jax-ml/jax/issues/22416",
    ),
    (
        '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
        "verify-hip-no-binary",
        "https://github.com/ROCm/tensorflow-upstream/issues/1800",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.22 GiB. GPU 0 has a total capacity "
        "of 15.69 GiB of which 3.71 GiB is free.",
        "verify-out-of-memory",
        "https://github.com/antgroup/echomimic_v2/issues/115",
    ),
    (
        "AssertionError: Torch not compiled with CUDA enabled",
        "verify-torch-cpu-only",
        "torch 2.13.0+cpu on this project's machine (torch/cuda/__init__.py)",
    ),
    (
        "WARNING:2025-06-15 17:04:55,449:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this "
        "machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
        "verify-jax-cpu-fallback",
        "https://github.com/sanchit-gandhi/whisper-jax/issues/211",
    ),
    (
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
        "verify-no-nvidia-driver",
        "https://github.com/facebookresearch/detectron2/issues/3104",
    ),
]


def replayed(base: Path, framework: str, error: str | None, *, outcome: str = "error", **extra: Any) -> dict:
    facts = json.loads(base.read_text())
    facts["verified"] = {
        "outcome": outcome,
        "error": error,
        "framework": framework,
        "version": "2.5.1",
        "file": f"/venv/site-packages/{framework}/__init__.py",
        "installed": {"module": f"/venv/site-packages/{framework}", "version": "2.5.1"},
        "device": "gpu",
        "devices": [{"kind": "cpu", "name": "cpu"}, {"kind": "gpu", "name": "GPU 0"}],
        "requested": {
            "framework": framework,
            "backend": framework,
            "device": "gpu",
            "policy": "mixed_bfloat16",
        },
        **extra,
    }
    return facts


def error_framework(rule: str) -> str:
    """The framework an error text of `rule` comes from."""
    return "jax" if "jax" in rule or "pjrt" in rule else "torch"


def error_base(rule: str) -> Path:
    """The machine an error text of `rule` is replayed on."""
    return MI300X if rule == "verify-hip-no-binary" else H100


def cases() -> list[tuple[str, dict[str, Any], str, set[str]]]:
    """(name, facts, framework, the finding ids it must raise) for every verify rule."""
    found = [
        (rule, replayed(error_base(rule), error_framework(rule), text), error_framework(rule), {rule})
        for text, rule, _ in ERRORS
    ]
    cpu_step = {"framework": "torch", "device": "cpu", "policy": "float32"}
    found += [
        ("ok", replayed(H100, "torch", None, outcome="ok"), "torch", {"verify-ok"}),
        (
            # pip list showed torch 2.9.1+cu130, yet `import torch` failed: pip and python were two
            # environments (https://github.com/pytorch/pytorch/issues/172808).
            "not importable",
            replayed(H100, "torch", "ModuleNotFoundError: No module named 'torch'"),
            "torch",
            {"verify-framework-not-installed"},
        ),
        (
            "unknown text",
            replayed(H100, "torch", "RuntimeError: something new"),
            "torch",
            {"verify-step-failed"},
        ),
        (
            "sees no gpu",
            replayed(
                H100,
                "torch",
                "RuntimeError: No CUDA GPUs are available",
                devices=[{"kind": "cpu", "name": "cpu"}],
            ),
            "torch",
            {"verify-framework-sees-no-gpu", "verify-step-failed"},
        ),
        (
            "sees an unprobed gpu",
            replayed(CPU, "torch", None, outcome="ok", device="cpu", requested=cpu_step),
            "torch",
            {"verify-framework-sees-unprobed-gpu", "verify-ok"},
        ),
        (
            "fallback",
            replayed(
                H100,
                "torch",
                "RuntimeError: CUDA error: no kernel image is available for execution on the device",
                fallback={"device": "cpu", "policy": "mixed_bfloat16", "outcome": "ok", "seconds": 1.0},
            ),
            "torch",
            {"verify-fallback", "verify-no-kernel-image"},
        ),
        (
            "skipped",
            replayed(
                H100,
                "torch",
                "no step of PyTorch on the TPU (torch_xla) is run here",
                outcome="skipped",
                device="tpu",
                requested={"framework": "torch", "device": "tpu", "policy": "mixed_bfloat16"},
            ),
            "torch",
            {"verify-skipped"},
        ),
        (
            "timeout",
            replayed(H100, "torch", "no answer within 120 s", outcome="timeout"),
            "torch",
            {"verify-timeout"},
        ),
        (
            "sigill",
            replayed(
                CPU,
                "torch",
                "killed by SIGILL (illegal instruction)",
                signal="SIGILL",
                device="cpu",
                requested=cpu_step,
            ),
            "torch",
            {"verify-illegal-instruction"},
        ),
        (
            "other copy",
            replayed(
                H100,
                "torch",
                "AttributeError: module 'torch' has no attribute 'nn'",
                file="/home/me/shadow/torch/__init__.py",
            ),
            "torch",
            {"verify-other-copy"},
        ),
    ]
    return found
