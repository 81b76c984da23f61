"""Extra `tf` variables from rules/knowledge/tensorflow.toml: GPU bfloat16 speed per release."""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge


def variables(tensorflow: dict[str, Any]) -> dict[str, Any]:
    """`bf16_gpu_slow`: the evidence that this release runs bfloat16 slowly on GPUs, else null."""
    version = tensorflow.get("version")
    return {"bf16_gpu_slow": knowledge.tensorflow_gpu_bfloat16_slow(version) if version else None}
