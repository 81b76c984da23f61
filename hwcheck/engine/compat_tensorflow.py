"""Extra `tf` variables from rules/knowledge/tensorflow.toml: GPU bfloat16 speed, GPUs the wheel runs on."""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.numbers import whole_or_none
from hwcheck.base.versions import parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(
    tensorflow: dict[str, Any], gpus: list[dict[str, Any]], built_for: list[str] | None = None
) -> dict[str, Any]:
    """`bf16_gpu_slow` (evidence or null), and the GPUs the wheel JIT-compiles PTX for or cannot run.

    `built_for` is the installed build's own architecture list (build_info), when the facts have it.
    """
    version = tensorflow.get("version")
    listed = [arch for arch in built_for or [] if isinstance(arch, str)]
    build = knowledge.tensorflow_kernels(version, listed or None, tensorflow.get("cuda"))
    arches = list(build.sm or ()) + list(build.ptx or ())
    jit, without_arch, without_kernels, unknown = [], [], [], []
    for gpu in gpus:
        kernels = knowledge.gpu_kernels(build, gpu["compute_capability"])
        if kernels is None or kernels.path == "native":
            continue
        if kernels.path == "ptx_jit":
            # Only a GPU newer than every architecture in the wheel: TensorFlow then warns that it
            # "was not built with CUDA kernel binaries compatible with compute capability X".
            if (parse_version(gpu["compute_capability"]) or (0,))[0] > _newest_major(arches):
                jit.append(gpu["label"])
        elif kernels.path == "ptx_unknown":
            unknown.append(f"{gpu['label']}: {kernels.reason or kernels.source}")
        elif kernels.deviation:
            without_kernels.append(gpu["label"])
        else:
            without_arch.append(gpu["label"])
    return {
        "bf16_gpu_slow": knowledge.tensorflow_gpu_bfloat16_slow(version) if version else None,
        "arch_list": " ".join(arches),
        "gpus_ptx_jit": sorted(set(jit)),
        "gpus_without_arch": sorted(set(without_arch)),
        "gpus_without_kernels": sorted(set(without_kernels)),
        "gpus_ptx_unknown": sorted(set(unknown)),
    }


def _newest_major(arches: list[str]) -> int:
    # "sm_86" -> 8; a name without a number counts for nothing.
    numbers = [whole_or_none(name.rpartition("_")[2][:-1]) for name in arches]
    return max((number for number in numbers if number is not None), default=0)
