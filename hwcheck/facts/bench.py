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


def same_release(one: Any, other: Any) -> bool:
    """Whether two version strings name one release: "2.11" is "2.11.0+cu130", "2.14.0" is not "2.13.0"."""
    # The local label (+cpu, +cu130) is the build, which the device check tells apart; a version
    # written shorter ("2.11") stands for every release it is a prefix of.
    parts = [str(version).split("+", 1)[0].strip().split(".") for version in (one, other)]
    shorter = min(len(parts[0]), len(parts[1]))
    return parts[0][:shorter] == parts[1][:shorter]


class Freshness:
    """Whether bench blocks still describe one machine: its framework versions and devices, read once."""

    def __init__(self, facts: dict[str, Any]) -> None:
        frameworks = facts.get("frameworks")
        self.frameworks_known = isinstance(frameworks, dict)
        self.versions = {
            name: str(entry["version"])
            for name, entry in (frameworks.items() if isinstance(frameworks, dict) else ())
            if isinstance(entry, dict) and entry.get("version")
        }
        # The GPU names gathered once: each block is then matched in one look-up.
        self.gpu_names = {
            str(g["name"]) for g in facts.get("gpus") or [] if isinstance(g, dict) and g.get("name")
        }
        self.cpu_model = (facts.get("cpu") or {}).get("model")
        self.tpu = bool((facts.get("tpu") or {}).get("present"))

    def stale(self, block: dict[str, Any]) -> str | None:
        """Why `block` no longer applies to this machine (another framework version or device), or None."""
        return self._version_change(block) or self._device_change(block)

    def _version_change(self, block: dict[str, Any]) -> str | None:
        measured_with = block.get("framework_versions") or {}
        main = block.get("framework")
        for name, version in sorted(measured_with.items()):
            installed = self.versions.get(name)
            if installed is None:
                # Only the framework the bench ran must be here; others it saw may be absent.
                if name == main and self.frameworks_known:
                    return f"measured with {name} {version}, which this machine does not have"
                continue
            if not same_release(installed, version):
                return f"measured with {name} {version}, this machine has {name} {installed}"
        return None

    def _device_change(self, block: dict[str, Any]) -> str | None:
        device = block.get("device") or {}
        kind, name = device.get("kind"), device.get("name")
        if kind == "gpu":
            if not self.gpu_names:
                return "measured on a GPU, this machine has none"
            if name is not None and name not in self.gpu_names:
                return f"measured on the {name}, this machine has {', '.join(sorted(self.gpu_names))}"
        elif kind == "tpu":
            if not self.tpu:
                return "measured on a TPU, this machine has none"
        elif name is not None and self.cpu_model is not None and name != self.cpu_model:
            return f"measured on the CPU {name}, this machine's is {self.cpu_model}"
        return None
