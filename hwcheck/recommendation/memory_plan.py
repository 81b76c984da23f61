"""What `hwcheck fit` is asked about: how the model would be trained (Plan), the host's memory,
and the parts its model states are counted in. Shared by the estimate (fit.py), DeepSpeed's
accounting (deepspeed_estimator.py) and the activations (activations.py), which import it one way.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwcheck.base.records import NamedTuple

# The model states per device, in the order they are shown: with LoRA the trainable weights are
# the adapters' and the frozen base is its own part; a quantized base adds the one layer's weight
# dequantized at a time; FSDP the wrapped units' parameters gathered whole.
STATES = (
    "weights",
    "frozen_weights",
    "working_copy",
    "dequantized",
    "gathered",
    "gradients",
    "float32_gradients",
    "optimizer",
    "master_weights",
)
# The states ZeRO-Offload (or FSDP's CPU offload) keeps on the host.
HOST_PARTS = ("weights", "frozen_weights", "gradients", "float32_gradients", "optimizer", "master_weights")
# PyTorch FSDP's sharding strategies (FSDP2's fully_shard is full_shard).
FSDP_STRATEGIES = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard")
# The frozen base's quantizations: bitsandbytes' 4-bit (NF4 or FP4) and LLM.int8.
QUANTIZATIONS = ("4bit", "8bit")
# --lora-targets' words beside module names: every attention projection, every linear layer.
LORA_TARGET_WORDS = ("attention", "all-linear")


@dataclass(frozen=True)
class FineTune:
    """Parameter-efficient fine-tuning: LoRA adapters of `lora_rank` on `lora_targets` (PEFT's
    target_modules: "attention", "all-linear" or module names) over a frozen base, which may be
    quantized (`quantize` "4bit" or "8bit"); rank None: every parameter trains."""

    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = ("attention",)
    lora_dropout: bool = False  # LoraConfig(lora_dropout > 0): each adapter keeps its dropped-out input
    # The adapters in 16 bits (the QLoRA paper's qlora.py and axolotl cast them to bfloat16);
    # False: float32, PEFT's default (autocast_adapter_dtype=True) on a 16-bit base.
    adapters_16bit: bool = False
    quantize: str | None = None
    quant_type: str = "nf4"  # bnb_4bit_quant_type: nf4 or fp4 (the same memory)
    double_quant: bool = True  # bnb_4bit_use_double_quant: the absmax constants quantized too

    @property
    def lora(self) -> bool:
        """Whether adapters train on a frozen base."""
        return self.lora_rank is not None


@dataclass(frozen=True)
class Plan:
    """How the model would be trained: precision, optimizer, GPUs, ZeRO, offload, batch."""

    policy: str = "mixed_bfloat16"
    optimizer: str = "adamw"
    gpus: int = 1
    zero: int | None = None  # None: plain data parallel (PyTorch autocast); 0-3: DeepSpeed's ZeRO
    offload: bool = False  # the optimizer state (with the master weights and fp32 gradients) on the CPU
    batch: int = 1
    seq_len: int = 2048
    checkpointing: bool = False
    offload_params: bool = False  # ZeRO-3 only: the 16-bit parameters on the CPU too
    gpus_per_node: int | None = None  # None: every GPU on one node
    accounting: str = "hwcheck"  # or "deepspeed": model states as DeepSpeed 0.19's estimators count them
    headroom: float | None = None  # share of the allocated bytes kept for fragmentation (None: the table's)
    on_gpu: bool = True  # the device is a GPU: its runtime's context is counted
    runtime: str | None = "cuda"  # what drives the GPUs (Device.runtime); None: not known
    finetune: FineTune = FineTune()  # LoRA / QLoRA; the default trains every parameter
    fsdp: str | None = None  # PyTorch FSDP's sharding strategy (FSDP_STRATEGIES); None: not FSDP
    fsdp_offload: bool = False  # FSDP's CPUOffload(offload_params=True)
    pure_16bit: bool = False  # weights, gradients and optimizer states in 16 bits (bf16-true)
    step_in_backward: bool = False  # the optimizer step fused into the backward pass
    grad_accum: int = 1  # gradient accumulation steps: the same memory

    @property
    def holding(self) -> str:
        """How the weights are held: float32, pure16 (every state 16-bit), autocast (PyTorch AMP,
        and FSDP's float32 shards with 16-bit compute) or master (DeepSpeed's 16-bit + fp32)."""
        if self.policy == "float32":
            return "float32"
        if self.pure_16bit:
            return "pure16"
        return "autocast" if self.zero is None else "master"

    @property
    def shards(self) -> int:
        """Over how many GPUs FSDP shards the states (1: not sharded)."""
        if self.fsdp in ("full_shard", "shard_grad_op"):
            return self.gpus
        if self.fsdp == "hybrid_shard":
            return self.per_node  # sharded within a node, replicated across nodes
        return 1

    @property
    def per_node(self) -> int:
        """The GPUs of one node (each node's host memory serves these)."""
        return min(self.gpus_per_node or self.gpus, self.gpus)

    @property
    def nodes(self) -> int:
        """The nodes the GPUs span."""
        return -(-self.gpus // self.per_node)


class HostMemory(NamedTuple):
    """A node's memory as far as known: what the process may hold and what is free now (bytes)."""

    total: int | None = None
    available: int | None = None
    source: str = "unknown"


def split_share(value: int, parts: int) -> int:
    """One GPU's share of `value` bytes split `parts` ways, rounded up."""
    return -(-value // parts)  # each GPU holds its share, rounded up
