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


def precision_features(
    facts: dict[str, Any], device: str, runtime: str = "cuda", framework: str | None = None
) -> dict[str, bool]:
    """Whether the target `device` of this machine runs bfloat16 fast and has TF32.

    The GPUs are the devices the training process will see (hwcheck.devices.visible applies
    CUDA_VISIBLE_DEVICES and kin), so a hidden GPU never makes the script claim bfloat16;
    every one of them must run it. `framework` is the one the advice is for (the
    recommendation's; the installed one when None).
    """
    from hwcheck import knowledge
    from hwcheck.engine.seen import seen_devices

    if device == "tpu":
        return {"bfloat16": True, "tf32": False}
    if device == "cpu":
        cpu = facts.get("cpu") or {}
        row = knowledge.bf16_class(cpu.get("flags") or [], arch_family=knowledge.arch_family(cpu.get("arch")))
        return {"bfloat16": bool(row.get("fast_bf16_training")), "tf32": False}
    # The GPU device is CUDA's or ROCm's; mps and xpu are Apple's and Intel's runtimes.
    wanted = runtime if device == "gpu" else device
    found = [seen for seen in seen_devices(facts, framework)[1] if seen.runtime == wanted]
    return {
        "bfloat16": bool(found) and all(seen.bfloat16 is True for seen in found),
        "tf32": bool(found) and all(seen.tf32 is True for seen in found),
    }


def visible_gpus(facts: dict[str, Any]) -> list[Device]:
    """The devices (any vendor's GPUs, MIG devices, TPU chips) the training process sees."""
    from hwcheck import devices

    return devices.training(facts, "torch")
