"""The config files written beside a trainer script: DeepSpeed's JSON and Accelerate's YAML."""

from __future__ import annotations

import json
from typing import Any

from hwcheck.emit.spec import ScriptSpec
from hwcheck.engine.trainers import native_value

LEARNING_RATE = 0.001  # the scripts' own LEARNING_RATE
# The suffix of each trainer's config file: NAME.py gets NAME.deepspeed.json.
CONFIG_SUFFIX = {"deepspeed": ".deepspeed.json", "accelerate": ".accelerate.yaml"}


def config_files(spec: ScriptSpec, stem: str) -> dict[str, str]:
    """The files the script `stem`.py reads beside it, by file name (empty for most frameworks)."""
    suffix = CONFIG_SUFFIX.get(spec.framework)
    if suffix is None:
        return {}
    if spec.framework == "deepspeed":
        text = json.dumps(deepspeed_config(spec), indent=2) + "\n"
    else:
        text = yaml_text(accelerate_config(spec))
    return {f"{stem}{suffix}": text}


def deepspeed_config(spec: ScriptSpec) -> dict[str, Any]:
    """DeepSpeed's JSON config for `spec`: precision blocks, loss scaling, ZeRO stage, optimizer."""
    optimizer: dict[str, Any] = {"lr": LEARNING_RATE}
    if not spec.offload:
        # torch's AdamW: DeepSpeed's fused Adam is compiled at first use (CUDA toolkit, ninja).
        optimizer["torch_adam"] = True
    zero: dict[str, Any] = {"stage": spec.zero_stage}
    if spec.offload:
        # ZeRO-Offload: the optimizer state and its step on the CPU (DeepSpeedCPUAdam).
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": spec.batch_size,
        "gradient_accumulation_steps": 1,
        "steps_per_print": max(spec.steps, 1),
        "optimizer": {"type": "AdamW", "params": optimizer},
        # The bf16 and fp16 blocks, as doctor --framework deepspeed gives them (engine/trainers.py).
        **native_value("deepspeed", spec.policy),
        "zero_optimization": zero,
    }


def accelerate_config(spec: ScriptSpec) -> dict[str, Any]:
    """Accelerate's config for `spec`, with the keys `accelerate config` writes for one machine."""
    on_gpu = spec.device == "gpu"
    processes = spec.gpus if on_gpu else 1
    return {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": "MULTI_GPU" if processes > 1 else "NO",
        "downcast_bf16": "no",
        "gpu_ids": "all",
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": native_value("accelerate", spec.policy, fp8=bool(spec.fp8)),
        "num_machines": 1,
        "num_processes": processes,
        "rdzv_backend": "static",
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": not on_gpu,
    }


def yaml_text(document: dict[str, Any]) -> str:
    """A flat mapping of plain values as YAML: strings single-quoted, so 'NO' stays a string."""
    lines = []
    for key, value in document.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, list) and not value:
            text = "[]"
        elif isinstance(value, str):
            text = "'" + value.replace("'", "''") + "'"
        else:
            raise TypeError(f"cannot write {type(value).__name__} {key!r} as plain YAML")
        lines.append(f"{key}: {text}")
    return "\n".join(lines) + "\n"
