"""What `hwcheck fit` is asked about: how the model would be trained (Plan), the host's memory,
and the parts its model states are counted in. Shared by the estimate (fit.py), DeepSpeed's
accounting (deepspeed_estimator.py) and the activations (activations.py), which import it one way.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwcheck.base.records import NamedTuple

# The model states per device, in the order they are shown.
STATES = ("weights", "working_copy", "gradients", "float32_gradients", "optimizer", "master_weights")
# The states ZeRO-Offload keeps on the host.
HOST_PARTS = ("weights", "float32_gradients", "optimizer", "master_weights")


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

    @property
    def holding(self) -> str:
        """How the weights are held: float32, autocast (PyTorch AMP) or master (DeepSpeed's 16-bit + fp32)."""
        if self.policy == "float32":
            return "float32"
        return "autocast" if self.zero is None else "master"

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
