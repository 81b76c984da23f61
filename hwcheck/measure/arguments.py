"""hwcheck.bench's arguments as a script passes them: lists of names, facts files."""

from __future__ import annotations

import os
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.measure.runner import MAX_STEPS


def policy_names(policies: Any) -> str | None:
    """--policies as its comma list: the API takes a list of names too."""
    if policies is None or isinstance(policies, str):
        return policies
    if isinstance(policies, list | tuple | set | frozenset) and all(isinstance(p, str) for p in policies):
        return ",".join(policies)
    raise InputError(
        "policies", f"expected a comma list or a list of precision names, not {type(policies).__name__}"
    )


def facts_argument(facts: Any) -> dict[str, Any] | None:
    """The facts to bench for: a facts dict, or the path of a facts or report file (as --facts reads it)."""
    if facts is None or isinstance(facts, dict):
        return facts
    if isinstance(facts, str | os.PathLike):
        from hwcheck.facts import load_facts

        return load_facts(str(os.fspath(facts)))
    raise InputError(
        "facts", f"expected a facts dict or the path of a facts file, not {type(facts).__name__}"
    )


def whole_count(option: str, value: Any, default: int, *, minimum: int, maximum: int = MAX_STEPS) -> int:
    """An option's whole number within its bounds, or `default` when it is not given."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InputError(option, f"must be a whole number from {minimum} to {maximum}, not {value!r}")
    return value
