"""Values from outside made to fit a facts schema section before hwcheck writes them, so that what
leaves hwcheck reads back: a text cut at its maxLength, a list at its maxItems, a number outside
its bounds (or beyond 64 bits, or not finite) dropped, a value of the wrong type dropped.

base/answers.py checks a whole answer and refuses it; this keeps what fits of a block that is
recorded as observed either way (doctor --verify's), in the same schema words.
"""

from __future__ import annotations

import math

from hwcheck.base.answers import kind_of
from hwcheck.base.numbers import MAX_INTEGER, MIN_INTEGER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What conformed answers for a value that cannot be made to fit: its key is left out.
DROPPED: Any = object()


def conformed(value: Any, schema: dict[str, Any]) -> Any:
    """`value` made to fit `schema` (types, enum, maxLength, maxItems, minimum, maximum, properties,
    items; no references), or DROPPED when it cannot be."""
    if "enum" in schema and value not in schema["enum"]:
        return DROPPED
    kinds = schema.get("type")
    allowed = (kinds,) if isinstance(kinds, str) else tuple(kinds or ())
    kind = kind_of(value)
    if allowed and kind not in allowed and not (kind == "integer" and "number" in allowed):
        return DROPPED
    if kind == "string":
        return value[: schema.get("maxLength", len(value))]
    if kind in ("integer", "number"):
        return value if _within(value, schema) else DROPPED
    if kind == "array":
        items = [conformed(item, schema.get("items", {})) for item in value]
        return [item for item in items if item is not DROPPED][: schema.get("maxItems", len(items))]
    if kind == "object":
        properties = schema.get("properties", {})
        kept = {key: conformed(item, properties.get(key, {})) for key, item in value.items()}
        kept = {key: item for key, item in kept.items() if item is not DROPPED}
        return kept if all(key in kept for key in schema.get("required", ())) else DROPPED
    return value if kind in ("boolean", "null") else DROPPED


def _within(number: int | float, schema: dict[str, Any]) -> bool:
    if isinstance(number, float) and not math.isfinite(number):
        return False
    if isinstance(number, int) and not MIN_INTEGER <= number <= MAX_INTEGER:
        return False
    return schema.get("minimum", -math.inf) <= number <= schema.get("maximum", math.inf)


def verified_block(seen: dict[str, Any]) -> dict[str, Any]:
    """A `doctor --verify` block made to fit the facts schema's `verified` section (it reads back)."""
    from hwcheck.facts import load_schema

    block = conformed(seen, load_schema("facts")["properties"]["verified"])
    return (
        block
        if block is not DROPPED
        else {"outcome": "error", "error": "the framework's answer was unusable"}
    )
