"""What an emitted training script depends on, checked once so every template can trust it."""

from __future__ import annotations

from dataclasses import dataclass

from hwcheck.engine.outcome import DEFAULT_RUNTIME, RUNTIMES, TRAINERS
from hwcheck.recommendation import DEVICES, POLICIES

# The trainers most PyTorch users run (engine/outcome.py): each owns its loop, so none carries
# the precision guard.
FRAMEWORKS = ("keras", "keras-custom", "torch", "jax", *TRAINERS)
ZERO_STAGES = (0, 1, 2, 3)
FP8_RECIPES = ("torchao", "transformer-engine")
# Which FP8 recipes each script can carry (rules/knowledge/training.toml [fp8] cites them).
FP8_FRAMEWORKS = {"torch": FP8_RECIPES, "lightning": ("transformer-engine",), "accelerate": FP8_RECIPES}
KERAS_MAJORS = (2, 3)
# Parameter-efficient fine-tuning with PEFT: LoRA adapters on a frozen base, or QLoRA (the base
# quantized to 4-bit NF4 by bitsandbytes); the scripts that can carry it (training.toml [peft]).
PEFT_METHODS = ("lora", "qlora")
PEFT_FRAMEWORKS = ("torch", "hf-trainer", "accelerate", "lightning")
# Sequences per step in the PEFT scripts: the HF Trainer's default per_device_train_batch_size
# (transformers 5.23), a multiple of 8; --solve does not size fine-tuning.
PEFT_BATCH_SIZE = 8

DEFAULT_STEPS = 200
# A multiple of 8, like the layer widths of the example model: Tensor Cores need it.
DEFAULT_BATCH_SIZE = 64
MAX_STEPS = 10**9


@dataclass(frozen=True)
class ScriptSpec:
    """Everything a training script is emitted from; invalid values raise ValueError."""

    framework: str
    policy: str
    # The Keras scripts' target (2: tf_keras); torch and jax scripts ignore it.
    keras_major: int = 3
    device: str = "gpu"
    # What drives the target device: cuda or rocm for a GPU (PyTorch names both 'cuda'); mps,
    # xpu, tpu, cpu otherwise. None: the device's default (engine.outcome.DEFAULT_RUNTIME).
    runtime: str | None = None
    # Where the target hardware runs bfloat16 fast (CC >= 8.0 GPUs, TPUs, AMX CPUs): the guard
    # then falls back to mixed_bfloat16 rather than float32.
    has_bfloat16: bool = False
    # Whether the target GPUs have TF32 (CC >= 8.0).
    has_tf32: bool = False
    guard: bool = True
    steps: int = DEFAULT_STEPS
    batch_size: int = DEFAULT_BATCH_SIZE
    # DeepSpeed only: the ZeRO stage and whether the optimizer state is offloaded to the CPU
    # (what `hwcheck fit` says the model needs), and the GPUs one node launches on (Accelerate).
    zero_stage: int = 0
    offload: bool = False
    gpus: int = 1
    # An FP8 recipe (torchao or transformer-engine) for the linear layers, with mixed_bfloat16
    # for the rest; None: no FP8.
    fp8: str | None = None
    # "lora" or "qlora": a PEFT fine-tuning script of a small causal LM; None: the plain script.
    peft: str | None = None

    def __post_init__(self) -> None:
        _check_choice("framework", self.framework, FRAMEWORKS)
        _check_choice("policy", self.policy, POLICIES)
        _check_choice("keras_major", self.keras_major, KERAS_MAJORS)
        _check_choice("device", self.device, DEVICES)
        _check_choice("zero_stage", self.zero_stage, ZERO_STAGES)
        if self.fp8 is not None:
            _check_choice("fp8", self.fp8, FP8_FRAMEWORKS.get(self.framework, ()))
            if self.policy != "mixed_bfloat16":
                raise ValueError(
                    "an FP8 recipe keeps bfloat16 for the rest: the policy must be mixed_bfloat16"
                )
        if self.peft is not None:
            _check_choice("peft", self.peft, PEFT_METHODS)
            _check_choice("framework", self.framework, PEFT_FRAMEWORKS)
            if self.fp8 is not None:
                raise ValueError("a PEFT script carries no FP8 recipe")
        if self.runtime is None:
            # frozen: the one place the default is filled in, before anything reads it.
            object.__setattr__(self, "runtime", DEFAULT_RUNTIME[self.device])
        _check_choice("runtime", self.runtime, RUNTIMES)
        for name in ("has_bfloat16", "has_tf32", "guard", "offload"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False")
        for name in ("steps", "batch_size", "gpus"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS:
                raise ValueError(f"{name} must be a whole number from 1 to {MAX_STEPS}, not {value!r}")

    @property
    def float16(self) -> bool:
        """Whether the script trains in float16 and so needs dynamic loss scaling."""
        return self.policy == "mixed_float16"

    @property
    def uses_guard(self) -> bool:
        """Whether the script carries the precision guard (float16 loops that can change precision)."""
        return (
            self.guard
            and self.float16
            and self.peft is None
            and self.framework in ("keras-custom", "torch", "jax")
        )

    @property
    def trainer(self) -> bool:
        """Whether the script is for a trainer that owns the loop (Lightning, HF, Accelerate, DeepSpeed)."""
        return self.framework in TRAINERS

    @property
    def fallback_policy(self) -> str:
        """Where the guard goes when float16 fails."""
        return "mixed_bfloat16" if self.has_bfloat16 else "float32"


def _check_choice(name: str, value: object, choices: tuple[object, ...]) -> None:
    if value not in choices:
        expected = ", ".join(str(choice) for choice in choices)
        raise ValueError(f"unknown {name} {value!r}; expected one of {expected}")
