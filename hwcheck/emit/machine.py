"""What the emitter needs to know about the target machine, read from its facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hwcheck.base.versions import parse_version

if TYPE_CHECKING:
    from hwcheck.devices import Device


def keras_major(facts: dict[str, Any]) -> int:
    """The Keras major version scripts for this machine are written for (3 when unknown)."""
    keras = (facts.get("frameworks") or {}).get("keras") or {}
    # tf_keras_major is what tf.keras resolves to: 2 under TF_USE_LEGACY_KERAS or TF < 2.16.
    if keras.get("tf_keras_major") in (2, 3):
        return keras["tf_keras_major"]
    version = parse_version(keras.get("version"))
    if version and version[0] in (2, 3):
        return version[0]
    return 3


def precision_features(facts: dict[str, Any], device: str, runtime: str = "cuda") -> dict[str, bool]:
    """Whether the target `device` of this machine runs bfloat16 fast and has TF32.

    The GPUs are those the training process will see (build_context applies
    CUDA_VISIBLE_DEVICES), so a hidden GPU never makes the script claim bfloat16.
    """
    from hwcheck.base.versions import version_at_least
    from hwcheck.engine import build_context

    context = build_context(facts)
    if device == "tpu":
        return {"bfloat16": True, "tf32": False}
    if device == "gpu" and runtime == "rocm":
        # AMD matrix cores: bfloat16 where they run it at the float16 rate; no TF32 (an NVIDIA mode).
        return {"bfloat16": bool(context["amd"]["bf16"]), "tf32": False}
    if device == "gpu":
        return {"bfloat16": bool(context["gpu"]["bf16"]), "tf32": bool(context["gpu"]["tf32"])}
    if device == "mps":
        # Metal computes in bfloat16 from macOS 14; PyTorch's MPS autocast from 2.6 (apple.toml).
        apple = context["apple"]
        bfloat16 = version_at_least(apple["macos"], apple["bfloat16_macos"]) and (
            apple["torch_bfloat16"] or apple["tf_metal_float16"]
        )
        return {"bfloat16": bool(bfloat16), "tf32": False}
    if device == "xpu":
        return {"bfloat16": bool(context["intel"]["xmx"]), "tf32": False}
    return {"bfloat16": bool(context["cpu"]["fast_bf16"]), "tf32": False}


def visible_gpus(facts: dict[str, Any]) -> list[Device]:
    """The devices (any vendor's GPUs, MIG devices, TPU chips) the training process sees."""
    from hwcheck import devices

    return devices.training(facts, "torch")
