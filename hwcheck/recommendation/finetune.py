"""Parameter-efficient fine-tuning for `hwcheck fit`: LoRA's adapters on a frozen base, the base
in its own dtype or quantized by bitsandbytes (4-bit NF4/FP4, LLM.int8), and what the frozen base
no longer saves for the backward pass. Figures and sources: rules/knowledge/memory.toml
([lora], [quantization.*]).

What trains is a ModelShape of its own (`trainable`): the adapters' A (rank x in) and B
(out x rank) of every targeted nn.Linear, so the optimizer, gradients and master copies are
counted over it with the same code as a full fine-tune.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hwcheck import knowledge
from hwcheck.base.errors import InputError
from hwcheck.recommendation.memory_plan import LORA_TARGET_WORDS
from hwcheck.recommendation.model_layout import Linear, ModelShape

if TYPE_CHECKING:
    from hwcheck.recommendation.memory_plan import FineTune, Plan

# The tensors the attention projections read (the LoRA target "attention").
ATTENTION_READS = ("attention", "attention_output")


def compute_bytes(plan: Plan) -> int:
    """Bytes per element of the dtype the layers compute in: 4 in float32, else 2."""
    return 4 if plan.policy == "float32" else 2


def targeted(shape: ModelShape, finetune: FineTune) -> list[Linear]:
    """The nn.Linear modules LoRA's adapters wrap: every attention projection ("attention"), every
    linear layer but the output layer ("all-linear", as PEFT), or those whose module name ends
    with a name given (PEFT's target_modules); InputError when a name matches none."""
    chosen: list[Linear] = []
    for target in finetune.lora_targets:
        if target == "all-linear":
            matched = [m for m in shape.linears if m.reads != "head"]
        elif target == "attention":
            matched = [m for m in shape.linears if m.reads in ATTENTION_READS]
        else:
            matched = [m for m in shape.linears if _matches(m.name, target)]
            if not matched:
                names = ", ".join(sorted({m.name.rsplit(".", 1)[-1] for m in shape.linears}))
                raise InputError(
                    "--lora-targets",
                    f"no linear layer of this model is named {target[:40]!r}: "
                    f"its names are {names[:200]}, or {' or '.join(LORA_TARGET_WORDS)}",
                )
        chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _matches(name: str, target: str) -> bool:
    """PEFT's rule: the module's name is the target or ends with "." and the target (either way
    round, since hwcheck names modules by their last parts)."""
    return name == target or name.endswith("." + target) or target.endswith("." + name)


def trainable(shape: ModelShape, plan: Plan) -> ModelShape:
    """What trains: the whole model, or with LoRA its adapters (A: rank x in, B: out x rank)."""
    finetune = plan.finetune
    if finetune.lora_rank is None:
        return shape
    rank = finetune.lora_rank
    if not shape.linears:
        # A bare parameter count: no layers to wrap.
        raise InputError("--lora", "needs the model's layers: give --model, not --params")
    groups: dict[tuple[int, ...], int] = {}
    for module in targeted(shape, finetune):
        for tensor in ((rank, module.into), (module.out, rank)):
            groups[tensor] = groups.get(tensor, 0) + module.count
    parameters = sum(math.prod(tensor) * count for tensor, count in groups.items())
    return ModelShape(
        parameters=parameters,
        groups=tuple(groups.items()),
        matmul_parameters=parameters,
        transformer=shape.transformer,
        active_parameters=parameters,
        model_type=shape.model_type,
    )


def _quantized(shape: ModelShape, plan: Plan) -> list[Linear]:
    """The linear layers bitsandbytes quantizes: every one but the output layer."""
    if plan.finetune.quantize is None:
        return []
    return [m for m in shape.linears if m.reads != "head"]


def frozen_bytes(shape: ModelShape, plan: Plan) -> int:
    """The frozen base with LoRA, in bytes: in the compute dtype (the 16-bit model loaded for a
    mixed or pure 16-bit run, float32 for a float32 one), or quantized: bitsandbytes' 4-bit
    weights with their absmax constants (double quantization: those in 8 bits too) or int8
    weights with a float32 scale per row, the rest (embeddings, norms, biases, the output
    layer) in float32 as prepare_model_for_kbit_training casts them (16-bit in a pure run)."""
    if not plan.finetune.lora:
        return 0
    quantize = plan.finetune.quantize
    if quantize is None:
        return compute_bytes(plan) * shape.parameters
    modules = _quantized(shape, plan)
    weights = sum(m.out * m.into * m.count for m in modules)
    kept = (2 if plan.pure_16bit else 4) * (shape.parameters - weights)
    figures = knowledge.memory_quantization(quantize)
    if quantize == "8bit":
        rows = sum(m.out * m.count for m in modules)
        return kept + figures["bytes_per_weight"] * weights + figures["row_scale_bytes"] * rows
    blocks = sum(-(-m.out * m.into // figures["block"]) * m.count for m in modules)
    if plan.finetune.double_quant:
        constants = figures["double_quant_absmax_bytes"] * blocks
        constants += figures["double_quant_constant_bytes"] * -(-blocks // figures["double_quant_block"])
    else:
        constants = figures["absmax_bytes"] * blocks
    return kept + math.ceil(figures["bytes_per_weight"] * weights) + constants


def dequantized_bytes(shape: ModelShape, plan: Plan) -> int:
    """The one quantized layer's weight dequantized to the compute dtype for its matmul (forward,
    and again in the backward for the input's gradient): the largest such layer's."""
    modules = _quantized(shape, plan)
    if not modules:
        return 0
    return compute_bytes(plan) * max(m.out * m.into for m in modules)


def float32_frozen_matmul(shape: ModelShape, plan: Plan) -> int:
    """Frozen matmul weights held in float32 under autocast, whose 16-bit copies autocast keeps:
    with a quantized base, the output layer (or the tied embedding) that prepare_model_for_kbit_training
    casts to float32."""
    if plan.finetune.quantize is None or plan.holding != "autocast" or shape.transformer is None:
        return 0
    heads = [m for m in shape.linears if m.reads == "head"]
    if heads:
        return sum(m.out * m.into * m.count for m in heads)
    return shape.transformer.vocab * shape.transformer.hidden  # tied: the embedding is the head


def adapter_activations(shape: ModelShape, plan: Plan, tokens: int, size: int) -> int:
    """What the adapters keep for the backward pass over the whole network, in bytes: B's input
    (rank features a token), and A's input: under autocast each adapter casts its input to its
    float32 dtype and autocast back to 16 bits, a copy per adapter; otherwise the tensor the
    frozen layer read, once per tensor; with lora_dropout each adapter's dropped-out input and
    its mask (a noise tensor of the input's dtype on the CPU, 1 byte on a GPU)."""
    finetune = plan.finetune
    if finetune.lora_rank is None:
        return 0
    modules = targeted(shape, finetune)
    total = sum(size * tokens * finetune.lora_rank * m.count for m in modules)
    # Under autocast the adapter's input is cast (float32 adapters, or 16-bit ones reading the
    # float32 output of a quantized base's float32 norms): a copy each.
    cast = plan.holding == "autocast" and (not finetune.adapters_16bit or finetune.quantize is not None)
    copies = cast or finetune.lora_dropout
    if copies:
        total += sum(size * tokens * m.into * m.count for m in modules)
    else:
        read: dict[str, tuple[int, int]] = {}
        for m in modules:
            into, count = read.get(m.reads, (0, 0))
            read[m.reads] = (max(into, m.into), max(count, m.count))
        total += sum(size * tokens * into * count for into, count in read.values())
    if finetune.lora_dropout:
        # The dropout runs on the input cast to the adapter's dtype (float32 under autocast).
        dtype = 4 if plan.holding == "autocast" else size
        mask = 1 if plan.on_gpu else dtype
        total += sum(mask * tokens * m.into * m.count for m in modules)
    return total


def adapter_layer_share(shape: ModelShape, plan: Plan, tokens: int, size: int) -> int:
    """One transformer layer's share of the adapters' activations (what a recomputed layer adds)."""
    model = shape.transformer
    layers = max(model.layers if model else 1, 1)
    return adapter_activations(shape, plan, tokens, size) // layers
