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

from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.recommendation import model_families
from hwcheck.recommendation.model_layout import Layout, ModelShape, Reader, Transformer, build

MAX_CONFIG_BYTES = 1024 * 1024
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


def from_count(parameters: int) -> ModelShape:
    """A model known only by its parameter count."""
    return ModelShape(parameters=parameters)


def from_config_file(path: str | Path, source: str | None = None) -> ModelShape:
    """The shape a Hugging Face config.json describes; InputError naming --model when it cannot."""
    source = source or f"--model {path}"
    return from_config(read_config(path, source), source)


def read_config(path: str | Path, source: str) -> dict[str, Any]:
    """A model's config.json as a JSON object; InputError naming `source` when it is not one."""
    from hwcheck.base.inputs import read_json

    try:
        # The one JSON reader: finite numbers only, nesting bounded, so no RecursionError escapes.
        config = read_json(path, max_bytes=MAX_CONFIG_BYTES)
    except InputError as error:
        raise InputError(source, error.problem) from None
    if not isinstance(config, dict):
        raise InputError(source, "not a model config: expected a JSON object")
    return config


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
    return model_families.LAYOUTS[model_type](reader, model_type)


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
    gated, rms, ffn_active, inactive, top = True, True, 0, 0, 0
    attention_dropout: bool | None = None
    dropout = read.positive("attention_dropout")
    if gpt2:
        ffn = read.number("n_inner", default=4 * hidden)
        layout.add((positions, hidden))  # wpe
        layout.norm(hidden, True, 2 * layers)  # ln_1, ln_2
        layout.linear(
            3 * hidden, hidden, True, layers, ("c_attn",), "attention"
        )  # a Conv1D: the same elements
        layout.linear(hidden, hidden, True, layers, ("attn.c_proj",), "attention_output")
        layout.linear(ffn, hidden, True, layers, ("c_fc",), "mlp")
        layout.linear(hidden, ffn, True, layers, ("mlp.c_proj",), "mlp_output")
        layout.norm(hidden, True)  # ln_f
        gated, rms = False, False
        # GPT2Config's defaults are 0.1 each.
        dropout = read.positive("resid_pdrop", "embd_pdrop", "attn_pdrop", default=True)
        attention_dropout = read.positive("attn_pdrop", default=True)
    elif model_type == "gpt_neox":
        ffn = read.number("intermediate_size", default=4 * hidden)
        bias = read.flag("attention_bias", True)
        layout.norm(hidden, True, 2 * layers)  # input_layernorm, post_attention_layernorm
        layout.linear(3 * hidden, hidden, bias, layers, ("query_key_value",), "attention")
        layout.linear(hidden, hidden, bias, layers, ("dense",), "attention_output")
        layout.linear(ffn, hidden, True, layers, ("dense_h_to_4h",), "mlp")
        layout.linear(hidden, ffn, True, layers, ("dense_4h_to_h",), "mlp_output")
        layout.norm(hidden, True)  # final_layer_norm
        gated, rms = False, False
        dropout = read.positive("attention_dropout", "hidden_dropout")
    elif model_type == "phi":
        ffn = read.number("intermediate_size", default=4 * hidden)
        layout.linear(q, hidden, True, 3 * layers, ("q_proj", "k_proj", "v_proj"), "attention")
        layout.linear(hidden, q, True, layers, ("dense",), "attention_output")
        if read.flag("qk_layernorm", False):
            layout.norm(head_dim, True, 2 * layers)  # q_layernorm, k_layernorm
        layout.linear(ffn, hidden, True, layers, ("fc1",), "attention")  # reads the attention's input
        layout.linear(hidden, ffn, True, layers, ("fc2",), "mlp_output")
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
        layout.linear(fused, hidden, bias, layers, ("query_key_value",), "attention")
        layout.linear(hidden, hidden, bias, layers, ("dense",), "attention_output")
        layout.linear(ffn, hidden, bias, layers, ("dense_h_to_4h",), "mlp")
        layout.linear(hidden, ffn, bias, layers, ("dense_4h_to_h",), "mlp_output")
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
            layout.linear(q + 2 * kv, hidden, False, layers, ("qkv_proj",), "attention")
        else:
            # Qwen2 (and Qwen2-MoE) bias q, k and v; attention_bias does all four projections.
            qkv_bias = attention_bias or model_type in ("qwen2", "qwen2_moe")
            layout.linear(q, hidden, qkv_bias, layers, ("q_proj",), "attention")
            layout.linear(kv, hidden, qkv_bias, 2 * layers, ("k_proj", "v_proj"), "attention")
        layout.linear(hidden, q, attention_bias, layers, ("o_proj",), "attention_output")
        if model_type in ("qwen3", "qwen3_moe", "gemma3_text"):
            layout.norm(head_dim, False, 2 * layers)  # self_attn.q_norm, k_norm
        norms = 4 if model_type in ("gemma2", "gemma3_text") else 2  # Gemma 2/3 norm before and after
        layout.norm(hidden, False, norms * layers)
        dense_layers = layers
        if model_type in MOE_STYLE:
            dense_layers, ffn_active, inactive = _experts(read, layout, model_type, hidden, layers, ffn)
            top = read.number("num_experts_per_tok", default=2)
        mlp_bias = read.flag("mlp_bias", False)
        if model_type == "phi3":
            layout.linear(2 * ffn, hidden, False, dense_layers, ("gate_up_proj",), "mlp")
        else:
            layout.linear(ffn, hidden, mlp_bias, 2 * dense_layers, ("gate_proj", "up_proj"), "mlp")
        layout.linear(hidden, ffn, mlp_bias, dense_layers, ("down_proj",), "mlp_output")
        layout.norm(hidden, False)  # model.norm
        if ffn_active and dense_layers:
            # Dense and sparse layers mixed: the widest a token meets bounds its activations.
            ffn_active = max(ffn_active, ffn)
    if not tied:
        layout.linear(vocab, hidden, model_type == "phi", 1, ("lm_head",), "head")  # Phi's has a bias
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
        experts_per_token=top,
        attention_dropout=attention_dropout,
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
    layout.linear(experts, hidden, False, sparse, ("gate",), "mlp")  # the router
    layout.add((experts, 2 * expert_ffn, hidden), sparse)  # mlp.experts.gate_up_proj
    layout.add((experts, hidden, expert_ffn), sparse)  # mlp.experts.down_proj
    # No 16-bit copy of the experts: transformers runs them with torch._grouped_mm, for which
    # autocast has no rule, on the float32 weights (saved_tensors_hooks, transformers 5.23).
    active_ffn = min(top, experts) * expert_ffn
    if model_type == "qwen2_moe":
        shared = read.number("shared_expert_intermediate_size")
        layout.linear(
            shared, hidden, False, 2 * sparse, ("shared_expert.gate_proj", "shared_expert.up_proj"), "mlp"
        )
        layout.linear(hidden, shared, False, sparse, ("shared_expert.down_proj",), "shared_expert_output")
        layout.linear(1, hidden, False, sparse, ("shared_expert_gate",), "mlp")
        active_ffn += shared
    inactive = max(experts - top, 0) * 3 * expert_ffn * hidden * sparse
    return layers - sparse, active_ffn, inactive
