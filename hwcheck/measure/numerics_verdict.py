"""Whether each precision's numbers held: judged from what its children observed, against float32's.

A precision fails its numerics when its loss was ever NaN or inf; when, without loss scaling,
a gradient was; when the loss scaler (PyTorch's GradScaler, Keras's LossScaleOptimizer)
skipped every step or its scale fell below 1 (float16 overflows even unscaled); when markedly
more of its gradients were exactly zero than float32's (they underflowed); or when its losses
departed from float32's over the same steps and data. Such a
precision is failed (never the measured best, never recommended) and a finding says what
happened and what to train in instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# How far a precision's losses may stray from float32's over the same steps and data, as a
# fraction of float32's largest loss there. The built-in mlp on this CPU (torch 2.13, 20 steps,
# 2026-11-28) departed 0.04 % in bfloat16 and 0.01 % in float16 with GradScaler; but a loss that
# is a small difference of large terms is rounded far more: doctor --verify's one JAX step
# (outputs that cancel) came out 22 % off float32's in bfloat16 with nothing wrong. Half of
# float32's loss is beyond rounding of either kind: a trajectory that stopped or went elsewhere.
DEPARTURE_LIMIT = 0.50
# How many more of the gradient's elements may be exactly zero than in float32, as a fraction:
# the mlp's were 0.03 % in every precision, float16 without scaling 0.04 %.
UNDERFLOW_LIMIT = 0.05
# GradScaler's scale below this: float16 overflows even with the loss unscaled.
SCALE_FLOOR = 1.0
# Two runs of float32 whose losses differ by more than this (relative) are not deterministic:
# then no trajectory is compared with them.
SAME_LOSS = 1e-6
# Where a precision fails its numerics, the first that held is advised instead.
INSTEAD = ("mixed_bfloat16", "float32+tf32", "float32")
REFERENCE = "float32"
# Variants that only price something (float16 without loss scaling prices the scaling) are
# observed but never failed for it: they are never recommended anyway.
PRICING_ONLY = ("mixed_float16-noscale",)
# The loss scalers whose skipped steps and scale are read: PyTorch's and Keras 3's.
SCALERS = ("GradScaler", "LossScaleOptimizer")


def judged(
    entries: list[dict[str, Any]],
    raws: dict[str, dict[str, Any]],
    label: str,
    framework: str = "keras",
    device: str = "cpu",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The results[] entries with their `numerics` (those that fail it failed), and the findings.

    The findings name the precisions in `framework`'s words on `device` (bfloat16 autocast for torch).
    """
    reference = (raws.get(REFERENCE) or {}).get("numerics")
    reference = reference if isinstance(reference, dict) else None
    for entry in entries:
        observed = (raws.get(entry["variant"]) or {}).get("numerics")
        entry["numerics"] = _numerics(entry["variant"], observed, reference)
        failed = (entry["numerics"] or {}).get("failed")
        if failed and entry["status"] == "ok" and entry["variant"] not in PRICING_ONLY:
            entry.update(status="failed", reason=f"numerics: {failed}", speedup=None)
    from hwcheck.engine.measured import variant_label

    family = "keras" if framework in ("keras", "tensorflow") else framework

    def words(variant: str) -> str:
        return variant_label(variant, family, device)

    findings = [
        _finding(entry, entries, label, words)
        for entry in entries
        if (entry["numerics"] or {}).get("failed") and entry["variant"] not in PRICING_ONLY
    ]
    return entries, findings


def judge_one(observed: dict[str, Any], reference: dict[str, Any] | None, variant: str) -> dict[str, Any]:
    """One step's numerics (doctor --verify) beside float32's same step.

    Its loss's departure is recorded, never judged: one step's loss differs by its rounding
    alone, and a trajectory takes more than one step.
    """
    return _numerics(variant, observed, reference, least=1, trajectory=False) or {"failed": None}


def _numerics(
    variant: str, observed: Any, reference: dict[str, Any] | None, least: int = 2, trajectory: bool = True
) -> dict[str, Any] | None:
    if not isinstance(observed, dict):
        return None
    zero, steps = observed.get("zero_gradient_fraction"), _count(observed.get("steps"))
    underflow = None
    if variant != REFERENCE and reference is not None and isinstance(zero, float):
        base = reference.get("zero_gradient_fraction")
        underflow = round(max(0.0, zero - base), 6) if isinstance(base, float) else None
    departure, compared = (None, 0) if variant == REFERENCE else _departure(observed, reference, least)
    found: dict[str, Any] = {
        "steps": steps,
        "nonfinite_losses": _count(observed.get("nonfinite_losses")),
        "first_nonfinite_loss_step": _whole(observed.get("first_nonfinite_loss_step")),
        "gradient_steps": _count(observed.get("gradient_steps")),
        "nonfinite_gradient_steps": _whole(observed.get("nonfinite_gradient_steps")),
        "zero_gradient_fraction": zero if isinstance(zero, float) else None,
        "underflow_fraction": underflow,
        "scaler_skipped_steps": _whole(observed.get("scaler_skipped_steps")),
        "final_scale": _number(observed.get("final_scale")),
        "departure": departure,
        "compared_steps": compared,
        "scaler": _scaler(observed.get("scaler")),
    }
    found["failed"] = _failure(found, trajectory)
    return found


