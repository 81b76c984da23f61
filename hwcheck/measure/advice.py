"""`hwcheck doctor --measure`: a short bench decides what the tables cannot, and is remembered.

The rules say when a measurement can decide and which precisions to compare
(recommendation.measure, rules/policy/policy.toml measure_candidates); this module runs
`hwcheck bench` on them within the budget, marks the block as doctor --measure's
(rules/policy/bench.toml's measured-* rules follow only such blocks) and keeps it in the
private cache (hwcheck/base/tables.py), named by everything that changes the answer: the CPU
and its flags, the GPUs, the driver and libraries, the framework versions, the backend, the
device, the workload and the candidates (and hwcheck's version, in every cache key). A second
--measure on the same machine reuses it; --no-cache measures again; a cache that cannot be
written only costs the reuse.
"""

from __future__ import annotations

import json
import math
import os

from hwcheck.base.errors import InputError
from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import cache_key, cached_document, store_document
from hwcheck.engine.measured import MEASURED_FOR
from hwcheck.engine.outcome import runtime_framework

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.recommendation import Recommendation

# The built-in workload doctor measures: two warm-up steps, nine interleaved rounds, within the budget.
WORKLOAD = "mlp"
# Bumped when what a cache entry holds, or how it is named, changes.
CACHE_FORMAT = 3  # 2: blocks measured in interleaved rounds; 3: named by kernel release and usable cores
# The least budget suggested when one ran out before anything was timed: torch's import and nine
# rounds of the mlp take about 10 s on an idle 2-core VM (tests/test_doctor_measure.py), six
# times that leaves room for a loaded machine.
ENOUGH_BUDGET = 60.0
# The bench devices doctor's decision maps to (other devices have no candidates in the rules).
BENCH_DEVICES = {"cpu": "cpu", "gpu": "gpu"}


class Measured(NamedTuple):
    """What doctor --measure did: the facts with the block (when there is one), and a sentence."""

    facts: dict[str, Any]
    status: str  # measured, reused or not measured
    reason: str
    block: dict[str, Any] | None = None


def measure_advice(
    facts: dict[str, Any],
    recommendation: Recommendation,
    *,
    budget: float,
    use_cache: bool = True,
    progress: Any = None,
) -> Measured:
    """Bench the recommendation's measure candidates (or reuse the recorded bench) and add the block."""
    candidates = list(recommendation.measure["candidates"])
    device = BENCH_DEVICES.get(recommendation.device)
    if not candidates or device is None:
        return Measured(facts, "not measured", "the tables decide here, so there is nothing to measure")
    key = measure_key(facts, recommendation, candidates)
    if use_cache and key is not None:
        block = _remembered(key, candidates, device)
        if block is not None:
            reason = f"reused {_describe(block, recommendation)}"
            return Measured(_with_block(facts, block), "reused", reason, block)
    try:
        block = run_bench(facts, recommendation, candidates, device, budget, progress)
    except InputError as error:
        return Measured(facts, "not measured", f"could not measure: {error}")
    from hwcheck.measure.verify import other_copy

    refused = other_copy(block.get("framework_files") or {})
    if refused is not None:
        return Measured(facts, "not measured", refused)
    block = {**block, "measured_for": MEASURED_FOR}
    if not measured_anything(block):
        # A run in which every precision failed (a timeout under load, a broken install) says
        # nothing about the machine: it is neither cached nor added to the facts, where the
        # rules would take it for a measurement that could not decide.
        return Measured(facts, "not measured", nothing_measured(block, budget))
    if key is not None:
        store_document(key, {"format": CACHE_FORMAT, "block": block})
    return Measured(
        _with_block(facts, block), "measured", f"measured {_describe(block, recommendation)}", block
    )


def run_bench(
    facts: dict[str, Any],
    recommendation: Recommendation,
    candidates: list[str],
    device: str,
    budget: float,
    progress: Any = None,
) -> dict[str, Any]:
    """hwcheck bench of the candidates on the advised device, in the advice's framework, within `budget`."""
    from hwcheck.measure import session
    from hwcheck.measure.rounds import DEFAULT_ROUNDS
    from hwcheck.measure.runner import DEFAULT_TIMEOUT

    bench = session.bench  # looked up at each call: the tests count the calls
    options: dict[str, Any] = dict(
        workload=WORKLOAD,
        framework=runtime_framework(recommendation.framework),  # a trainer's advice is PyTorch's
        policies=",".join(candidates),
        device=device,
        facts=facts,
        # Two warm-up steps, then the full nine rounds, each precision in two processes where the
        # budget leaves room: the advice follows only a verdict that reproduces.
        quick=True,
        rounds=DEFAULT_ROUNDS,
        replicas=session.REPLICAS,
        budget=budget,
        timeout=min(DEFAULT_TIMEOUT, budget),
        progress=progress,
    )
    # Keras computes on the backend the advice is for (keras.json's, when KERAS_BACKEND is unset).
    keras_backend = recommendation.backend if recommendation.framework == "keras" else None
    saved = os.environ.get("KERAS_BACKEND")
    if keras_backend is not None:
        os.environ["KERAS_BACKEND"] = keras_backend
    try:
        block = bench(**options)
    finally:
        if keras_backend is not None:
            if saved is None:
                os.environ.pop("KERAS_BACKEND", None)
            else:
                os.environ["KERAS_BACKEND"] = saved
    if not isinstance(block, dict) or "results" not in block:
        raise InputError("--measure", "hwcheck bench returned no bench block")
    return block


