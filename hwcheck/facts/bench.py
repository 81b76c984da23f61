"""Bench results as facts: read a bench file, and carry its blocks in a machine's facts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError

# Bench blocks one machine may carry (the schemas say the same): the rules read every one.
MAX_BENCH_BLOCKS = 100_000


def blocks_of(documents: Iterable[Any]) -> list[dict[str, Any]]:
    """The bench blocks of bench documents (a block, or a collection's `benches`), repeats dropped."""
    blocks: list[dict[str, Any]] = []
    seen: set[str] = set()  # each block's canonical JSON: a repeat is found in one look-up
    for document in documents:
        if not isinstance(document, dict):
            continue
        for block in document.get("benches") or [document]:
            if not isinstance(block, dict):
                continue
            key = json.dumps(block, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                blocks.append(block)
    return blocks


def read_bench(path: str | Path) -> list[dict[str, Any]]:
    """The blocks of one `hwcheck bench --json` file, checked against the bench schema."""
    from hwcheck.facts import read_json, schema_problem

    document = read_json(path)
    if not isinstance(document, dict):
        raise InputError(path, f"not a bench file: expected a JSON object, got {type(document).__name__}")
    version = document.get("schema_version")
    if version != 1 or isinstance(version, bool):
        raise InputError(path, f"bench schema_version {version!r} is not supported (this hwcheck reads 1)")
    problem = schema_problem(document, "bench")
    if problem:
        raise InputError(path, f"not a valid bench file: {problem}")
    return blocks_of([document])


def measured(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The bench blocks a machine's facts carry (facts.measurements.bench), flattened."""
    measurements = facts.get("measurements")
    if not isinstance(measurements, dict):
        return []
    return blocks_of(measurements.get("bench") or [])


def with_bench(facts: dict[str, Any], blocks: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `facts` that also carries `blocks` (after those it already has)."""
    combined = blocks_of([*measured(facts), *blocks])
    if len(combined) > MAX_BENCH_BLOCKS:
        too_many = f"{len(combined)} bench blocks, more than one machine may carry ({MAX_BENCH_BLOCKS})"
        raise InputError("--bench", too_many)
    if not combined:
        return facts
    return {**facts, "measurements": {**(facts.get("measurements") or {}), "bench": combined}}
