"""`hwcheck fit`: the memory one GPU holds to train a model, against the GPUs the process sees.

Model states follow the ZeRO paper (rules/knowledge/memory.toml): weights, gradients, optimizer
state and master weights per parameter, partitioned over the GPUs by the ZeRO stage.
Activations follow Korthikanti et al. 2022, term by term, for the transformer a config
describes. Everything is in bytes, per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hwcheck import knowledge
from hwcheck.recommendation.model_shape import ModelShape, Transformer

# Categories of the per-device figures, in the order they are shown.
CATEGORIES = ("weights", "gradients", "optimizer", "master_weights", "activations")
MAX_GPUS = 100_000


@dataclass(frozen=True)
class Plan:
    """How the model would be trained: precision, optimizer, GPUs, ZeRO, batch."""

    policy: str = "mixed_bfloat16"
    optimizer: str = "adamw"
    gpus: int = 1
    zero: int | None = None  # None: plain data parallel (PyTorch autocast); 0-3: DeepSpeed's ZeRO
    offload: bool = False
    batch: int = 1
    seq_len: int = 2048
    checkpointing: bool = False

    @property
    def holding(self) -> str:
        """How the weights are held: float32, autocast (PyTorch AMP) or master (DeepSpeed's 16-bit + fp32)."""
        if self.policy == "float32":
            return "float32"
        return "autocast" if self.zero is None else "master"


def model_states(shape: ModelShape, plan: Plan) -> dict[str, int]:
    """Weights, gradients, optimizer state and master weights on one GPU, in bytes."""
    held = knowledge.memory_holding(plan.holding)
    stage = plan.zero or 0
    gpus = plan.gpus
    whole = {
        "weights": held["weights"] * shape.parameters,
        "gradients": held["gradients"] * shape.parameters,
        "optimizer": optimizer_bytes(shape, plan.optimizer),
        "master_weights": held["master_weights"] * shape.parameters,
    }
    # ZeRO stage 1 partitions the optimizer state (the master weights with it), 2 the
    # gradients too, 3 the weights too; ZeRO-Offload moves the optimizer state, the master
    # weights and the gradients to the CPU, where the optimizer steps.
    share = {
        "optimizer": 0 if plan.offload else _split(whole["optimizer"], gpus if stage >= 1 else 1),
        "master_weights": 0 if plan.offload else _split(whole["master_weights"], gpus if stage >= 1 else 1),
        "gradients": 0 if plan.offload else _split(whole["gradients"], gpus if stage >= 2 else 1),
        "weights": _split(whole["weights"], gpus if stage >= 3 else 1),
    }
    if stage == 3 and gpus > 1 and shape.shapes:
        # ZeRO-3 gathers each tensor whole for its forward and backward: the largest one, with
        # its gradient, is held in full at a time (DeepSpeed's estimator counts the same).
        largest = max(_elements(tensor) for tensor in shape.shapes)
        share["weights"] += held["weights"] * largest
        share["gradients"] += held["gradients"] * largest
    return share


def optimizer_bytes(shape: ModelShape, optimizer: str) -> int:
    """The optimizer state for the whole model, in bytes (exact where every tensor's shape is known)."""
    state = knowledge.optimizer_state(optimizer)
    if state.get("factored"):
        if shape.shapes is None:
            return 0  # row and column vectors: a few bytes per row, nothing next to the weights
        rows_and_columns = sum(4 * (sum(s[:-1]) + s[-1] if len(s) >= 2 else s[0]) for s in shape.shapes)
        return rows_and_columns + state["per_tensor"] * len(shape.shapes)
    per_element, per_tensor = state["per_element"], state["per_tensor"]
    small = state.get("min_8bit_size")
    if shape.shapes is None:
        return per_element * shape.parameters
    total = 0
    for tensor in shape.shapes:
        elements = _elements(tensor)
        bytes_each = state["small_per_element"] if small and elements < small else per_element
        total += bytes_each * elements + per_tensor
    return total


def activations(shape: ModelShape, plan: Plan) -> int | None:
    """What one GPU keeps for the backward pass of one micro-batch, in bytes (None: shape unknown)."""
    held = knowledge.memory_holding(plan.holding)
    copies = held["weight_copies"] * (shape.matmul_parameters or shape.parameters)
    if plan.zero == 3:
        copies = 0  # 16-bit weights already: nothing is cast
    model = shape.transformer
    if model is None:
        return None
    size = held["activation"]
    tokens = plan.batch * plan.seq_len
    layer = _layer_bytes(model, tokens, plan.batch, plan.seq_len, size)
    if plan.checkpointing:
        # Each layer keeps its input; one layer's activations live again while it is recomputed.
        layers = model.layers * size * tokens * model.hidden + layer
    else:
        layers = model.layers * layer
    # Embedding dropout mask, the final norm, the LM head's input, the float32 logits of the
    # loss (and under autocast the 16-bit logits the cast to float32 started from).
    ends = (1 if model.dropout else 0) * tokens * model.hidden + _norm_bytes(model) * tokens * model.hidden
    ends += size * tokens * model.hidden + 4 * tokens * model.vocab
    if size == 2:
        ends += 2 * tokens * model.vocab
    return layers + ends + copies


def _norm_bytes(model: Transformer) -> int:
    """Bytes per element a norm keeps: its float32 input (the residual stream stays float32 under
    autocast), and for Llama's RMSNorm, written in Python, its float32 normalized output too."""
    return 8 if model.gated else 4


def _layer_bytes(model: Transformer, tokens: int, batch: int, seq_len: int, size: int) -> int:
    """One layer's saved activations, term by term as Korthikanti et al. §4.1 count them."""
    hidden, kv = model.hidden, model.hidden * model.kv_heads // model.heads
    mask = 1 if model.dropout else 0
    attention = size * tokens * (hidden + (hidden + kv) + kv + hidden) + mask * tokens * hidden
    if model.eager_attention:
        scores = model.heads * seq_len * seq_len * batch
        attention += size * scores + mask * (scores + size * scores)
    else:
        attention += 4 * model.heads * tokens  # the fused kernel's float32 log-sum-exp per row
    if model.gated:
        mlp = size * tokens * hidden + 4 * size * tokens * model.ffn
    else:
        mlp = size * tokens * hidden + 2 * size * tokens * model.ffn
    mlp += mask * tokens * hidden
    norms = 2 * _norm_bytes(model) * tokens * hidden
    return attention + mlp + norms


def estimate(shape: ModelShape, plan: Plan, device_memory: int | None) -> dict[str, Any]:
    """The per-GPU figures, whether they fit in `device_memory` bytes, and what would make them fit."""
    result = _figures(shape, plan, device_memory)
    result["suggestions"] = suggestions(shape, plan, device_memory) if result["fits"] is False else []
    return result


def _figures(shape: ModelShape, plan: Plan, device_memory: int | None) -> dict[str, Any]:
    states = model_states(shape, plan)
    per_device: dict[str, int | None] = {key: states[key] for key in CATEGORIES[:-1]}
    per_device["activations"] = activations(shape, plan)
    total = sum(value or 0 for value in per_device.values())
    per_device["total"] = total
    fits = None if device_memory is None else total <= device_memory
    return {"fits": fits, "device_memory": device_memory, "per_device": per_device}


def suggestions(shape: ModelShape, plan: Plan, device_memory: int | None) -> list[dict[str, Any]]:
    """Single changes that make the model fit, cheapest first, each with its per-GPU total."""
    if device_memory is None:
        return []
    candidates: list[tuple[str, Plan]] = []
    stage = plan.zero if plan.zero is not None else -1
    # ZeRO 1 and 2 cost no more communication than data parallelism (ZeRO §7); checkpointing
    # costs a third more compute; a smaller batch fewer samples per step; ZeRO-3 half again
    # the communication; offload the CPU's speed; more GPUs more hardware.
    for zero in (1, 2):
        if stage < zero and plan.gpus > 1:
            candidates.append((f"--zero {zero}", replace(plan, zero=zero)))
    if not plan.checkpointing and shape.transformer is not None:
        candidates.append(("--checkpointing", replace(plan, checkpointing=True)))
    if plan.batch > 1 and shape.transformer is not None:
        batch = _largest_batch(shape, plan, device_memory)
        if batch:
            candidates.append((f"--batch {batch}", replace(plan, batch=batch)))
    if stage < 3 and plan.gpus > 1:
        candidates.append(("--zero 3", replace(plan, zero=3)))
    if not plan.offload:
        offloaded = replace(plan, zero=max(stage, 2 if plan.gpus > 1 else 1), offload=True)
        words = "--offload" if plan.zero else f"--zero {offloaded.zero} --offload"
        candidates.append((words, offloaded))
    gpus = _fewest_gpus(shape, replace(plan, zero=3), device_memory)
    if gpus and gpus > plan.gpus:
        candidates.append((f"--gpus {gpus} --zero 3", replace(plan, gpus=gpus, zero=3)))
    found = []
    for change, changed in candidates:
        figures = _figures(shape, changed, device_memory)
        if figures["fits"]:
            found.append({"change": change, "total": figures["per_device"]["total"]})
    return found


def _largest_batch(shape: ModelShape, plan: Plan, device_memory: int) -> int | None:
    low, high = 0, plan.batch - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _figures(shape, replace(plan, batch=middle), device_memory)["fits"]:
            low = middle
        else:
            high = middle - 1
    return low or None


def _fewest_gpus(shape: ModelShape, plan: Plan, device_memory: int) -> int | None:
    if not _figures(shape, replace(plan, gpus=MAX_GPUS), device_memory)["fits"]:
        return None
    low, high = 1, MAX_GPUS
    while low < high:
        middle = (low + high) // 2
        if _figures(shape, replace(plan, gpus=middle), device_memory)["fits"]:
            high = middle
        else:
            low = middle + 1
    return low


def _split(value: int, parts: int) -> int:
    return -(-value // parts)  # each GPU holds its share, rounded up


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def zero_needed(shape: ModelShape, plan: Plan, device_memory: int) -> tuple[int, bool, bool]:
    """The lowest ZeRO stage (then with offload) under which `plan` fits: (stage, offload, fits).

    Stages cost more communication as they go up and offload costs the CPU's speed, so the
    first that fits is the cheapest; when none does, (3, True, False).
    """
    for stage, offload in ((0, False), (1, False), (2, False), (3, False), (1, True), (2, True), (3, True)):
        if _figures(shape, replace(plan, zero=stage, offload=offload), device_memory)["fits"]:
            return stage, offload, True
    return 3, True, False
