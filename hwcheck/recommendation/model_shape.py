"""A model's size and shape for `hwcheck fit`: from a parameter count, or a Hugging Face config.json.

Each family is laid out tensor by tensor as transformers 5.23 builds it (the module names are in
the comments), with every distinct tensor shape kept once with its count: a model of ten million
identical layers costs the same few entries as one of two, so `fit` runs in time linear in the
distinct shapes, not the layers. Decoders (GPT-2, GPT-NeoX, Llama, Mistral, Qwen2/3, Gemma 1-3,
Phi, Phi-3, Falcon) are the causal-LM models (`AutoModelForCausalLM`), mixtures of experts
(Mixtral, Qwen2-MoE, Qwen3-MoE) hold every expert, encoders (BERT, RoBERTa) and ViT are the base
model with its pooler (`AutoModel`), T5 is `T5ForConditionalGeneration`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DIMENSION = 10**7
MAX_PARAMETERS = 10**15
GPT2_STYLE = ("gpt2",)
LLAMA_STYLE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3")
MOE_STYLE = ("mixtral", "qwen2_moe", "qwen3_moe")
OTHER_DECODERS = ("gpt_neox", "phi", "falcon")
ENCODERS = ("bert", "roberta")
MODEL_TYPES = (*GPT2_STYLE, *LLAMA_STYLE, *OTHER_DECODERS, *MOE_STYLE, *ENCODERS, "t5", "vit")
# The head size a family's config class uses when the config leaves head_dim out.
HEAD_DIM_DEFAULT = {"qwen3": 128, "qwen3_moe": 128, "gemma": 256, "gemma2": 256, "gemma3_text": 256}
# Whether a family's config class ties the LM head to the embedding when the config does not say.
TIED_DEFAULT = {"gpt2": True, "gemma": True, "gemma2": True, "gemma3_text": True, "falcon": True, "t5": True}

Shapes = tuple[tuple[tuple[int, ...], int], ...]


@dataclass(frozen=True)
class Transformer:
    """What the activation formula needs of a transformer (per token, per layer)."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int  # the MLP width one token passes through (a mixture of experts: its active experts')
    vocab: int  # the logits the loss keeps per token (0: a base model without an LM head)
    gated: bool  # a gated MLP (act(gate) * up), else one activation between two linears
    dropout: bool  # whether training applies dropout (its masks are kept for the backward pass)
    eager_attention: bool  # the s x s attention scores are kept (not a fused/flash kernel)
    max_positions: int  # the longest sequence it takes (2048 when the config does not say)
    rms_norm: bool = False  # RMSNorm, written in Python: it keeps its float32 output too
    cross_attention_layers: int = 0  # decoder layers of an encoder-decoder: one more attention each
    # transformers' NewGELUActivation ("gelu_new", GPT-2's and Phi's default), written in Python:
    # each op saves what its backward reads (see fit._layer_bytes).
    python_gelu: bool = False


@dataclass(frozen=True)
class ModelShape:
    """The parameters: their count, and where known every distinct tensor shape and the transformer."""

    parameters: int
    # Each distinct parameter shape once, with how many tensors have it.
    groups: Shapes | None = None
    # Parameters a matmul reads: autocast keeps a 16-bit copy of each for the backward pass.
    matmul_parameters: int | None = None
    transformer: Transformer | None = None
    # Parameters one token passes through (a mixture of experts routes it to a few experts).
    active_parameters: int | None = None
    model_type: str | None = None

    @property
    def tensors(self) -> int | None:
        """How many parameter tensors (None when only the count is known)."""
        return None if self.groups is None else sum(count for _, count in self.groups)

    @property
    def largest_tensor(self) -> int | None:
        """The elements of the largest parameter tensor (None when only the count is known)."""
        return None if not self.groups else max(elements(shape) for shape, _ in self.groups)


class Layout:
    """Parameter shapes with their counts, and the elements that matmuls read."""

    def __init__(self) -> None:
        self.counts: dict[tuple[int, ...], int] = {}
        self.matmul = 0

    def add(self, shape: tuple[int, ...], count: int = 1) -> None:
        """`count` tensors of `shape`."""
        if count > 0:
            self.counts[shape] = self.counts.get(shape, 0) + count

    def linear(self, out: int, into: int, bias: bool, count: int = 1) -> None:
        """`count` nn.Linear(into, out) layers: weight (out, into), and a bias (out,) where `bias`."""
        self.add((out, into), count)
        if bias:
            self.add((out,), count)
        self.matmul += out * into * count

    def norm(self, size: int, bias: bool, count: int = 1) -> None:
        """`count` LayerNorm (weight and bias) or RMSNorm (weight only) layers of `size`."""
        self.add((size,), count * (2 if bias else 1))

    @property
    def parameters(self) -> int:
        """Every element."""
        return sum(elements(shape) * count for shape, count in self.counts.items())

    def groups(self) -> Shapes:
        """The shapes with their counts, in the order first added."""
        return tuple(self.counts.items())


