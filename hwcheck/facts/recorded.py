"""Live facts made to fit the facts schema where the machine says more than a facts file may hold.

A probe records what it finds; the schema bounds every version to MAX_VERSION characters,
and a report that breaks it is refused by `inventory` and `doctor --facts`. Each version the
schema names is passed through recorded_version here, once, as the probes' facts are merged,
so that what `report` writes is what the readers accept.
"""

from __future__ import annotations

from hwcheck.base.versions import MAX_VERSION, recorded_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION_DEF = "#/$defs/version"
# The property names the facts schema gives a version (tests/test_recorded_versions.py derives
# them from the schema): a long string under one of these is what sends the facts through the
# schema. Other long strings (paths, CPU models) are common and need no look at the schema.
VERSION_NAMES = frozenset(
    {
        "compute_runtime",
        "cublas",
        "cuda",
        "cudnn",
        "cusparse",
        "hip",
        "ipex",
        "jaxlib",
        "level_zero",
        "libtpu",
        "libtpu_pin",
        "macos",
        "metal_plugin",
        "miopen",
        "nccl",
        "nvml_version",
        "opencl",
        "pjrt_version",
        "plugin_version",
        "rocm",
        "tf_keras",
        "version",
        "xla",
        "xla_libtpu",
        "xpu",
    }
)


def bound_versions(facts: dict[str, Any]) -> dict[str, Any]:
    """`facts` with every version the facts schema names cut by recorded_version (`facts` itself
    when none is too long)."""
    if not _has_long_version(facts, 0):
        return facts
    from hwcheck.facts import load_schema

    schema = load_schema("facts")
    bounded: dict[str, Any] = _bound(facts, schema, schema["$defs"], 0)
    return bounded


def _has_long_version(value: Any, depth: int) -> bool:
    # The facts of a machine nest six levels deep; deeper is no place the schema names.
    if depth > 16:
        return False
    if isinstance(value, dict):
        return any(
            (isinstance(item, str) and len(item) > MAX_VERSION and key in VERSION_NAMES)
            or _has_long_version(item, depth + 1)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_has_long_version(item, depth + 1) for item in value)
    return False


def _bound(value: Any, schema: dict[str, Any], definitions: dict[str, Any], depth: int) -> Any:
    """`value` with the versions `schema` names in it recorded, in new dicts and lists (a probe's
    facts may be shared with a cache)."""
    reference = schema.get("$ref")
    if reference == VERSION_DEF:
        return recorded_version(value) if isinstance(value, str) else value
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        schema = definitions.get(reference.removeprefix("#/$defs/"), {})
    if depth > 16:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        others = schema.get("additionalProperties")
        bounded = {}
        for key, item in value.items():
            inner = properties.get(key, others)
            bounded[key] = _bound(item, inner, definitions, depth + 1) if isinstance(inner, dict) else item
        return bounded
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_bound(item, schema["items"], definitions, depth + 1) for item in value]
    return value
