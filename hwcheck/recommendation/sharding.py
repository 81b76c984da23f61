"""How fit's states are split over GPUs: ZeRO's partitions and PyTorch FSDP's shards, and the
units FSDP gathers whole for their forward and backward."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hwcheck.recommendation.finetune import compute_bytes, trainable

if TYPE_CHECKING:
    from hwcheck.recommendation.memory_plan import Plan
    from hwcheck.recommendation.model_layout import ModelShape


def partition(plan: Plan) -> dict[str, int]:
    """Over how many GPUs each state is split: ZeRO 1 the optimizer's, 2 the gradients too, 3 all
    (the frozen base with them); FSDP's sharding every state alike."""
    if plan.fsdp is not None:
        return dict.fromkeys(("optimizer", "gradients", "weights"), plan.shards)
    stage, gpus = plan.zero or 0, plan.gpus
    return {
        "optimizer": gpus if stage >= 1 else 1,
        "gradients": gpus if stage >= 2 else 1,
        "weights": gpus if stage >= 3 else 1,
    }


def gathered(shape: ModelShape, plan: Plan, whole: dict[str, int]) -> int:
    """FSDP's parameters gathered whole in the compute dtype (the frozen base as it is stored):
    full_shard and hybrid_shard the root unit's (embeddings and head, never resharded) and one
    transformer layer's at a time, with that layer's unsharded gradient before its
    reduce-scatter; shard_grad_op keeps every unit gathered from the forward to the backward."""
    if plan.fsdp in (None, "no_shard") or (plan.shards <= 1 and not plan.fsdp_offload):
        return 0
    trained = trainable(shape, plan)
    compute = compute_bytes(plan)
    frozen_per_parameter = whole["frozen_weights"] / max(shape.parameters, 1)
    lora = plan.finetune.lora
    base = compute * trained.parameters + (frozen_per_parameter * shape.parameters if lora else 0)
    if plan.fsdp == "shard_grad_op" or shape.transformer is None:
        return math.ceil(base)
    model = shape.transformer
    embeddings = model.vocab * model.hidden
    root = embeddings * (2 if any(m.reads == "head" for m in shape.linears) else 1)
    layer_share = max(shape.parameters - root, 0) / max(model.layers, 1) / max(shape.parameters, 1)
    gathered = base * (root / max(shape.parameters, 1) + layer_share)
    gradient = compute * trained.parameters * (layer_share if lora else layer_share + root / shape.parameters)
    return math.ceil(gathered + gradient)
