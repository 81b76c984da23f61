"""`hwcheck fit` lays out every family people train: its parameter count is the one transformers
builds, held against `sum(p.numel())` of the real model made on the meta device (no memory, no
download) from a small config of each family, and the tensor shapes against the model's own."""

from __future__ import annotations

import collections

import pytest

from hwcheck.recommendation.model_shape import from_config

transformers = pytest.importorskip("transformers", reason="the real models are built with transformers")
torch = pytest.importorskip("torch")

SMALL = dict(
    hidden_size=64, intermediate_size=176, num_hidden_layers=3, num_attention_heads=4, vocab_size=100
)
GQA = dict(SMALL, num_key_value_heads=2)
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
# model_type -> (the transformers Auto class hwcheck's layout is, a small config of the family)
FAMILIES = {
    "gpt2": ("causal", dict(n_embd=64, n_layer=3, n_head=4, vocab_size=100, n_positions=32, **IDS)),
    "gpt2-untied-inner": ("causal", dict(n_embd=64, n_layer=2, n_head=4, n_inner=96, vocab_size=100,
                                         tie_word_embeddings=False, **IDS)),
    "gpt_neox": ("causal", dict(SMALL, max_position_embeddings=32, **IDS)),
    "llama": ("causal", dict(GQA, **IDS)),
    "llama-biased": ("causal", dict(GQA, attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                                    **IDS)),
    "mistral": ("causal", dict(GQA, **IDS)),
    "qwen2": ("causal", dict(GQA, **IDS)),
    "qwen3": ("causal", dict(GQA, head_dim=32, **IDS)),
    "gemma": ("causal", dict(GQA, head_dim=32, **IDS)),
    "gemma2": ("causal", dict(GQA, head_dim=32, **IDS)),
    "gemma3_text": ("causal", dict(GQA, head_dim=32, **IDS)),
    "phi": ("causal", dict(SMALL, **IDS)),
    "phi3": ("causal", dict(GQA, **IDS)),
    "falcon": ("causal", dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, vocab_size=100,
                              **IDS)),
    "falcon-new": ("causal", dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_kv_heads=2,
                                  new_decoder_architecture=True, vocab_size=100, **IDS)),
    "falcon-sequential": ("causal", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         parallel_attn=False, multi_query=False, bias=True, vocab_size=100,
                                         **IDS)),
    "mixtral": ("causal", dict(GQA, num_local_experts=4, num_experts_per_tok=2, **IDS)),
    "qwen2_moe": ("causal", dict(GQA, moe_intermediate_size=48, shared_expert_intermediate_size=96,
                                 num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
                                 mlp_only_layers=[1], **IDS)),
    "qwen3_moe": ("causal", dict(GQA, moe_intermediate_size=48, num_experts=4, num_experts_per_tok=2,
                                 head_dim=16, **IDS)),
    "bert": ("base", dict(SMALL, **IDS)),
    "roberta": ("base", dict(SMALL, **IDS)),
    "t5": ("seq2seq", dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=3, num_heads=4,
                           vocab_size=100, **IDS)),
    "t5-v1.1": ("seq2seq", dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=100,
                                feed_forward_proj="gated-gelu", tie_word_embeddings=False, **IDS)),
    "vit": ("base", dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
                         image_size=32, patch_size=8)),
}  # fmt: skip
AUTO = {
    "causal": "AutoModelForCausalLM",
    "seq2seq": "AutoModelForSeq2SeqLM",
    "base": "AutoModel",
}


def built(name: str):
    kind, options = FAMILIES[name]
    model_type = name.split("-")[0]
    config = transformers.AutoConfig.for_model(model_type, **options)
    with torch.device("meta"):
        model = getattr(transformers, AUTO[kind]).from_config(config)
    document = config.to_dict()
    document["model_type"] = model_type
    return model, document


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_parameter_count_is_what_transformers_builds(name):
    model, config = built(name)
    shape = from_config(config)
    assert shape.parameters == sum(p.numel() for p in model.parameters())
    real = collections.Counter(p.numel() for p in model.parameters())
    ours = collections.Counter()
    for tensor, count in shape.groups:
        size = 1
        for side in tensor:
            size *= side
        ours[size] += count
    assert ours == real  # the same tensors, each of the same size: the optimizer's per-tensor state too


@pytest.mark.parametrize("name", ["mixtral", "qwen2_moe", "qwen3_moe"])
def test_a_mixture_of_experts_holds_every_expert_and_routes_a_token_through_a_few(name):
    model, config = built(name)
    shape = from_config(config)
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    per_expert = experts // config.get("num_local_experts", config.get("num_experts"))
    inactive = (config.get("num_local_experts", config.get("num_experts")) - 2) * per_expert
    assert shape.active_parameters == shape.parameters - inactive
