"""The doctor report's `measure` line: what doctor --measure did, found, or would bench."""

from __future__ import annotations

from typing import Any

from hwcheck.recommendation import Recommendation


def measure_line(
    recommendation: Recommendation, measured: dict[str, str] | None, facts: dict[str, Any] | None = None
) -> str:
    """What doctor --measure did (measured now, reused from the cache, or why not), or what it would bench.

    Once a measurement in `facts` has settled the question on the advised device (a clear
    verdict, or a tie that keeps the tables' answer), the line says so and invites no other.
    """
    measure = recommendation.measure
    found = _measurement(recommendation, facts)
    settled = found is not None and (found["decided"] or found["tie"])
    if measured is not None:
        status = measured.get("status") or "not measured"
        reason = measured.get("reason") or ""
        if status == "measured":
            return f"Measured now: {reason.removeprefix('measured ')}."
        if status == "reused":
            again = "" if settled else " (--no-cache measures again)"
            return f"Reused from the cache: {reason.removeprefix('reused ')}{again}."
        return f"Not measured: {reason}."
    if found is not None:
        outcome = (
            "it decides the advice"
            if found["decided"]
            else "the precisions tied within the noise, so the tables' answer stands"
            if found["tie"]
            else "no verdict (hwcheck doctor --measure --no-cache measures again)"
        )
        return f"Measured on this machine ({found['where']}): {outcome}."
    candidates = measure.get("candidates") or []
    if not candidates:
        return ""
    words = ", ".join(_variant_words([str(c) for c in candidates], recommendation))
    return (
        f"The tables cannot rank {words} for your model on this machine: "
        "hwcheck doctor --measure benches them here (a minute at most, then cached)."
    )


def _measurement(recommendation: Recommendation, facts: dict[str, Any] | None) -> dict[str, Any] | None:
    """The doctor --measure measurement the rules used for the advised device, or None."""
    if not facts or not isinstance(facts.get("measurements"), dict):
        return None
    from hwcheck.engine.measured import measure_variables
    from hwcheck.engine.outcome import runtime_framework

    # A trainer's advice (Lightning, the HF Trainer...) is measured as its framework's.
    framework = runtime_framework(recommendation.framework)
    found = measure_variables(facts, framework, recommendation.backend).get(recommendation.device)
    return found if found and found.get("found") else None


def _variant_words(variants: list[str], recommendation: Recommendation) -> list[str]:
    """Bench variants in the words of the advice's framework (bfloat16 autocast for PyTorch)."""
    from hwcheck.engine.measured import variant_label
    from hwcheck.engine.outcome import runtime_framework

    framework = runtime_framework(recommendation.framework)
    family = "keras" if framework in ("keras", "tensorflow") else framework
    return [variant_label(variant, family, recommendation.device) for variant in variants]
