"""Activations for `hwcheck fit`: what one GPU keeps for the backward pass of one micro-batch,
term by term as Korthikanti et al. 2022 count them, with what PyTorch and transformers really
keep (float32 norm inputs, Python-written GELU and RMSNorm, the loss's float32 tensors)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwcheck import knowledge
from hwcheck.recommendation.finetune import adapter_activations, adapter_layer_share

if TYPE_CHECKING:
    from hwcheck.recommendation.memory_plan import Plan
    from hwcheck.recommendation.model_layout import ModelShape, Transformer


def activations(shape: ModelShape, plan: Plan) -> int | None:
    """What one GPU keeps for the backward pass of one micro-batch, in bytes (None: shape unknown)."""
    model = shape.transformer
    if model is None:
        return None
    size = layer_size(plan)
    tokens = plan.batch * plan.seq_len
    kernel = adapter_size(plan)  # what SDPA's kernel choice sees: autocast's 16-bit inputs
    layer = _layer_bytes(model, tokens, plan.batch, plan.seq_len, size, plan.on_gpu, kernel)
    frozen = plan.finetune.lora
    if frozen:
        layer -= _frozen_savings(model, tokens, size)
    # A decoder layer's cross-attention has its own norm (T5's EncDecAttention sublayer).
    cross = model.cross_attention_layers * (
        _attention_bytes(model, tokens, plan.batch, plan.seq_len, size, plan.on_gpu, cross=True)
        + _norm_bytes(model) * tokens * model.hidden
    )
    if plan.checkpointing:
        # Each layer keeps its input; one layer's activations live again while it is recomputed.
        layers = (
            model.layers * size * tokens * model.hidden
            + layer
            + (cross and cross // max(model.cross_attention_layers, 1))
            + adapter_layer_share(shape, plan, tokens, adapter_size(plan))
        )
    else:
        layers = model.layers * layer + cross + adapter_activations(shape, plan, tokens, adapter_size(plan))
    # Per stack (an encoder-decoder has two): the embedding's dropout mask (and T5's after its
    # final norm too) and the final norm; then the LM head's input, and the float32 log-softmax
    # the loss keeps (the 16-bit logits autocast makes and their float32 cast are not saved).
    stacks = 2 if model.cross_attention_layers else 1
    masks = 2 if model.position_bias else 1
    mask = _mask_bytes(model, size, plan.on_gpu)
    norm = _norm_bytes(model) - (4 if frozen and model.rms_norm else 0)
    ends = stacks * (masks * mask + norm) * tokens * model.hidden
    if model.vocab:
        # The LM head's input is saved for its weight's gradient: a frozen head needs none.
        ends += (0 if frozen else size * tokens * model.hidden) + 4 * tokens * model.vocab
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
        size = layer_size(plan)
        layer = _layer_bytes(model, tokens, plan.batch, plan.seq_len, size, plan.on_gpu, adapter_size(plan))
        gradients = max(gradients - layer, 0)
    return gradients


def adapter_size(plan: Plan) -> int:
    """Bytes per element of what the adapters keep: the holding's activation dtype."""
    return int(knowledge.memory_holding(plan.holding)["activation"])


def layer_size(plan: Plan) -> int:
    """Bytes per element of a layer's activations: the holding's, except on a quantized base
    under autocast, where prepare_model_for_kbit_training's float32 norms and embeddings keep the
    residual stream in float32 and bitsandbytes' layers return their input's dtype, so the
    layers compute in float32 between the adapters' 16-bit matmuls."""
    if plan.finetune.quantize is not None and plan.holding == "autocast":
        return 4
    return adapter_size(plan)


def _frozen_savings(model: Transformer, tokens: int, size: int) -> int:
    """What one layer no longer saves when its weights are frozen (LoRA's base): the inputs its
    linear layers save only for their weights' gradients (the attention's input and its output
    projection's, the MLP's input and its output projection's) and RMSNorm's normalized output,
    kept only for its weight's gradient; autograd saves what a needed gradient reads."""
    hidden = model.hidden
    saved = size * tokens * 2 * hidden + size * tokens * hidden
    if not model.experts_per_token:
        saved += size * tokens * model.ffn
    if model.rms_norm:
        saved += 2 * 4 * tokens * hidden
    return saved


def _norm_bytes(model: Transformer) -> int:
    """Bytes per element a norm keeps: its float32 input (the residual stream stays float32 under
    autocast), and for RMSNorm, written in Python, its float32 normalized output too."""
    return 8 if model.rms_norm else 4


