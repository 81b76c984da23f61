"""The layouts of the encoders (BERT, RoBERTa), T5 and ViT for `hwcheck fit` (model_shape has the
decoders): tensor shapes with their counts, as transformers 5.23 builds each model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwcheck.recommendation.model_layout import Layout, Reader, Transformer, build

if TYPE_CHECKING:
    from collections.abc import Callable

    from hwcheck.recommendation.model_layout import ModelShape


def encoder(read: Reader, model_type: str) -> ModelShape:
    """BERT and RoBERTa as `AutoModel` builds them: embeddings, the encoder, the pooler."""
    hidden = read.number("hidden_size")
    layers = read.number("num_hidden_layers")
    heads = read.heads(hidden, "num_attention_heads")
    ffn = read.number("intermediate_size", default=4 * hidden)
    vocab = read.number("vocab_size")
    positions = read.number("max_position_embeddings", default=512)
    layout = Layout()
    layout.add((vocab, hidden))  # embeddings.word_embeddings
    layout.add((positions, hidden))  # embeddings.position_embeddings
    layout.add((read.number("type_vocab_size", default=2), hidden))  # embeddings.token_type_embeddings
    layout.norm(hidden, True)  # embeddings.LayerNorm
    layout.linear(hidden, hidden, True, 3 * layers, ("query", "key", "value"), "attention")
    layout.linear(hidden, hidden, True, layers, ("attention.output.dense",), "attention_output")
    layout.norm(hidden, True, 2 * layers)  # attention.output.LayerNorm, output.LayerNorm
    layout.linear(ffn, hidden, True, layers, ("intermediate.dense",), "mlp")
    layout.linear(hidden, ffn, True, layers, ("output.dense",), "mlp_output")
    layout.linear(hidden, hidden, True, 1, ("pooler.dense",), "pooler")
    transformer = Transformer(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=heads,
        ffn=ffn,
        vocab=0,
        gated=False,
        # BertConfig's and RobertaConfig's defaults are 0.1 each.
        dropout=read.positive("hidden_dropout_prob", "attention_probs_dropout_prob", default=True),
        attention_dropout=read.positive("attention_probs_dropout_prob", default=True),
        eager_attention=read.eager(),
        max_positions=positions - (2 if model_type == "roberta" else 0),  # RoBERTa's padding offset
    )
    return build(layout, transformer, 0, False, model_type, read.source)


def t5(read: Reader, model_type: str = "t5") -> ModelShape:
    """T5ForConditionalGeneration: the shared embedding, the encoder and decoder stacks, the LM head."""
    hidden = read.number("d_model")
    inner = read.number("num_heads") * read.number("d_kv")
    heads = read.number("num_heads")
    ffn = read.number("d_ff")
    encoder = read.number("num_layers")
    decoder = read.number("num_decoder_layers", default=encoder)
    vocab = read.number("vocab_size")
    gated = str(read.config.get("feed_forward_proj") or "relu").startswith("gated-")
    tied = read.flag("tie_word_embeddings", True)
    layout = Layout()
    layout.add((vocab, hidden))  # shared
    # Self-attention in every block, cross-attention (EncDecAttention) in the decoder's.
    layout.linear(inner, hidden, False, 3 * (encoder + 2 * decoder), ("q", "k", "v"), "attention")
    layout.linear(hidden, inner, False, encoder + 2 * decoder, ("o",), "attention_output")
    layout.add((read.number("relative_attention_num_buckets", default=32), heads), 2)  # first blocks' bias
    layout.linear(
        ffn,
        hidden,
        False,
        (2 if gated else 1) * (encoder + decoder),
        ("wi_0", "wi_1") if gated else ("wi",),
        "mlp",
    )
    layout.linear(hidden, ffn, False, encoder + decoder, ("wo",), "mlp_output")
    layout.norm(hidden, False, 2 * encoder + 3 * decoder + 2)  # each sublayer's, the final ones
    if not tied:
        layout.linear(vocab, hidden, False, 1, ("lm_head",), "head")
    transformer = Transformer(
        hidden=hidden,
        layers=encoder + decoder,
        heads=heads,
        kv_heads=heads,
        ffn=ffn,
        vocab=vocab,
        gated=gated,
        dropout=read.positive("dropout_rate", default=True),  # T5Config's default is 0.1
        eager_attention=read.eager(),
        max_positions=read.number("n_positions", default=512),
        rms_norm=True,  # T5LayerNorm: a float32 RMS norm written in Python
        cross_attention_layers=decoder,
        position_bias=True,
        inner_dropout=True,
    )
    return build(layout, transformer, vocab * hidden, tied, "t5", read.source)


def vit(read: Reader, model_type: str = "vit") -> ModelShape:
    """ViTModel: patch embedding, class token, positions, the encoder, the final norm, the pooler."""
    hidden = read.number("hidden_size")
    layers = read.number("num_hidden_layers")
    heads = read.heads(hidden, "num_attention_heads")
    ffn = read.number("intermediate_size", default=4 * hidden)
    patch = read.number("patch_size", default=16)
    channels = read.number("num_channels", default=3)
    tokens = (read.number("image_size", default=224) // patch) ** 2 + 1  # the patches and [CLS]
    bias = read.flag("qkv_bias", True)
    layout = Layout()
    layout.add((1, 1, hidden))  # embeddings.cls_token
    layout.add((1, tokens, hidden))  # embeddings.position_embeddings
    layout.add((hidden, channels, patch, patch))  # embeddings.patch_embeddings.projection (a conv)
    layout.add((hidden,))
    layout.matmul += hidden * channels * patch * patch
    layout.linear(hidden, hidden, bias, 3 * layers, ("query", "key", "value"), "attention")
    layout.linear(hidden, hidden, True, layers, ("attention.output.dense",), "attention_output")
    layout.norm(hidden, True, 2 * layers)  # layernorm_before, layernorm_after
    layout.linear(ffn, hidden, True, layers, ("intermediate.dense",), "mlp")
    layout.linear(hidden, ffn, True, layers, ("output.dense",), "mlp_output")
    layout.norm(hidden, True)  # layernorm
    layout.linear(hidden, hidden, True, 1, ("pooler.dense",), "pooler")
    transformer = Transformer(
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=heads,
        ffn=ffn,
        vocab=0,
        gated=False,
        dropout=read.positive("hidden_dropout_prob", "attention_probs_dropout_prob"),
        eager_attention=read.eager(),
        max_positions=tokens,
    )
    return build(layout, transformer, 0, False, "vit", read.source)


LAYOUTS: dict[str, Callable[[Reader, str], ModelShape]] = {
    "bert": encoder,
    "roberta": encoder,
    "t5": t5,
    "vit": vit,
}
