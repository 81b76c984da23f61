"""Extra `tf` variables from rules/knowledge/tensorflow.toml: GPU bfloat16 speed, wheel architectures."""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge
from hwcheck.base.numbers import whole_or_none
from hwcheck.base.versions import parse_version


def variables(tensorflow: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """`bf16_gpu_slow` (evidence or null), GPUs TensorFlow JIT-compiles PTX for, and GPUs it cannot run."""
    version = tensorflow.get("version")
    arches = knowledge.tensorflow_architectures(version) if version else None
    jit, without = [], []
    for gpu in gpus:
        capability = gpu["compute_capability"]
        if not arches or not capability:
            continue
        if knowledge.architectures_run(arches["sm"], [], capability):
            continue
        if knowledge.architectures_run([], arches["ptx"], capability):
            # Only a GPU newer than every architecture in the wheel: TensorFlow then warns that it
            # "was not built with CUDA kernel binaries compatible with compute capability X".
            if (parse_version(capability) or (0,))[0] > _newest_major(arches):
                jit.append(gpu["label"])
        elif knowledge.architectures_run(arches["sm"], arches["ptx"], capability) is False:
            without.append(gpu["label"])
    return {
        "bf16_gpu_slow": knowledge.tensorflow_gpu_bfloat16_slow(version) if version else None,
        "arch_list": " ".join(arches["sm"] + arches["ptx"]) if arches else "",
        "gpus_ptx_jit": sorted(set(jit)),
        "gpus_without_arch": sorted(set(without)),
    }


def _newest_major(arches: dict[str, Any]) -> int:
    # "sm_86" -> 8; a name without a number counts for nothing.
    numbers = [whole_or_none(name.rpartition("_")[2][:-1]) for name in arches["sm"] + arches["ptx"]]
    return max((number for number in numbers if number is not None), default=0)
