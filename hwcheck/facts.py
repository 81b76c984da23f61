"""The facts model: the JSON document that describes one machine, its schema and loaders."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hwcheck.errors import InputError

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).parent / "schema"
# A facts file or report is a few kilobytes; refusing huge ones keeps a bad path
# (a core dump, a dataset) from eating memory before it fails to parse.
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024


def read_text(path: str | Path, *, expected: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """Read a UTF-8 text file, turning every way it can be unusable into an InputError.

    `expected` names what the file should be ("a JSON file", "a /proc/cpuinfo dump")
    for the messages.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, f"is a directory, expected {expected}") from None
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    if len(raw) > max_bytes:
        raise InputError(path, f"larger than {max_bytes // (1024 * 1024)} MB, not {expected}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {error.start}), not {expected}") from None
    if not text.strip():
        raise InputError(path, f"empty file, expected {expected}")
    return text


def read_json(path: str | Path, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """Read a JSON file, turning every way it can be unusable into an InputError."""
    text = read_text(path, expected="a JSON document", max_bytes=max_bytes)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise InputError(path, f"malformed JSON at {where}: {error.msg}") from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None


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
