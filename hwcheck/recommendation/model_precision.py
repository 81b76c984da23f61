"""The facts of the model `--model` names (facts.model): where its config.json came from, its
model_type and the dtype it was saved in, for the rules on a model's own precision
(rules/policy/model_precision.toml). Only config.json is read, never weights.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_TEXT = 256  # characters of a model id, type or dtype kept (the facts schema's bound)


def model_facts(text: str) -> dict[str, Any]:
    """facts.model for `--model TEXT` (a config file, a model directory or a Hugging Face id)."""
    from hwcheck.recommendation.model_shape import read_config
    from hwcheck.recommendation.model_source import config_path

    config = read_config(config_path(text), f"--model {text}")
    model_type = config.get("model_type")
    # transformers writes the dtype as torch_dtype, and as dtype from release 4.56 on.
    dtype = config.get("torch_dtype", config.get("dtype"))
    return {
        "source": text[:MAX_TEXT],
        "model_type": model_type[:MAX_TEXT] if isinstance(model_type, str) else None,
        "torch_dtype": dtype[:MAX_TEXT] if isinstance(dtype, str) else None,
    }
