"""The engine's vocabulary: policy names, devices, severities, and the Finding and Reason it emits."""

from __future__ import annotations

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


POLICIES = ("mixed_float16", "mixed_bfloat16", "float32")
# gpu: NVIDIA or AMD (CUDA or ROCm, see RUNTIMES); mps: Apple's GPU through Metal; xpu: Intel's GPUs
# through SYCL / Level Zero.
DEVICES = ("gpu", "cpu", "tpu", "mps", "xpu")
# The runtime that drives the device: a GPU is CUDA's or ROCm's (a rule may name it; else by device).
RUNTIMES = ("cuda", "rocm", "mps", "xpu", "tpu", "cpu")
DEFAULT_RUNTIME = {"gpu": "cuda", "mps": "mps", "xpu": "xpu", "tpu": "tpu", "cpu": "cpu"}
SEVERITIES = ("info", "warning", "error")
# What a training script uses; the backend is the runtime that executes it (Keras 3 has three).
# The trainers people run PyTorch through: advised as PyTorch, in the trainer's own words.
TRAINERS = ("lightning", "hf-trainer", "accelerate", "deepspeed")
FRAMEWORKS = ("keras", "tensorflow", "torch", "jax", *TRAINERS)
BACKENDS = ("tensorflow", "torch", "jax")
# The dtype the matrix math runs in under each policy (parameters stay float32 in all three).
COMPUTE_DTYPES = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16", "float32": "float32"}
PREFERENCES = ("float16", "bfloat16")
# The precisions hwcheck doctor --measure may bench to decide (hwcheck bench's variant names).
MEASURABLE = ("float32", "float32+tf32", "mixed_bfloat16", "mixed_float16")


def runtime_framework(framework: str) -> str:
    """The framework whose runtime, builds and bench results the advice rests on (a trainer: torch)."""
    return "torch" if framework in TRAINERS else framework


# NamedTuples rather than dataclasses: importing dataclasses costs doctor ~7 ms.
class Finding(NamedTuple):
    """Something worth knowing about the machine, with what to do about it."""

    id: str
    severity: str
    message: str
    remedy: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The finding as it appears in a JSON report."""
        return self._asdict()


class Reason(NamedTuple):
    """A fact-citing sentence explaining why the policy was chosen."""

    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The reason as it appears in a JSON report."""
        return self._asdict()


def decision_of(policy: str, device: str, tf32: bool, runtime: str | None = None) -> dict[str, Any]:
    """The decision finding rules read (and the native lines are written from)."""
    return {
        "policy": policy,
        "device": device,
        "runtime": runtime or DEFAULT_RUNTIME.get(device, device),
        "loss_scaling": policy == "mixed_float16",
        "compute_dtype": COMPUTE_DTYPES[policy],
        "tf32": tf32,
        # The precision as hwcheck bench names it (float32 with TF32 is a variant of its own).
        "variant": "float32+tf32" if policy == "float32" and tf32 else policy,
    }