def _mask_bytes(model: Transformer, size: int, on_gpu: bool) -> int:
    """Bytes per element of a dropout mask: a GPU's fused kernel keeps a bool mask; on the CPU
    torch's dropout multiplies by a noise tensor of the input's dtype and keeps that (aten
    Dropout.cpp: the fused kernel is for CUDA and XPU only)."""
    if not model.dropout:
        return 0
    return 1 if on_gpu else size


def _math_kernel(model: Transformer, on_gpu: bool, size: int, bias: bool) -> bool:
    """Whether PyTorch's SDPA runs its math kernel (which keeps the scores) rather than a fused one."""
    if model.eager_attention:
        return False  # transformers' own eager attention: Korthikanti's terms
    if bias:
        # T5's self-attention adds its relative position bias, a float mask that needs its
        # gradient: no fused kernel takes one (its cross-attention's bias is zeros, no gradient).
        return True
    if not on_gpu and model.scores_dropout:
        return True  # the CPU's fused (flash) kernel takes no dropout
    # PyTorch's SDPA has no fused float32 kernel for grouped-query attention on CUDA (flash needs
    # 16 bits, the memory-efficient kernel takes no enable_gqa).
    return on_gpu and size == 4 and model.kv_heads < model.heads


def _attention_bytes(
    model: Transformer,
    tokens: int,
    batch: int,
    seq_len: int,
    size: int,
    on_gpu: bool = True,
    cross: bool = False,
    kernel_size: int | None = None,
) -> int:
    hidden, kv = model.hidden, model.hidden * model.kv_heads // model.heads
    mask = _mask_bytes(model, size, on_gpu)
    scores = model.heads * seq_len * seq_len * batch
    # The QKV projection's input and the output projection's input, and the output's dropout mask.
    attention = size * tokens * 2 * hidden + mask * tokens * hidden
    if model.eager_attention:
        attention += size * tokens * (hidden + 2 * kv)  # Q, K and V
        attention += size * scores + mask * (scores + size * scores)
    elif _math_kernel(model, on_gpu, kernel_size or size, model.position_bias and not cross):
        # The math kernel computes in float32 where the mask is float32 (T5's bias) or on the
        # CPU (autocast runs SDPA there in float32; a float32 run does anyway), and keeps Q, K, V,
        # the softmax and, with dropout, its float mask and the dropped-out scores: what
        # saved_tensors_hooks shows it keeps (torch 2.13).
        compute = 4 if (model.position_bias or not on_gpu or size == 4) else size
        attention += compute * tokens * (hidden + 2 * kv)
        dropout = _mask_bytes(model, compute, on_gpu) + compute if model.scores_dropout else 0
        attention += (compute + dropout) * scores
    else:
        # Q, K, V and the kernel's own output, which it keeps for its backward beside the copy
        # the output projection reads (transposed back), and its float32 log-sum-exp per row.
        attention += size * tokens * (2 * hidden + 2 * kv)
        attention += 4 * model.heads * tokens
    return attention


def _layer_bytes(
    model: Transformer,
    tokens: int,
    batch: int,
    seq_len: int,
    size: int,
    on_gpu: bool = True,
    kernel_size: int | None = None,
) -> int:
    """One layer's saved activations, term by term as Korthikanti et al. §4.1 count them
    (`kernel_size`: the bytes of the attention kernel's inputs, where autocast casts them)."""
    hidden = model.hidden
    mask = _mask_bytes(model, size, on_gpu)
    attention = _attention_bytes(model, tokens, batch, seq_len, size, on_gpu, kernel_size=kernel_size)
    if model.experts_per_token:
        # torch._grouped_mm runs the experts in float32 under autocast too: each routed copy of
        # the token (gathered), the gate and up outputs, SiLU's input, the product, the expert's
        # output (saved_tensors_hooks, transformers 5.23).
        routed = model.experts_per_token * tokens * hidden
        mlp = size * tokens * hidden + 16 * tokens * model.ffn + 8 * routed
    elif model.gated:
        mlp = size * tokens * hidden + 4 * size * tokens * model.ffn
    else:
        mlp = size * tokens * hidden + 2 * size * tokens * model.ffn
    mlp += mask * tokens * (hidden + (model.ffn if model.inner_dropout else 0))
    if model.python_gelu:
        # 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))) keeps tanh's output, 0.5 * x and 1 + tanh
        # beyond its input and output; under autocast pow runs in float32 (an autocast float32
        # op), so tanh's output and 1 + tanh are float32 and only 0.5 * x is 16-bit.
        mlp += (12 if size == 4 else 10) * tokens * model.ffn
    norms = 2 * _norm_bytes(model) * tokens * hidden
    return attention + mlp + norms