def from_count(parameters: int) -> ModelShape:
    """A model known only by its parameter count."""
    return ModelShape(parameters=parameters)


def from_config_file(path: str | Path, source: str | None = None) -> ModelShape:
    """The shape a Hugging Face config.json describes; InputError naming --model when it cannot."""
    from hwcheck.base.inputs import read_json

    source = source or f"--model {path}"
    try:
        # The one JSON reader: finite numbers only, nesting bounded, so no RecursionError escapes.
        config = read_json(path, max_bytes=MAX_CONFIG_BYTES)
    except InputError as error:
        raise InputError(source, error.problem) from None
    if not isinstance(config, dict):
        raise InputError(source, "not a model config: expected a JSON object")
    return from_config(config, source)


def from_model(text: str) -> ModelShape:
    """The shape of `--model TEXT`: a config file, a model directory or a Hugging Face model id."""
    from hwcheck.recommendation.model_source import config_path

    path = config_path(text)
    # A config found in a folder or the Hugging Face cache is named too: the read that failed is its.
    return from_config_file(path, f"--model {text}" if str(path) == text else f"--model {text} ({path})")


def from_config(config: dict[str, Any], source: str = "--model") -> ModelShape:
    """The shape of the transformers model `config` describes, tensor shape by tensor shape."""
    model_type = str(config.get("model_type") or "")
    if model_type not in MODEL_TYPES and isinstance(config.get("text_config"), dict):
        config = config["text_config"]  # a multimodal wrapper: its language model
        model_type = str(config.get("model_type") or "")
    if model_type not in MODEL_TYPES:
        raise InputError(
            source,
            f"model_type {model_type[:40]!r} is not one hwcheck lays out ({', '.join(MODEL_TYPES)}); "
            "use --params N",
        )
    reader = Reader(config, source)
    if model_type in (*GPT2_STYLE, *LLAMA_STYLE, *OTHER_DECODERS, *MOE_STYLE):
        return _decoder(reader, model_type)
    from hwcheck.recommendation import model_families

    return model_families.LAYOUTS[model_type](reader, model_type)


class Reader:
    """Whole-number fields of a config, each checked, with the source named on a bad one."""

    def __init__(self, config: dict[str, Any], source: str) -> None:
        self.config, self.source = config, source

    def number(self, *keys: str, default: int | None = None) -> int:
        """The first of these fields the config sets, checked; `default` when none is (else an error)."""
        for key in keys:
            value = self.config.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSION:
                raise InputError(
                    self.source, f"{key} must be a whole number from 1 to {MAX_DIMENSION}, not {value!r:.40}"
                )
            return value
        if default is not None:
            return default
        raise InputError(self.source, f"the config has no {' or '.join(keys)}: hwcheck cannot size the model")

    def flag(self, key: str, default: bool) -> bool:
        """The field when the config sets it to true or false, else `default`."""
        value = self.config.get(key)
        return value if isinstance(value, bool) else default

    def positive(self, *keys: str) -> bool:
        """Whether any of these (dropout probabilities) is above zero."""
        return any(_positive(self.config.get(key)) for key in keys)

    def heads(self, hidden: int, *keys: str) -> int:
        """The attention heads, which must divide the hidden size unless the config sets head_dim."""
        heads = self.number(*keys)
        if hidden % heads and self.config.get("head_dim") is None:
            raise InputError(
                self.source, f"hidden size {hidden} is not a multiple of the {heads} attention heads"
            )
        return heads

    def eager(self) -> bool:
        """Whether the config asks for eager attention (which holds the attention matrix)."""
        implementation = self.config.get("_attn_implementation") or self.config.get("attn_implementation")
        return str(implementation) == "eager"


def build(
    layout: Layout,
    transformer: Transformer,
    embedding: int,
    tied: bool,
    model_type: str,
    source: str,
    inactive: int = 0,
) -> ModelShape:
    """The ModelShape of a finished layout; InputError past MAX_PARAMETERS."""
    parameters = layout.parameters
    if parameters > MAX_PARAMETERS:
        raise InputError(
            source, f"the config describes {parameters:.3g} parameters, above {MAX_PARAMETERS:.0e}"
        )
    # A tied embedding table is the LM head's matmul weight too.
    matmul = layout.matmul + (embedding if tied else 0)
    return ModelShape(parameters, layout.groups(), matmul, transformer, parameters - inactive, model_type)


