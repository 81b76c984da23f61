"""The precision decision in each trainer's words: Lightning, the Hugging Face Trainer, Accelerate, DeepSpeed.

One place for what a trainer needs, used by doctor, the API (hwcheck.precision() and kin) and
the config emitter alike: the words and line templates are data in rules/knowledge/training.toml
[trainer.*], the releases that added each word in rules/knowledge/frameworks.toml [[feature]]
(checked by native.api_gaps like every framework's APIs); this module only fills them in.
"""

from __future__ import annotations

import json

from hwcheck import knowledge
from hwcheck.engine.outcome import COMPUTE_DTYPES, TRAINERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "TRAINERS",
    "apply_lines",
    "deepspeed_precision",
    "installed",
    "native_value",
    "trainer_row",
]


def trainer_row(trainer: str) -> dict[str, Any]:
    """The [trainer.<name>] table of rules/knowledge/training.toml."""
    return dict(knowledge.load("training")["trainer"][trainer])


def native_value(
    trainer: str, policy: str, *, tf32: bool = False, device: str = "gpu", fp8: bool = False
) -> Any:
    """The trainer's own setting for `policy`: a Lightning precision string, TrainingArguments
    keyword arguments, an Accelerate mixed_precision word, or DeepSpeed's bf16/fp16 blocks.

    `device` is the advised one (gpu, cpu, tpu, mps, xpu); `fp8` asks for the trainer's FP8 word
    where it has one (Lightning, Accelerate).
    """
    row = trainer_row(trainer)
    if trainer == "hf-trainer":
        arguments: dict[str, Any] = dict(row["arguments"][policy])
        if tf32:
            arguments[row["tf32_argument"]] = True
        if device == "cpu":
            arguments.update(row["cpu_arguments"])
        return arguments
    if trainer == "deepspeed":
        return deepspeed_precision(policy)
    if fp8 and row.get("fp8"):
        return row["fp8"]
    return row[policy]


def deepspeed_precision(policy: str) -> dict[str, Any]:
    """DeepSpeed's "bf16" and "fp16" config blocks for `policy`, fp16 with its dynamic loss scaler."""
    scale = knowledge.load("training")["loss_scale"]["deepspeed"]
    return {
        "bf16": {"enabled": policy == "mixed_bfloat16"},
        "fp16": {
            "enabled": COMPUTE_DTYPES[policy] == "float16",
            "loss_scale": 0,
            "initial_scale_power": scale["initial_scale_power"],
            "loss_scale_window": scale["growth_steps"],
            "hysteresis": scale["hysteresis"],
            "min_loss_scale": scale["min_loss_scale"],
        },
    }


def apply_lines(trainer: str, decision: dict[str, Any]) -> tuple[str, ...]:
    """The lines that apply `decision` (policy, tf32) through `trainer`, from its templates."""
    row = trainer_row(trainer)
    policy, tf32 = decision["policy"], bool(decision.get("tf32"))
    value = native_value(trainer, policy, tf32=tf32, device=str(decision.get("device")))
    fills = {
        "{value}": json.dumps(value) if isinstance(value, str) else str(value),
        "{word}": value if isinstance(value, str) else "",
        "{arguments}": ", ".join(f"{key}={item!r}" for key, item in value.items())
        if isinstance(value, dict)
        else "",
        "{blocks}": "\n".join(f"{json.dumps(name)}: {json.dumps(block)}," for name, block in value.items())
        if trainer == "deepspeed"
        else "",
    }
    lines: list[str] = []
    for template in row["apply"]:
        text = template
        for placeholder, filled in fills.items():
            text = text.replace(placeholder, filled)
        lines.extend(text.split("\n"))
    if tf32 and trainer != "hf-trainer":
        lines.append(knowledge.load("training")["trainers"]["tf32_line"])
    return tuple(lines)


def installed(frameworks: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each trainer's installed release as the facts' frameworks section records it (version None: absent)."""
    result = {}
    for trainer in TRAINERS:
        row = trainer_row(trainer)
        section = frameworks.get(row["package"])
        version = section.get("version") if isinstance(section, dict) else None
        result[trainer] = {
            "installed": bool(version),
            "version": version if isinstance(version, str) else None,
            "package": row["package"],
            "label": row["label"],
            "install": row["install"],
        }
    return result
