"""The verdict: the recommendation beside the measured best, and the cost of loss scaling."""

from __future__ import annotations

import statistics
from typing import Any

from hwcheck.facts.stats import ROUNDS_FLOOR, compare, comparison, pair_noise

# Variants a user may be told to train in; float16 without loss scaling only prices the scaling.
RECOMMENDABLE = ("float32", "float32+tf32", "mixed_bfloat16", "mixed_float16")


def recommended_variant(policy: str, variants: list[str]) -> str:
    """The variant that stands for the recommended policy (float32 runs with TF32 where it was measured)."""
    if policy == "float32" and "float32+tf32" in variants:
        return "float32+tf32"
    return policy


def measured_best(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fastest recommendable variant that ran to the end, or None when none did."""
    finished = [r for r in results if r["status"] == "ok" and r["variant"] in RECOMMENDABLE]
    return min(finished, key=lambda r: r["ms_per_step"]["median"]) if finished else None


def judge(results: list[dict[str, Any]], policy: str, workload: str, device: str = "gpu") -> dict[str, Any]:
    """The `recommended`, `best`, `verdict`, `comparisons`, `agreement` and `findings` of a bench block.

    `device` is where it ran: TF32 is named only on a GPU, where it exists.
    """
    by_variant = {r["variant"]: r for r in results}
    # A variant skipped because the device cannot run it (TF32 without a GPU) never stands for the advice.
    variant = recommended_variant(policy, [r["variant"] for r in results if r["status"] != "skipped"])
    chosen = by_variant.get(variant)
    best = measured_best(results)
    findings: list[dict[str, Any]] = []
    recommended = {"policy": policy, "variant": variant, "ms_per_step": None}
    agreement = "unknown"
    if chosen is not None and chosen["status"] == "ok":
        recommended["ms_per_step"] = chosen["ms_per_step"]["median"]
    if best is None or chosen is None:
        pass
    elif chosen["status"] != "ok":
        agreement = "disagrees"
        # A precision whose numbers failed has its own finding (bench-numerics), with what to use.
        if not (chosen.get("numerics") or {}).get("failed"):
            findings.append(
                {
                    "id": "bench-recommended-failed",
                    "severity": "warning",
                    "message": f"On {workload}, the recommended {variant} did not finish "
                    f"({chosen['reason']}); {best['variant']} ran at {_ms(best)} ms/step.",
                    "remedy": f"Train this model in {_how(best, device)}, or find out why {variant} "
                    "failed (rerun hwcheck bench with --policies and a longer --timeout).",
                }
            )
    else:
        # When the recommendation is the fastest, the question is whether it beat the runner-up.
        rival = best if best is not chosen else _runner_up(results, chosen)
        comparison = compare(chosen, rival) if rival is not None else "faster"
        if comparison == "unsteady" and rival is not None:
            findings.append(_unsteady(chosen, rival, workload))
        elif best is chosen:
            agreement = "agrees"
        else:
            agreement = {"tie": "tie", "slower": "disagrees"}.get(comparison, "agrees")
            if comparison == "slower":
                findings.append(_disagrees(chosen, best, workload, device))
    comparisons = rank(results)
    summary = None if best is None else _summary(best)
    if summary is not None:
        summary["ties"] = [c["variant"] for c in comparisons if c["result"] == "tie"]
    return {
        "recommended": recommended,
        "best": summary,
        "verdict": verdict_of(best, comparisons),
        "comparisons": comparisons,
        "agreement": agreement,
        "findings": findings,
    }


def rank(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every other finished recommendable variant against the fastest: its ratio, interval and result."""
    best = measured_best(results)
    if best is None:
        return []
    ranked = []
    for result in results:
        if result is best or result["status"] != "ok" or result["variant"] not in RECOMMENDABLE:
            continue
        found = comparison(result, best)
        ranked.append(
            {
                "variant": result["variant"],
                "against": best["variant"],
                "ratio": round(found["ratio"], 4),
                "low": round(found["low"], 4),
                "high": round(found["high"], 4),
                "rounds": found["rounds"],
                "result": found["result"],
            }
        )
    return ranked


def undecided(samples: dict[str, list[float]]) -> bool:
    """Whether more rounds could settle the ranking: an interval against the fastest straddles the floor.

    `samples` holds each variant's per-round step times so far. An interval wholly within the
    floor is a settled tie, one wholly beyond it a settled win; only one across it is open.
    """
    results: list[dict[str, Any]] = [
        {
            "variant": name,
            "status": "ok",
            "rounds_ms": rounds,
            "ms_per_step": {"median": statistics.median(rounds)},
        }
        for name, rounds in samples.items()
        if rounds and name in RECOMMENDABLE  # float16 unscaled only prices the scaling
    ]
    if len(results) < 2:
        return False
    best = min(results, key=lambda r: r["ms_per_step"]["median"])
    for result in results:
        if result is best:
            continue
        found = comparison({**result, "noise": 0.0}, {**best, "noise": 0.0})
        if found["rounds"] is not None and found["low"] <= 1.0 + ROUNDS_FLOOR < found["high"]:
            return True
    return False


def verdict_of(best: dict[str, Any] | None, comparisons: list[dict[str, Any]]) -> str:
    """`clear` (one fastest), `tie` (others within the noise of it), `too noisy` or `unknown`."""
    if best is None:
        return "unknown"
    if any(c["result"] == "unsteady" for c in comparisons):
        return "too noisy"
    return "tie" if any(c["result"] == "tie" for c in comparisons) else "clear"


def loss_scaling_cost(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """mixed_float16 with loss scaling against without: what the scaling costs, when both ran.

    The cost is the comparison's ratio less one (paired by round where the rounds allow), and
    `low`/`high` its interval, so the cost and its verdict come from the same figures.
    """
    by_variant = {r["variant"]: r for r in results if r["status"] == "ok"}
    scaled, unscaled = by_variant.get("mixed_float16"), by_variant.get("mixed_float16-noscale")
    if scaled is None or unscaled is None:
        return None
    found = comparison(scaled, unscaled)
    return {
        "with_ms": scaled["ms_per_step"]["median"],
        "without_ms": unscaled["ms_per_step"]["median"],
        "cost": round(found["ratio"] - 1.0, 4),
        "noise": round(pair_noise(scaled["noise"], unscaled["noise"]), 4),
        "low": round(found["low"], 4),
        "high": round(found["high"], 4),
        "comparison": found["result"],
    }


def paired_speedups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results with each speed-up over float32 taken from its comparison with float32.

    Interleaved rounds compare two precisions by the median of their per-round ratios: the
    speed-up states that same figure, so the table and the comparisons never disagree. Results
    without enough rounds keep the ratio of their medians (what `comparison` falls back to).
    """
    baseline = next((r for r in results if r["variant"] == "float32" and r["status"] == "ok"), None)
    if baseline is None:
        return results
    updated = []
    for result in results:
        if result["status"] == "ok" and result.get("speedup") is not None:
            result = {**result, "speedup": round(comparison(baseline, result)["ratio"], 4)}
        updated.append(result)
    return updated


def spread_text(found: dict[str, Any], noise: float | None = None, *, count_rounds: bool = True) -> str:
    """A comparison's uncertainty in words: its interval over the rounds, or the runs' noise.

    `count_rounds` False leaves the number of rounds out, for a sentence that already gives it.
    """
    if found.get("rounds"):
        over = f" over {found['rounds']} rounds" if count_rounds else ""
        return f"interval {found['low']:.2f}-{found['high']:.2f}x{over}"
    if noise is None:
        return f"interval {found['low']:.2f}-{found['high']:.2f}x"
    return f"noise ±{noise:.0%}"


def _runner_up(results: list[dict[str, Any]], chosen: dict[str, Any]) -> dict[str, Any] | None:
    """The fastest finished recommendable variant other than `chosen`, or None."""
    others = [r for r in results if r is not chosen and r["status"] == "ok" and r["variant"] in RECOMMENDABLE]
    return min(others, key=lambda r: r["ms_per_step"]["median"]) if others else None


def _disagrees(chosen: dict[str, Any], best: dict[str, Any], workload: str, device: str) -> dict[str, Any]:
    found = comparison(chosen, best)
    spread = spread_text(found, pair_noise(chosen["noise"], best["noise"]))
    return {
        "id": "bench-disagrees",
        "severity": "warning",
        "message": f"On {workload}, {best['variant']} ran at {_ms(best)} ms/step, {found['ratio']:.2f}x as "
        f"fast as the recommended {chosen['variant']} at {_ms(chosen)} ms/step ({spread}).",
        "remedy": f"For this model, train in {_how(best, device)}; the recommendation comes from the "
        "hardware tables, the measurement from this model on this machine.",
    }


def _unsteady(chosen: dict[str, Any], best: dict[str, Any], workload: str) -> dict[str, Any]:
    found = comparison(chosen, best)
    if found["rounds"]:
        how = (
            f"{chosen['variant']} took {found['ratio']:.2f}x the step time of {best['variant']} "
            f"({spread_text(found)})"
        )
    else:
        how = f"step times spread by ±{max(chosen['noise'] or 0.0, best['noise'] or 0.0):.0%} of their median"
    return {
        "id": "bench-too-noisy",
        "severity": "info",
        "message": f"On {workload}, {how}: too unsteady "
        f"to say whether {chosen['variant']} ({_ms(chosen)} ms/step) or {best['variant']} "
        f"({_ms(best)} ms/step) is faster.",
        "remedy": "Rerun hwcheck bench when the machine is otherwise idle, or with more --steps.",
    }


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "variant": result["variant"],
        "policy": result["policy"],
        "tf32": result["tf32"],
        "ms_per_step": result["ms_per_step"]["median"],
        "speedup": result["speedup"],
    }


def _how(result: dict[str, Any], device: str) -> str:
    if result["variant"] == "float32+tf32":
        return "float32 with TF32 matmuls on"
    if result["variant"] == "float32":
        return "float32 with TF32 off" if device == "gpu" else "float32"
    scaling = " with loss scaling" if result["policy"] == "mixed_float16" else ""
    return f"{result['policy']}{scaling}"


def _ms(result: dict[str, Any]) -> str:
    return f"{result['ms_per_step']['median']:.3g}"
