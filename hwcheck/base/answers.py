"""The one check of what a child process or a cache entry hands back, before any of it is used.

A measuring child runs the user's interpreter and code, and a cache entry is a file on disk:
either may hold anything JSON can (a list where a mapping belongs, a string for a number, a
forged huge or negative time). Each reader states what it takes as a schema (the JSON Schema
words below, the subset the facts schema uses) and calls `checked` first: a value that does
not fit is an Unusable error, one line naming where and what, which the reader turns into a
measurement that failed (never cached) or an entry that is ignored; never a traceback.

Schema words: type (a name or a list: object, array, string, integer, number, boolean, null),
enum, minimum, maximum, maxLength, minItems, maxItems, maxProperties, properties, required,
items, additionalProperties (a schema, or false). Numbers are finite, integers within 64 bits,
booleans neither; a part the schema does not describe is still held to those bounds.
"""

from __future__ import annotations

import math

from hwcheck.base.numbers import MAX_INTEGER, MIN_INTEGER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# The most values one answer may hold in the parts its schema leaves open (a version map, a list).
MAX_VALUES = 100_000
_SHOWN = 40


class Unusable(ValueError):
    """What a child or a cache handed back does not fit its schema; str() is the one-line reason."""


def checked(value: Any, schema: Mapping[str, Any], where: str = "answer") -> Any:
    """`value` when it fits `schema` (types, finite numbers, ranges, sizes), else Unusable naming
    the part (as "answer.pairs[0].seconds") and the problem."""
    _check(value, schema, where)
    return value


def problem(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """Why `value` does not fit `schema` (checked's one line), None when it does."""
    try:
        _check(value, schema, where)
    except Unusable as error:
        return str(error)
    return None


def _check(value: Any, schema: Mapping[str, Any], where: str) -> None:
    if "enum" in schema and not any(_same(value, allowed) for allowed in schema["enum"]):
        raise Unusable(f"{where}: {_shown(value)} is not one of {', '.join(map(repr, schema['enum']))}")
    kinds = schema.get("type")
    allowed = (kinds,) if isinstance(kinds, str) else tuple(kinds or ())
    kind = kind_of(value)
    if allowed and kind not in allowed and not (kind == "integer" and "number" in allowed):
        raise Unusable(f"{where}: expected {' or '.join(allowed)}, not {kind} {_shown(value)}")
    if kind in ("integer", "number"):
        _number(value, schema, where)
    elif kind == "string":
        if len(value) > schema.get("maxLength", math.inf):
            raise Unusable(f"{where}: a text of {len(value)} characters (at most {schema['maxLength']})")
    elif kind == "array":
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", math.inf):
            raise Unusable(f"{where}: {len(value)} items, not {_range(schema, 'minItems', 'maxItems')}")
        items = schema.get("items")
        for index, item in enumerate(value):
            _inner(item, items, f"{where}[{index}]")
    elif kind == "object":
        _object(value, schema, where)
    elif kind == "other":
        raise Unusable(f"{where}: {type(value).__name__} is no JSON value")


def _object(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> None:
    if len(value) > schema.get("maxProperties", math.inf):
        raise Unusable(f"{where}: {len(value)} keys (at most {schema['maxProperties']})")
    for key in schema.get("required", ()):
        if key not in value:
            raise Unusable(f"{where}: {key} is missing")
    properties = schema.get("properties", {})
    others = schema.get("additionalProperties")
    for key, item in value.items():
        place = f"{where}.{key if len(key) <= _SHOWN else key[:_SHOWN] + '...'}"
        if key in properties:
            _check(item, properties[key], place)
        elif others is False:
            raise Unusable(f"{place}: not expected here")
        else:
            _inner(item, others, place)


def _inner(value: Any, schema: Any, where: str) -> None:
    """A part under `schema`, or held to the plain bounds where the schema leaves it open."""
    if isinstance(schema, dict):
        _check(value, schema, where)
    else:
        _plain(value, where)


def _plain(document: Any, where: str) -> None:
    """Every number in `document` finite and within 64 bits, and at most MAX_VALUES values."""
    stack: list[tuple[Any, str]] = [(document, where)]
    seen = 0
    while stack:
        node, place = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise Unusable(f"{where}: more than {MAX_VALUES} values")
        kind = kind_of(node)
        if kind in ("integer", "number"):
            _number(node, {}, place)
        elif kind == "array":
            stack.extend((item, f"{place}[{index}]") for index, item in enumerate(node))
        elif kind == "object":
            stack.extend((item, f"{place}.{key[:_SHOWN]}") for key, item in node.items())
        elif kind == "other":
            raise Unusable(f"{place}: {type(node).__name__} is no JSON value")


def _number(value: int | float, schema: Mapping[str, Any], where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise Unusable(f"{where}: {value} is not a finite number")
    if isinstance(value, int) and not MIN_INTEGER <= value <= MAX_INTEGER:
        raise Unusable(f"{where}: an integer beyond 64 bits")
    if not schema.get("minimum", -math.inf) <= value <= schema.get("maximum", math.inf):
        raise Unusable(f"{where}: {_shown(value)} is not {_range(schema, 'minimum', 'maximum')}")


def kind_of(value: Any) -> str:
    """The JSON Schema type of `value` ("other" for what JSON cannot hold)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) and all(isinstance(key, str) for key in value) else "other"


def _same(value: Any, allowed: Any) -> bool:
    # 1 == True in Python, not in JSON: an enum of 1 and 2 does not take true.
    return kind_of(value) == kind_of(allowed) and value == allowed


def _range(schema: Mapping[str, Any], low: str, high: str) -> str:
    if low in schema and high in schema:
        return f"from {schema[low]} to {schema[high]}"
    return f"at least {schema[low]}" if low in schema else f"at most {schema.get(high)}"


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
