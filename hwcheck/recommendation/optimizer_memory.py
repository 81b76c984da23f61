"""The optimizer's memory for `hwcheck fit`: its state for what trains (every parameter, or LoRA's
adapters), in the dtype the optimizer keeps it, and the temporaries its step makes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwcheck import knowledge
from hwcheck.recommendation.finetune import trainable
from hwcheck.recommendation.model_layout import elements
from hwcheck.recommendation.sharding import partition

if TYPE_CHECKING:
    from hwcheck.recommendation.memory_plan import Plan
    from hwcheck.recommendation.model_layout import ModelShape


def optimizer_bytes(shape: ModelShape, optimizer: str, sixteen: bool = False) -> int:
    """The optimizer state for the whole model, in bytes (exact where every tensor's shape is
    known); `sixteen`: 16-bit parameters, whose state torch's optimizers keep in 16 bits too."""
    state = knowledge.optimizer_state(optimizer)
    if state.get("factored"):
        if shape.groups is None:
            return 0  # row and column vectors: a few bytes per row, nothing next to the weights
        rows_and_columns = sum(
            count * 4 * (sum(s[:-1]) + s[-1] if len(s) >= 2 else s[0]) for s, count in shape.groups
        )
        return rows_and_columns + state["per_tensor"] * (shape.tensors or 0)
    per_element, per_tensor = state["per_element"], state["per_tensor"]
    if sixteen and state.get("state_follows_parameters"):
        per_element //= 2
    small = state.get("min_8bit_size")
    if shape.groups is None:
        return per_element * shape.parameters
    total = 0
    for tensor, count in shape.groups:
        size = elements(tensor)
        bytes_each = state["small_per_element"] if small and size < small else per_element
        total += (bytes_each * size + per_tensor) * count
    return total


def optimizer_step(shape: ModelShape, plan: Plan, freed: int) -> int:
    """What torch's optimizer step allocates beyond the activations (`freed` bytes) the backward
    pass let go before it: the peak is the larger of the two."""
    if plan.zero is not None or plan.offload or plan.fsdp_offload:
        return 0  # DeepSpeed steps flat partitions in place (or on the CPU); FSDP's offload on the CPU
    state = knowledge.optimizer_state(plan.optimizer)
    per_element = state.get("step_temporary_per_element", 0)
    if plan.holding == "pure16" and state.get("state_follows_parameters"):
        per_element //= 2  # the temporaries are the state's dtype
    trained = trainable(shape, plan)
    shards = max(partition(plan)["optimizer"], 1) if plan.fsdp else 1
    # An unknown runtime is taken for CUDA's, as its context is.
    foreach = (
        plan.on_gpu and (plan.runtime or "cuda") in knowledge.load("memory")["runtime"]["foreach_runtimes"]
    )
    if foreach and not plan.step_in_backward:
        # One foreach kernel over every (local) parameter.
        temporaries = per_element * -(-trained.parameters // shards)
    else:  # parameter by parameter: the largest parameter's temporaries are the peak
        largest = trained.largest_tensor or 0
        temporaries = per_element * state.get("single_tensor_step_temporaries", 0) * largest
    return max(temporaries - freed, 0)
