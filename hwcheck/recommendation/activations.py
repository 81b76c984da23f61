"""Activations for `hwcheck fit`: what one GPU keeps for the backward pass of one micro-batch,
term by term as Korthikanti et al. 2022 count them, with what PyTorch and transformers really
keep (float32 norm inputs, Python-written GELU and RMSNorm, the loss's float32 tensors)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwcheck import knowledge

if TYPE_CHECKING:
    from hwcheck.recommendation.fit import Plan
    from hwcheck.recommendation.model_layout import ModelShape, Transformer


def activations(shape: ModelShape, plan: Plan) -> int | None:
    """What one GPU keeps for the backward pass of one micro-batch, in bytes (None: shape unknown)."""
    model = shape.transformer
    if model is None:
        return None
    size = knowledge.memory_holding(plan.holding)["activation"]
    tokens = plan.batch * plan.seq_len
    math_kernel = plan.on_gpu and size == 4 and model.kv_heads < model.heads
    layer = _layer_bytes(model, tokens, plan.batch, plan.seq_len, size, math_kernel)
    cross = model.cross_attention_layers * _attention_bytes(model, tokens, plan.batch, plan.seq_len, size)
    if plan.checkpointing:
        # Each layer keeps its input; one layer's activations live again while it is recomputed.
        layers = (
            model.layers * size * tokens * model.hidden
            + layer
            + (cross and cross // max(model.cross_attention_layers, 1))
        )
    else:
        layers = model.layers * layer + cross
    # Embedding dropout mask, the final norm, the LM head's input, and the float32 log-softmax
    # the loss keeps (the 16-bit logits autocast makes and their float32 cast are not saved).
    norm = _norm_bytes(model)
    ends = (1 if model.dropout else 0) * tokens * model.hidden + norm * tokens * model.hidden
    if model.vocab:
        ends += size * tokens * model.hidden + 4 * tokens * model.vocab
    return layers + ends


def loss_gradients(shape: ModelShape, plan: Plan) -> int | None:
    """The float32 logits-sized gradients that live beside every saved activation as the backward
    pass starts: cross entropy's gradient into log-softmax and out of it (None: shape unknown)."""
    model = shape.transformer
    if model is None:
        return None
    tokens = plan.batch * plan.seq_len
    gradients = 2 * 4 * tokens * model.vocab
    if plan.checkpointing:
        # The layer recomputed later and these gradients are not alive at once: the larger counts
        # (activations hold the layer already).
        size = knowledge.memory_holding(plan.holding)["activation"]
        gradients = max(gradients - _layer_bytes(model, tokens, plan.batch, plan.seq_len, size), 0)
    return gradients


def _norm_bytes(model: Transformer) -> int:
    """Bytes per element a norm keeps: its float32 input (the residual stream stays float32 under
    autocast), and for RMSNorm, written in Python, its float32 normalized output too."""
    return 8 if model.rms_norm else 4


def _attention_bytes(
    model: Transformer, tokens: int, batch: int, seq_len: int, size: int, math_kernel: bool = False
) -> int:
    hidden, kv = model.hidden, model.hidden * model.kv_heads // model.heads
    mask = 1 if model.dropout else 0
    attention = size * tokens * (hidden + (hidden + kv) + kv + hidden) + mask * tokens * hidden
    if model.eager_attention:
        scores = model.heads * seq_len * seq_len * batch
        attention += size * scores + mask * (scores + size * scores)
    elif math_kernel:
        # PyTorch's SDPA has no fused float32 kernel for grouped-query attention on CUDA (flash
        # needs 16 bits, the memory-efficient kernel takes no enable_gqa): the math kernel keeps
        # the softmax of the scores.
        attention += size * model.heads * seq_len * seq_len * batch
    else:
        attention += 4 * model.heads * tokens  # the fused kernel's float32 log-sum-exp per row
    return attention


def _layer_bytes(
    model: Transformer, tokens: int, batch: int, seq_len: int, size: int, math_kernel: bool = False
) -> int:
    """One layer's saved activations, term by term as Korthikanti et al. §4.1 count them."""
    hidden = model.hidden
    mask = 1 if model.dropout else 0
    attention = _attention_bytes(model, tokens, batch, seq_len, size, math_kernel)
    if model.gated:
        mlp = size * tokens * hidden + 4 * size * tokens * model.ffn
    else:
        mlp = size * tokens * hidden + 2 * size * tokens * model.ffn
    mlp += mask * tokens * hidden
    if model.python_gelu:
        # 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))) keeps tanh's output, 0.5 * x and 1 + tanh
        # beyond its input and output; under autocast pow runs in float32 (an autocast float32
        # op), so tanh's output and 1 + tanh are float32 and only 0.5 * x is 16-bit.
        mlp += (12 if size == 4 else 10) * tokens * model.ffn
    norms = 2 * _norm_bytes(model) * tokens * hidden
    return attention + mlp + norms