def _decoder(read: Reader, model_type: str) -> ModelShape:
    """The causal-LM decoders: GPT-2, GPT-NeoX, the Llama family, Phi, Falcon and the MoE models."""
    gpt2 = model_type == "gpt2"
    hidden = read.number("n_embd", "hidden_size") if gpt2 else read.number("hidden_size")
    layers = read.number("n_layer", "num_hidden_layers") if gpt2 else read.number("num_hidden_layers")
    heads = (
        read.heads(hidden, "n_head", "num_attention_heads")
        if gpt2
        else read.heads(hidden, "num_attention_heads")
    )
    vocab = read.number("vocab_size")
    head_dim = read.number("head_dim", default=HEAD_DIM_DEFAULT.get(model_type, hidden // heads))
    kv_heads = heads if gpt2 else read.number("num_key_value_heads", "num_kv_heads", default=heads)
    q, kv = heads * head_dim, kv_heads * head_dim
    tied = read.flag("tie_word_embeddings", TIED_DEFAULT.get(model_type, False))
    layout = Layout()
    layout.add((vocab, hidden))  # the token embedding
    positions = read.number("n_positions", "max_position_embeddings", default=1024 if gpt2 else 2048)
    gated, rms, ffn_active, inactive = True, True, 0, 0
    dropout = read.positive("attention_dropout")
    if gpt2:
        ffn = read.number("n_inner", default=4 * hidden)
        layout.add((positions, hidden))  # wpe
        layout.norm(hidden, True, 2 * layers)  # ln_1, ln_2
        layout.linear(3 * hidden, hidden, True, layers)  # attn.c_attn (a Conv1D: the same elements)
        layout.linear(hidden, hidden, True, layers)  # attn.c_proj
        layout.linear(ffn, hidden, True, layers)  # mlp.c_fc
        layout.linear(hidden, ffn, True, layers)  # mlp.c_proj
        layout.norm(hidden, True)  # ln_f
        gated, rms = False, False
        dropout = read.positive("resid_pdrop", "embd_pdrop", "attn_pdrop")
    elif model_type == "gpt_neox":
        ffn = read.number("intermediate_size", default=4 * hidden)
        bias = read.flag("attention_bias", True)
        layout.norm(hidden, True, 2 * layers)  # input_layernorm, post_attention_layernorm
        layout.linear(3 * hidden, hidden, bias, layers)  # attention.query_key_value
        layout.linear(hidden, hidden, bias, layers)  # attention.dense
        layout.linear(ffn, hidden, True, layers)  # mlp.dense_h_to_4h
        layout.linear(hidden, ffn, True, layers)  # mlp.dense_4h_to_h
        layout.norm(hidden, True)  # final_layer_norm
        gated, rms = False, False
        dropout = read.positive("attention_dropout", "hidden_dropout")
    elif model_type == "phi":
        ffn = read.number("intermediate_size", default=4 * hidden)
        layout.linear(q, hidden, True, 3 * layers)  # self_attn.q_proj, k_proj, v_proj (biased)
        layout.linear(hidden, q, True, layers)  # self_attn.dense
        if read.flag("qk_layernorm", False):
            layout.norm(head_dim, True, 2 * layers)  # q_layernorm, k_layernorm
        layout.linear(ffn, hidden, True, layers)  # mlp.fc1
        layout.linear(hidden, ffn, True, layers)  # mlp.fc2
        layout.norm(hidden, True, layers)  # input_layernorm (attention and MLP run in parallel)
        layout.norm(hidden, True)  # final_layernorm
        gated, rms = False, False
        dropout = read.positive("attention_dropout", "resid_pdrop", "embd_pdrop")
    elif model_type == "falcon":
        ffn = read.number("ffn_hidden_size", default=4 * hidden)
        bias = read.flag("bias", False)
        new = read.flag("new_decoder_architecture", False)
        if new:
            fused = q + 2 * kv
        elif read.flag("multi_query", True):
            fused, kv_heads = hidden + 2 * head_dim, 1
        else:
            fused = 3 * hidden
        layout.linear(fused, hidden, bias, layers)  # self_attention.query_key_value
        layout.linear(hidden, hidden, bias, layers)  # self_attention.dense
        layout.linear(ffn, hidden, bias, layers)  # mlp.dense_h_to_4h
        layout.linear(hidden, ffn, bias, layers)  # mlp.dense_4h_to_h
        norms_in_parallel = read.number("num_ln_in_parallel_attn", default=2 if new else 1)
        norms = norms_in_parallel if read.flag("parallel_attn", True) else 2
        layout.norm(hidden, True, norms * layers)  # input_layernorm (and post_attention) or ln_attn, ln_mlp
        layout.norm(hidden, True)  # ln_f
        gated, rms = False, False
        dropout = read.positive("attention_dropout", "hidden_dropout")
    else:
        ffn = read.number("intermediate_size")
        attention_bias = read.flag("attention_bias", False)
        if model_type == "phi3":
            layout.linear(q + 2 * kv, hidden, False, layers)  # self_attn.qkv_proj
        else:
            # Qwen2 (and Qwen2-MoE) bias q, k and v; attention_bias does all four projections.
            qkv_bias = attention_bias or model_type in ("qwen2", "qwen2_moe")
            layout.linear(q, hidden, qkv_bias, layers)  # self_attn.q_proj
            layout.linear(kv, hidden, qkv_bias, 2 * layers)  # self_attn.k_proj, v_proj
        layout.linear(hidden, q, attention_bias, layers)  # self_attn.o_proj
        if model_type in ("qwen3", "qwen3_moe", "gemma3_text"):
            layout.norm(head_dim, False, 2 * layers)  # self_attn.q_norm, k_norm
        norms = 4 if model_type in ("gemma2", "gemma3_text") else 2  # Gemma 2/3 norm before and after
        layout.norm(hidden, False, norms * layers)
        dense_layers = layers
        if model_type in MOE_STYLE:
            dense_layers, ffn_active, inactive = _experts(read, layout, model_type, hidden, layers, ffn)
        mlp_bias = read.flag("mlp_bias", False)
        if model_type == "phi3":
            layout.linear(2 * ffn, hidden, False, dense_layers)  # mlp.gate_up_proj
        else:
            layout.linear(ffn, hidden, mlp_bias, 2 * dense_layers)  # mlp.gate_proj, up_proj
        layout.linear(hidden, ffn, mlp_bias, dense_layers)  # mlp.down_proj
        layout.norm(hidden, False)  # model.norm
        if ffn_active and dense_layers:
            # Dense and sparse layers mixed: the widest a token meets bounds its activations.
            ffn_active = max(ffn_active, ffn)
    if not tied:
        layout.linear(vocab, hidden, model_type == "phi")  # lm_head (Phi's has a bias)
    # GPT-2's config class defaults to "gelu_new", Phi's too; the others name theirs.
    default_activation = "gelu_new" if model_type in ("gpt2", "phi") else None
    activation = read.config.get("activation_function") or read.config.get("hidden_act") or default_activation
    transformer = Transformer(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn_active or ffn,
        vocab=vocab,
        gated=gated,
        dropout=dropout,
        eager_attention=read.eager(),
        max_positions=positions,
        rms_norm=rms,
        python_gelu=activation == "gelu_new",
    )
    return build(layout, transformer, vocab * hidden, tied, model_type, read.source, inactive)


def _experts(
    read: Reader, layout: Layout, model_type: str, hidden: int, layers: int, ffn: int
) -> tuple[int, int, int]:
    """Add the experts of the sparse layers: (dense layers left, MLP width a token uses, inactive params)."""
    if model_type == "mixtral":
        experts = read.number("num_local_experts", "num_experts", default=8)
        expert_ffn, sparse = ffn, layers
    else:
        # transformers 5 names it num_local_experts, the Hub's configs num_experts.
        experts = read.number(
            "num_experts", "num_local_experts", default=60 if model_type == "qwen2_moe" else 128
        )
        expert_ffn = read.number("moe_intermediate_size")
        step = read.number("decoder_sparse_step", default=1)
        only_dense = read.config.get("mlp_only_layers") or []
        if not isinstance(only_dense, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in only_dense
        ):
            raise InputError(read.source, "mlp_only_layers must be a list of layer numbers")
        # Layer i is sparse when (i + 1) is a multiple of the step and i is not listed dense.
        dense_listed = {i for i in only_dense if 0 <= i < layers and (i + 1) % step == 0}
        sparse = layers // step - len(dense_listed)
    top = read.number("num_experts_per_tok", default=2)
    layout.linear(experts, hidden, False, sparse)  # mlp.gate (the router)
    layout.add((experts, 2 * expert_ffn, hidden), sparse)  # mlp.experts.gate_up_proj
    layout.add((experts, hidden, expert_ffn), sparse)  # mlp.experts.down_proj
    layout.matmul += 3 * experts * expert_ffn * hidden * sparse
    active_ffn = min(top, experts) * expert_ffn
    if model_type == "qwen2_moe":
        shared = read.number("shared_expert_intermediate_size")
        layout.linear(shared, hidden, False, 2 * sparse)  # mlp.shared_expert.gate_proj, up_proj
        layout.linear(hidden, shared, False, sparse)  # mlp.shared_expert.down_proj
        layout.linear(1, hidden, False, sparse)  # mlp.shared_expert_gate
        active_ffn += shared
    inactive = max(experts - top, 0) * 3 * expert_ffn * hidden * sparse
    return layers - sparse, active_ffn, inactive


def _positive(value: Any) -> bool:
    """Whether `value` is a number above zero; compared as it is, since float(10**400) overflows."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def elements(shape: tuple[int, ...]) -> int:
    """The elements of a tensor of `shape`."""
    count = 1
    for size in shape:
        count *= size
    return count
