"""The facts model: the JSON document that describes one machine, its schema and loaders."""

from __future__ import annotations

import json
import os
from functools import cache

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import read_json
from hwcheck.base.numbers import MAX_INTEGER, contains_itself, wide_integer
from hwcheck.base.records import NamedTuple
from hwcheck.base.safe import without_lone_surrogates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from jsonschema_rs import ValidationError, Validator


SCHEMA_VERSION = 1
SCHEMA_DIR = os.path.join(os.path.dirname(__file__), "schema")


def section(document: dict[str, Any], key: str) -> dict[str, Any]:
    """The object at document[key]; {} when it is missing or not an object (facts may omit any)."""
    value = document.get(key)
    return value if isinstance(value, dict) else {}


def installed(frameworks: dict[str, Any], name: str) -> bool:
    """Whether the facts' frameworks section records package `name` as installed: its object is
    there, even empty (`"torch": {}`: installed, its version unknown); absent or null is not."""
    return isinstance(frameworks.get(name), dict)


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The shipped JSON Schema `name` ("facts", "report", "rules" or "bench")."""
    with open(os.path.join(SCHEMA_DIR, f"{name}.schema.json"), encoding="utf-8") as handle:
        return json.load(handle)


@cache
def validator(name: str) -> Validator:
    """A jsonschema-rs validator for the shipped schema `name`, with the schemas it refers to."""
    # jsonschema_rs costs ~35 ms to import, so it is loaded only when a document is checked.
    import jsonschema_rs

    registry = jsonschema_rs.Registry(
        [(schema["$id"], schema) for schema in map(load_schema, ("facts", "report", "rules", "bench"))]
    )
    return jsonschema_rs.Draft202012Validator(load_schema(name), registry=registry)


def schema_error(document: Any, name: str) -> ValidationError | None:
    """The most telling way `document` breaks schema `name`, or None when it is valid.

    Raises RecursionError when the document is nested too deeply to check.
    """
    checker = validator(name)
    try:
        if checker.is_valid(document):
            return None
    except UnicodeEncodeError:
        # JSON may spell a lone surrogate (\\ud800), which the validator cannot take as
        # a Rust string; checked with each one written as its escape, the shape is the same.
        return schema_error(without_lone_surrogates(document), name)
    try:
        return _best_error(list(checker.iter_errors(document)))
    except ValueError as error:  # the validator's depth limit; a ValidationError is never raised
        raise RecursionError(str(error)) from None


def _best_error(errors: list[ValidationError]) -> ValidationError | None:
    # The error highest in the document says most; oneOf/anyOf only say "none matched",
    # so any other error at the same place is preferred, and inside one the branch that
    # got deepest (skipping branches for another type) names the real problem.
    if not errors:
        return None
    best = min(errors, key=lambda error: (len(error.instance_path), _is_choice(error)))
    while branches := _branches(best):
        candidates = [
            error
            for branch in branches
            if not any(e.kind.name == "type" and e.instance_path == best.instance_path for e in branch)
            for error in branch
        ]
        candidates.sort(key=lambda error: -len(error.instance_path))
        if not candidates or (
            len(candidates) > 1 and len(candidates[0].instance_path) == len(candidates[1].instance_path)
        ):
            break  # no branch fits, or two fail equally deep: neither is the one meant
        best = candidates[0]
    return best


def _branches(error: ValidationError) -> list[list[ValidationError]]:
    # Only a failed oneOf / anyOf carries the errors of each of its branches.
    return getattr(error.kind, "context", None) or []


def _is_choice(error: ValidationError) -> bool:
    return error.kind.name in ("oneOf", "anyOf")


def schema_problem(document: Any, name: str) -> str | None:
    """The first way `document` breaks schema `name`, as a short phrase, or None when valid."""
    try:
        error = schema_error(document, name)
    except RecursionError:
        return "nested too deeply"
    if error is None:
        return None
    return f"{schema_path(error.instance_path)}: {schema_message(error)}"


def schema_path(where: list[str | int]) -> str:
    """A place in a document as hwcheck messages write it: gpus[0].name, or "top level"."""
    text = "".join(f"[{part}]" if isinstance(part, int) else _key(part) for part in where)
    return text.lstrip(".") or "top level"


def _key(name: str) -> str:
    # A key from outside may hold anything (a newline, a dot): one that is not a plain
    # name is written as a JSON string, so the path stays one line and unambiguous.
    return (
        f".{name}"
        if name.replace("_", "a").isascii() and name.replace("_", "a").isalnum()
        else f"[{json.dumps(name)}]"
    )


def schema_message(error: ValidationError) -> str:
    """What a schema error says, with a long offending value cut short and every allowed value named."""
    options = getattr(error.kind, "options", None)
    if error.kind.name == "enum" and options:
        *first, last = (_compact_json(option) for option in options)
        allowed = f"{', '.join(first)} or {last}" if first else last
        message = f"{_compact_json(error.instance)} is not one of {allowed}"
    else:
        message = error.message
    # The validator starts most messages with the offending value, which can be a whole array.
    value = _compact_json(error.instance)
    if len(value) > 60 and message.startswith(value):
        message = value[:57] + "..." + message[len(value) :]
    return message if len(message) <= 160 else message[:157] + "..."


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def validate_facts(document: Any, source: str | Path) -> dict[str, Any]:
    """Check a facts document against the schema; raise InputError naming `source` if it fails."""
    if not isinstance(document, dict):
        raise InputError(source, f"expected a JSON object of facts, got {type(document).__name__}")
    version = document.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise InputError(
            source, f"schema_version {version!r} is not supported (this hwcheck reads {SCHEMA_VERSION})"
        )
    # A document given as objects may contain itself (a file cannot): said before the schema
    # walks it, which would recurse until memory or the stack runs out.
    loop = contains_itself(document)
    if loop:
        raise InputError(source, f"not a valid facts file: {loop}: contains itself (a cycle)")
    problem = schema_problem(document, "facts")
    if problem:
        raise InputError(source, f"not a valid facts file: {problem}")
    # A file's integers were bounded as it was parsed (read_json); a document given as objects is here.
    wide = wide_integer(document)
    if wide:
        raise InputError(
            source, f"not a valid facts file: {wide}: an integer beyond 64 bits (at most {MAX_INTEGER})"
        )
    return document


def load_facts(path: str | Path) -> dict[str, Any]:
    """Load and validate a facts file; a report file is accepted too (its facts are used)."""
    return load_machine_file(path).facts


class MachineFile(NamedTuple):
    """What a facts or report file says of its machine."""

    facts: dict[str, Any]
    host: str | None  # the host a report names; None for bare facts
    fingerprint: str | None  # the machine's fingerprint a report carries (facts/identity.py)


def load_machine_file(path: str | Path) -> MachineFile:
    """The facts of a facts or report file, with the host and fingerprint a report names."""
    document = read_json(path)
    if not (isinstance(document, dict) and "facts" in document and "recommendation" in document):
        return MachineFile(validate_facts(document, path), None, None)
    host = document.get("host")
    if host is not None and not isinstance(host, str):
        raise InputError(path, f"host: expected a host name or null, not {type(host).__name__}")
    facts = document["facts"]
    bench = document.get("bench")
    if bench is not None and isinstance(facts, dict):
        if not isinstance(bench, list):
            raise InputError(path, f"bench: expected an array of bench results, not {type(bench).__name__}")
        # The report's bench results go back into the facts they were measured with,
        # where the rules read them (facts.measurements.bench); validate_facts checks them.
        facts = {**facts, "measurements": {**(facts.get("measurements") or {}), "bench": bench}}
    from hwcheck.facts.identity import FINGERPRINT  # its pattern is compiled only for files that need it

    fingerprint = document.get("fingerprint")
    if fingerprint is not None and not (isinstance(fingerprint, str) and FINGERPRINT.fullmatch(fingerprint)):
        raise InputError(path, "fingerprint: expected 32 lowercase hex digits")
    return MachineFile(validate_facts(facts, path), host, fingerprint)


def with_cpu(facts: dict[str, Any], cpu: dict[str, Any]) -> dict[str, Any]:
    """A copy of `facts` whose CPU part is replaced by `cpu`."""
    merged = dict(facts)
    merged["cpu"] = cpu
    return merged
