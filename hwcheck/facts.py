"""The facts model: the JSON document that describes one machine, its schema and loaders."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hwcheck.errors import InputError
from hwcheck.inputs import read_json

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).parent / "schema"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The shipped JSON Schema `name` ("facts", "report" or "rules")."""
    with (SCHEMA_DIR / f"{name}.schema.json").open(encoding="utf-8") as handle:
        return json.load(handle)


@cache
def validator(name: str) -> Any:
    """A jsonschema validator for the shipped schema `name`, with the schemas it refers to."""
    # jsonschema costs ~60 ms to import, so it is loaded only when a document is read.
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [
        (schema["$id"], Resource.from_contents(schema))
        for schema in map(load_schema, ("facts", "report", "rules"))
    ]
    registry = Registry().with_resources(resources)
    return Draft202012Validator(load_schema(name), registry=registry)


def schema_problem(document: Any, name: str) -> str | None:
    """The first way `document` breaks schema `name`, as a short phrase, or None when valid."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(validator(name).iter_errors(document))
    except RecursionError:
        return "nested too deeply"
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    where = where.lstrip(".") or "top level"
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return f"{where}: {message}"


def validate_facts(document: Any, source: str | Path) -> dict[str, Any]:
    """Check a facts document against the schema; raise InputError naming `source` if it fails."""
    if not isinstance(document, dict):
        raise InputError(source, f"expected a JSON object of facts, got {type(document).__name__}")
    version = document.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise InputError(
            source, f"schema_version {version!r} is not supported (this hwcheck reads {SCHEMA_VERSION})"
        )
    problem = schema_problem(document, "facts")
    if problem:
        raise InputError(source, f"not a valid facts file: {problem}")
    return document


def load_facts(path: str | Path) -> dict[str, Any]:
    """Load and validate a facts file; a report file is accepted too (its facts are used)."""
    document = read_json(path)
    if isinstance(document, dict) and "facts" in document and "recommendation" in document:
        document = document["facts"]
    return validate_facts(document, path)


def with_cpu(facts: dict[str, Any], cpu: dict[str, Any]) -> dict[str, Any]:
    """A copy of `facts` whose CPU part is replaced by `cpu`."""
    merged = dict(facts)
    merged["cpu"] = cpu
    return merged