def _scaler(observed: Any) -> str | None:
    """The loss scaler a child saw, by name (a child that said only that it had one: GradScaler)."""
    if observed in SCALERS:
        return str(observed)
    return "GradScaler" if observed is True else None


def _failure(found: dict[str, Any], trajectory: bool = True) -> str | None:
    """What went wrong with the numbers, in words; None when they held."""
    scaled = found["scaler"] is not None
    if found["nonfinite_losses"]:
        return f"the loss was not finite (NaN or inf) at step {found['first_nonfinite_loss_step'] or 1}"
    bad_gradients, read = found["nonfinite_gradient_steps"], found["gradient_steps"]
    if not scaled and bad_gradients:
        return f"gradients were NaN or inf in {bad_gradients} of the {read} steps read, with no loss scaling"
    skipped, scale, steps = found["scaler_skipped_steps"], found["final_scale"], found["steps"]
    if (
        scaled
        and skipped is not None
        and ((scale is not None and scale < SCALE_FLOOR) or (steps >= 2 and skipped >= steps))
    ):
        return (
            f"{found['scaler']} skipped {skipped} of {steps} steps (gradients overflowed) and its scale "
            f"fell to {scale:g}"
        )
    if found["underflow_fraction"] is not None and found["underflow_fraction"] > UNDERFLOW_LIMIT:
        return (
            f"{found['underflow_fraction']:.0%} more of the gradients' values were exactly zero than in "
            "float32 (they underflowed)"
        )
    if trajectory and found["departure"] is not None and found["departure"] > DEPARTURE_LIMIT:
        return (
            f"its loss departed {found['departure']:.0%} from float32's over the same "
            f"{found['compared_steps']} steps and data"
        )
    return None


def _departure(
    observed: dict[str, Any], reference: dict[str, Any] | None, least: int
) -> tuple[float | None, int]:
    """The largest gap between this precision's losses and float32's, step by step, over float32's scale.

    None when float32's own processes disagree (the step is not deterministic) or fewer than
    `least` steps compare.
    """
    if reference is None:
        return None, 0
    heads, references = _heads(observed), _heads(reference)
    if not heads or not references or not _agree(references):
        return None, 0
    pairs = [(a, b) for a, b in zip(heads[0], references[0], strict=False) if a is not None and b is not None]
    scale = max((abs(b) for _, b in pairs), default=0.0)
    if len(pairs) < least or scale <= 0.0:
        return None, len(pairs)
    return round(max(abs(a - b) for a, b in pairs) / scale, 6), len(pairs)


def _heads(numerics: dict[str, Any]) -> list[list[float | None]]:
    heads = numerics.get("loss_heads")
    if not isinstance(heads, list):
        return []
    return [
        [v if isinstance(v, int | float) and not isinstance(v, bool) else None for v in head]
        for head in heads
        if isinstance(head, list)
    ]


def _agree(heads: list[list[float | None]]) -> bool:
    first = heads[0]
    for other in heads[1:]:
        for a, b in zip(first, other, strict=False):
            if (a is None) != (b is None):
                return False
            if a is not None and b is not None and abs(a - b) > SAME_LOSS * max(abs(a), abs(b), 1e-12):
                return False
    return True


def _finding(
    entry: dict[str, Any], entries: list[dict[str, Any]], label: str, words: Callable[[str], str]
) -> dict[str, Any]:
    by_variant = {e["variant"]: e for e in entries}
    instead = next(
        (
            name
            for name in INSTEAD
            if name != entry["variant"]
            and (by_variant.get(name) or {}).get("status") == "ok"
            and not ((by_variant[name].get("numerics") or {}).get("failed"))
        ),
        None,
    )
    reference = (by_variant.get(REFERENCE) or {}).get("numerics") or {}
    if instead is not None:
        remedy = f"Train this model in {words(instead)} instead: its numbers held here."
    elif reference.get("failed"):
        remedy = (
            "The numbers failed in float32 too, so the model itself diverges: check its learning rate, "
            "its initialisation and its data before choosing a precision."
        )
    else:
        remedy = "Train this model in float32, whose numbers held here."
    return {
        "id": "bench-numerics",
        "severity": "warning",
        "message": f"On {label}, {words(entry['variant'])} failed its numerics check: "
        f"{entry['numerics']['failed']}. It is not recommended for this model.",
        "remedy": remedy,
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
