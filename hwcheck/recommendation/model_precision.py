"""The facts of the model `--model` names (facts.model): where its config.json came from, its
model_type and the dtype it was saved in, for the rules on a model's own precision
(rules/policy/model_precision.toml). Only config.json is read, never weights.
"""

from __future__ import annotations

from hwcheck.base.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_TEXT = 256  # characters of a model id, type or dtype kept (the facts schema's bound)


def model_facts(text: str) -> dict[str, Any]:
    """facts.model for `--model TEXT` (a config file, a model directory or a Hugging Face id)."""
    from hwcheck.base.inputs import read_json
    from hwcheck.recommendation.model_shape import MAX_CONFIG_BYTES
    from hwcheck.recommendation.model_source import config_path

    source = f"--model {text}"
    path = config_path(text)
    try:
        config = read_json(path, max_bytes=MAX_CONFIG_BYTES)
    except InputError as error:
        raise InputError(source, error.problem) from None
    if not isinstance(config, dict):
        raise InputError(source, "not a model config: expected a JSON object")
    model_type = config.get("model_type")
    # transformers writes the dtype as torch_dtype, and as dtype from release 4.56 on.
    dtype = config.get("torch_dtype", config.get("dtype"))
    return {
        "source": text[:MAX_TEXT],
        "model_type": model_type[:MAX_TEXT] if isinstance(model_type, str) else None,
        "torch_dtype": dtype[:MAX_TEXT] if isinstance(dtype, str) else None,
    }
