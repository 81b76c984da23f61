"""The parts a model's shape is built from: the ModelShape record, the Transformer the activation
formula reads, the Layout of parameter tensors and the Reader of a config's fields.

model_shape lays out the decoders and model_families the encoders, T5 and ViT, both with these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hwcheck.base.errors import InputError

MAX_DIMENSION = 10**7
MAX_PARAMETERS = 10**15

Shapes = tuple[tuple[tuple[int, ...], int], ...]


@dataclass(frozen=True)
class Linear:
    """nn.Linear modules of one name (PEFT's target_modules match it): `count` of them, each
    reading `into` features and writing `out`; `reads` names the tensor they read, the same for
    the projections fed by one input (LoRA's adapters on them read that tensor too)."""

    name: str
    out: int
    into: int
    count: int
    reads: str


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
    # T5's relative position bias: a float attention mask that needs its gradient, so SDPA runs
    # its math kernel, in float32 (the bias is float32), keeping the scores.
    position_bias: bool = False
    # A dropout between the MLP's activation and its output projection (T5's DenseActDense).
    inner_dropout: bool = False
    # A mixture of experts: the experts each token is routed to (0: a dense MLP).
    experts_per_token: int = 0
    # Dropout inside the attention (SDPA's dropout_p); None: as `dropout` says.
    attention_dropout: bool | None = None

    @property
    def scores_dropout(self) -> bool:
        """Whether the attention drops out scores (the CPU's fused kernel cannot)."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout


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
    # The nn.Linear modules by name (empty when only the count is known): LoRA's targets and
    # what bitsandbytes quantizes.
    linears: tuple[Linear, ...] = ()

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
        self.modules: list[Linear] = []

    def add(self, shape: tuple[int, ...], count: int = 1) -> None:
        """`count` tensors of `shape`."""
        if count > 0:
            self.counts[shape] = self.counts.get(shape, 0) + count

    def linear(
        self, out: int, into: int, bias: bool, count: int = 1, names: tuple[str, ...] = (), reads: str = ""
    ) -> None:
        """`count` nn.Linear(into, out) layers: weight (out, into), and a bias (out,) where `bias`;
        `names` their module names (the count split evenly), `reads` the tensor they read."""
        for name in names:
            if count // len(names) > 0:
                self.modules.append(Linear(name, out, into, count // len(names), reads or name))
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

    def positive(self, *keys: str, default: bool = False) -> bool:
        """Whether any of these (dropout probabilities) is above zero; `default` (the config
        class's own default) when the config sets none of them."""
        if not any(key in self.config for key in keys):
            return default
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
    return ModelShape(
        parameters,
        layout.groups(),
        matmul,
        transformer,
        parameters - inactive,
        model_type,
        tuple(layout.modules),
    )


def _positive(value: Any) -> bool:
    """Whether `value` is a number above zero; compared as it is, since float(10**400) overflows."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def elements(shape: tuple[int, ...]) -> int:
    """The elements of a tensor of `shape`."""
    count = 1
    for size in shape:
        count *= size
    return count