def nothing_measured(block: dict[str, Any], budget: float) -> str:
    """Why a bench block that timed no precision measured nothing, and the budget that would do."""
    failures = [
        (str(result.get("variant")), str(result.get("reason") or result.get("status") or "failed"))
        for result in block.get("results") or []
        if isinstance(result, dict)
    ]
    from hwcheck.measure.runner import BUDGET_RAN_OUT

    said = "; ".join(f"{variant}: {reason}" for variant, reason in failures) or "no precision ran"
    text = f"nothing was measured ({said})"
    if failures and all(reason.startswith(BUDGET_RAN_OUT) for _, reason in failures):
        # The frameworks had not loaded (or warmed up) when the budget ended: loading alone took
        # longer than it, and the rounds need as long again.
        enough = max(ENOUGH_BUDGET, 10.0 * math.ceil(2.0 * budget / 10.0))
        text += (
            f"; the {budget:.0f} s budget ran out before any precision was timed: "
            f"a --budget of {enough:.0f} s or more leaves time to load the framework and measure"
        )
    return text


def measured_anything(block: dict[str, Any]) -> bool:
    """Whether a bench block timed at least one precision (its status ok, with step times)."""
    return any(
        isinstance(result, dict) and result.get("status") == "ok" and result.get("ms_per_step")
        for result in block.get("results") or []
    )


def measure_key(facts: dict[str, Any], recommendation: Recommendation, candidates: list[str]) -> str | None:
    """The cache key of a measurement: what changes its answer on this machine; None when unnameable.

    The facts name the hardware and software; the kernel release (its scheduler and the
    mitigations it applies) and the cores this process may use (affinity and cgroup quota)
    are read here, since no facts file records them and each changes the timings.
    """
    from hwcheck.facts import section
    from hwcheck.measure.machine_load import usable_cores

    cpu = section(facts, "cpu")
    gpus = [
        {key: gpu.get(key) for key in ("vendor", "name", "compute_capability", "arch", "memory_mib", "mig")}
        for gpu in facts.get("gpus") or []
        if isinstance(gpu, dict)
    ]
    frameworks = section(facts, "frameworks")
    versions = {
        name: {key: entry.get(key) for key in ("version", "cuda", "rocm", "jaxlib", "cuda_build")}
        for name, entry in sorted(frameworks.items())
        if isinstance(entry, dict)
    }
    libraries = {
        name: section(facts, name).get("version")
        for name in ("nvidia_driver", "cuda", "cudnn", "cublas", "rocm")
    }
    inputs = {
        "format": CACHE_FORMAT,
        "cpu": {"model": cpu.get("model"), "flags": sorted(cpu.get("flags") or [])},
        "gpus": gpus,
        "libraries": libraries,
        "frameworks": versions,
        "environment": section(facts, "environment"),
        "framework": runtime_framework(recommendation.framework),
        "backend": recommendation.backend,
        "device": recommendation.device,
        "runtime": recommendation.runtime,
        "workload": WORKLOAD,
        "quick": True,
        "candidates": candidates,
        "kernel": os.uname().release if hasattr(os, "uname") else None,
        "usable_cores": dict(zip(("cores", "quota"), usable_cores(), strict=True)),
    }
    try:
        text = json.dumps(inputs, sort_keys=True, allow_nan=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return None
    return cache_key("measure", text.encode("utf-8", "surrogatepass"))


def _remembered(key: str, candidates: list[str], device: str) -> dict[str, Any] | None:
    """The block recorded under `key`, or None when there is none or it is not exactly one."""
    entry = cached_document(key)
    if entry is None or entry.get("format") != CACHE_FORMAT:
        return None
    block = entry.get("block")
    if not isinstance(block, dict) or block.get("measured_for") != MEASURED_FOR:
        return None
    from hwcheck.facts import schema_problem

    if schema_problem(block, "bench") is not None or not measured_anything(block):
        return None  # damaged or edited, or nothing was measured: measured again
    measured = {r.get("variant") for r in block.get("results") or [] if isinstance(r, dict)}
    if (block.get("device") or {}).get("kind") != device or not set(candidates) <= measured:
        return None
    return block


def _with_block(facts: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    from hwcheck.facts.bench import with_bench

    return with_bench(facts, [block])


def _describe(block: dict[str, Any], recommendation: Recommendation) -> str:
    """ "float32, bfloat16 autocast on the CPU (Intel Xeon) with torch 2.13.0+cpu, 2026-11-26 12:32 UTC".

    The precisions in the words of the advice's framework (Keras policy names only for Keras).
    """
    from hwcheck.engine.measured import variant_label

    device = block.get("device") or {}
    framework = runtime_framework(recommendation.framework)
    family = "keras" if framework in ("keras", "tensorflow") else framework
    variants = ", ".join(
        variant_label(str(r.get("variant")), family, str(device.get("kind")))
        for r in block.get("results") or []
        if isinstance(r, dict)
    )
    name = f" ({device['name']})" if device.get("name") else ""
    framework = str(block.get("framework"))
    version = (block.get("framework_versions") or {}).get(framework)
    when = str(block.get("time") or "")[:16].replace("T", " ")
    text = f"{variants} on the {str(device.get('kind')).upper()}{name} with {framework}"
    text += f" {version}" if version else ""
    return text + (f", {when} UTC" if when else "")
