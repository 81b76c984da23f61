"""A model's size and shape for `hwcheck fit`: from a parameter count, or a Hugging Face config.json.

Two families are laid out tensor by tensor, as transformers builds them: GPT-2 style (learned
positions, LayerNorm, biases, a GELU MLP, tied embeddings) and Llama style (rotary positions,
RMSNorm, no biases, a gated SiLU MLP, grouped-query attention). Other model types are refused
with the reason; `--params` covers any model without activations.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DIMENSION = 10**7
GPT2_STYLE = ("gpt2",)
LLAMA_STYLE = ("llama", "mistral", "qwen2", "qwen3")


@dataclass(frozen=True)
class Transformer:
    """What the activation formula needs of a decoder-only transformer."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    gated: bool  # a gated MLP (SiLU(gate) * up), else one activation between two linears
    dropout: bool  # whether training applies dropout (its masks are kept for the backward pass)
    eager_attention: bool  # the s x s attention scores are kept (not a fused/flash kernel)
    max_positions: int  # the longest sequence it takes (2048 when the config does not say)


@dataclass(frozen=True)
class ModelShape:
    """The parameters: their count, and where known every tensor's shape and the transformer."""

    parameters: int
    shapes: tuple[tuple[int, ...], ...] | None = None
    # Parameters a matmul reads: autocast keeps a 16-bit copy of each for the backward pass.
    matmul_parameters: int | None = None
    transformer: Transformer | None = None

    @property
    def tensors(self) -> int | None:
        """How many parameter tensors (None when only the count is known)."""
        return None if self.shapes is None else len(self.shapes)


def from_count(parameters: int) -> ModelShape:
    """A model known only by its parameter count."""
    return ModelShape(parameters=parameters)


def from_config_file(path: str | Path) -> ModelShape:
    """The shape a Hugging Face config.json describes; InputError naming --model when it cannot."""
    from hwcheck.base.inputs import read_json

    source = f"--model {path}"
    try:
        # The one JSON reader: finite numbers only, nesting bounded, so no RecursionError escapes.
        config = read_json(path, max_bytes=MAX_CONFIG_BYTES)
    except InputError as error:
        raise InputError(source, error.problem) from None
    if not isinstance(config, dict):
        raise InputError(source, "not a model config: expected a JSON object")
    return from_config(config, source)


def from_config(config: dict[str, Any], source: str = "--model") -> ModelShape:
    """The shape of the transformers model `config` describes, tensor by tensor."""
    model_type = str(config.get("model_type") or "")
    if model_type not in (*GPT2_STYLE, *LLAMA_STYLE):
        known = ", ".join((*GPT2_STYLE, *LLAMA_STYLE))
        raise InputError(
            source, f"model_type {model_type[:40]!r} is not one hwcheck lays out ({known}); use --params N"
        )
    gpt2 = model_type in GPT2_STYLE
    hidden = _dimension(config, source, ("n_embd", "hidden_size") if gpt2 else ("hidden_size",))
    layers = _dimension(config, source, ("n_layer", "num_hidden_layers") if gpt2 else ("num_hidden_layers",))
    heads = _dimension(
        config, source, ("n_head", "num_attention_heads") if gpt2 else ("num_attention_heads",)
    )
    vocab = _dimension(config, source, ("vocab_size",))
    if hidden % heads:
        raise InputError(source, f"hidden size {hidden} is not a multiple of the {heads} attention heads")
    kv_heads = heads if gpt2 else _dimension(config, source, ("num_key_value_heads",), default=heads)
    head_dim = (
        _dimension(config, source, ("head_dim",), default=hidden // heads) if not gpt2 else hidden // heads
    )
    if gpt2:
        ffn = _dimension(config, source, ("n_inner",), default=4 * hidden)
        positions = _dimension(config, source, ("n_positions", "max_position_embeddings"), default=1024)
        shapes = _gpt2_shapes(hidden, layers, ffn, vocab, positions)
        dropout = any(_positive(config.get(key)) for key in ("resid_pdrop", "embd_pdrop", "attn_pdrop"))
        tied = config.get("tie_word_embeddings", True) is not False
    else:
        ffn = _dimension(config, source, ("intermediate_size",))
        positions = _dimension(config, source, ("max_position_embeddings",), default=2048)
        tied = config.get("tie_word_embeddings") is True
        shapes = _llama_shapes(hidden, layers, heads * head_dim, kv_heads * head_dim, ffn, vocab, tied)
        shapes = (*shapes, *_llama_biases(config, heads * head_dim, kv_heads * head_dim, layers))
        dropout = _positive(config.get("attention_dropout"))
    parameters = sum(_elements(shape) for shape in shapes)
    # Every matrix but the embedding tables is a matmul weight; a tied table is the LM head too.
    embedding = vocab * hidden + (positions * hidden if gpt2 else 0)
    matmul = sum(_elements(s) for s in shapes if len(s) == 2) - embedding + (vocab * hidden if tied else 0)
    transformer = Transformer(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        vocab=vocab,
        gated=not gpt2,
        dropout=dropout,
        eager_attention=str(config.get("_attn_implementation") or config.get("attn_implementation"))
        == "eager",
        max_positions=positions,
    )
    return ModelShape(parameters, shapes, matmul, transformer)


def _gpt2_shapes(
    hidden: int, layers: int, ffn: int, vocab: int, positions: int
) -> tuple[tuple[int, ...], ...]:
    layer = [
        (hidden,), (hidden,),  # ln_1
        (hidden, 3 * hidden), (3 * hidden,),  # attn.c_attn
        (hidden, hidden), (hidden,),  # attn.c_proj
        (hidden,), (hidden,),  # ln_2
        (hidden, ffn), (ffn,),  # mlp.c_fc
        (ffn, hidden), (hidden,),  # mlp.c_proj
    ]  # fmt: skip
    # wte, wpe, the layers, ln_f; lm_head is wte (tied).
    return ((vocab, hidden), (positions, hidden), *(layer * layers), (hidden,), (hidden,))


def _llama_shapes(
    hidden: int, layers: int, q: int, kv: int, ffn: int, vocab: int, tied: bool
) -> tuple[tuple[int, ...], ...]:
    layer = [
        (q, hidden), (kv, hidden), (kv, hidden), (hidden, q),  # q, k, v, o projections
        (ffn, hidden), (ffn, hidden), (hidden, ffn),  # gate, up, down
        (hidden,), (hidden,),  # input and post-attention RMSNorm
    ]  # fmt: skip
    head = () if tied else ((vocab, hidden),)
    return ((vocab, hidden), *(layer * layers), (hidden,), *head)


def _llama_biases(config: dict[str, Any], q: int, kv: int, layers: int) -> tuple[tuple[int, ...], ...]:
    # Qwen2 puts biases on q, k and v; attention_bias does so on all four projections.
    if config.get("model_type") == "qwen2":
        return ((q,), (kv,), (kv,)) * layers
    if config.get("attention_bias") is True:
        return ((q,), (kv,), (kv,), (config.get("hidden_size") or 0,)) * layers
    return ()


def _dimension(config: dict[str, Any], source: str, keys: tuple[str, ...], default: int | None = None) -> int:
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSION:
            raise InputError(
                source, f"{key} must be a whole number from 1 to {MAX_DIMENSION}, not {value!r:.40}"
            )
        return value
    if default is not None:
        return default
    raise InputError(source, f"the config has no {' or '.join(keys)}: hwcheck cannot size the model")


def _positive(value: Any) -> bool:
    """Whether `value` is a number above zero; compared as it is, since float(10**400) overflows."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
