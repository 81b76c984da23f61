"""Step-time statistics and comparisons: pure functions over milliseconds."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

# Between two processes the clock, the placement and the neighbours change, which no single
# run's spread shows: differences below this fraction are a tie however steady each run was.
NOISE_FLOOR = 0.02
# A run whose IQR is more than half its median (a neighbour stealing the CPU, a GPU
# clocking down) cannot rank precisions: its median is not a property of the model.
MAX_STEADY_NOISE = 0.5
# Paired rounds see the noise within a pair of processes, not between processes (each has its
# own memory layout, placement and caches for its whole life): on the 2-core Xeon (AMX) dev VM,
# 2026-11-26, six back-to-back torch 2.13 MLP runs of float32 against bf16 gave per-run ratios
# from 0.96 to 1.10, each with an interval of only ±1-3 %. A precision must beat another by more
# than this fraction, its whole interval beyond it, to win a run that reproduces.
ROUNDS_FLOOR = 0.15
# Paired rounds: at least this many before their ratios are compared round by round, the
# interval's coverage, its resamples (seeded, so the same times always give the same verdict),
# and the widest interval (high / low) that still ranks anything.
MIN_ROUNDS = 3
INTERVAL = 0.90
RESAMPLES = 2000
MAX_INTERVAL_WIDTH = 1.5


def summarize(milliseconds: Sequence[float]) -> dict[str, float]:
    """Median, interquartile range, min and max of step times."""
    if not milliseconds:
        raise ValueError("no step times")
    ordered = sorted(milliseconds)
    if len(ordered) < 2:
        lower = upper = ordered[0]
    else:
        lower, _middle, upper = statistics.quantiles(ordered, n=4, method="inclusive")
    return {
        "median": statistics.median(ordered),
        "iqr": upper - lower,
        "min": ordered[0],
        "max": ordered[-1],
    }


def relative_spread(summary: dict[str, float]) -> float:
    """One run's noise: its IQR as a fraction of its median."""
    median = summary["median"]
    return summary["iqr"] / median if median > 0 else 0.0


def pair_noise(first: float, second: float) -> float:
    """The noise of a difference between two runs: their spreads combined, never below the floor."""
    return max(math.hypot(first, second), NOISE_FLOOR)


def speedup(float32_median: float, median: float) -> float:
    """How many times faster than float32 (>1 is faster)."""
    return float32_median / median


def compare(first: dict[str, Any], second: dict[str, Any]) -> str:
    """`faster`, `slower` or `tie`: the first result against the second, allowing for the noise.

    Each argument is a result with `ms_per_step.median` and `noise` (a relative spread);
    `unsteady` when either run was too noisy to rank at all (MAX_STEADY_NOISE). Results
    measured in the same interleaved rounds (`rounds_ms`) are compared round by round.
    """
    return comparison(first, second)["result"]


def comparison(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The first result against the second: `result`, `ratio` (first's ms / second's) and its interval.

    Paired rounds give the median of the per-round ratios and a bootstrap interval of it:
    faster or slower when the whole interval lies beyond ROUNDS_FLOOR, else a tie, or
    unsteady when the interval is wider than MAX_INTERVAL_WIDTH. Results without rounds
    fall back to the medians and their spreads.
    """
    paired = _paired_rounds(first, second)
    if paired is not None:
        ratios = [a / b for a, b in paired]
        ratio = statistics.median(ratios)
        low, high = median_interval(ratios)
        if low > 1.0 + ROUNDS_FLOOR:
            result = "slower"
        elif high < 1.0 / (1.0 + ROUNDS_FLOOR):
            result = "faster"
        elif high / low > MAX_INTERVAL_WIDTH:
            result = "unsteady"  # neither side of the floor, and too wide to call it even
        else:
            result = "tie"
        return {"result": result, "ratio": ratio, "low": low, "high": high, "rounds": len(ratios)}
    a, b = first["ms_per_step"]["median"], second["ms_per_step"]["median"]
    noise = pair_noise(first["noise"] or 0.0, second["noise"] or 0.0)
    # Interleaved results with too few rounds to pair still came from separate processes: the
    # difference between processes (ROUNDS_FLOOR) bounds what they can tell apart.
    floor = ROUNDS_FLOOR if _interleaved(first, second) else 0.0
    return {
        "result": _compare_medians(first, second, floor),
        "ratio": a / b,
        "low": a / b / (1.0 + noise),
        "high": a / b * (1.0 + noise),
        "rounds": None,
    }


def median_interval(values: Sequence[float], coverage: float = INTERVAL) -> tuple[float, float]:
    """A percentile bootstrap interval of the median of `values`, the same for the same values."""
    if not values:
        raise ValueError("no values")
    generator = random.Random(len(values))
    count = len(values)
    medians = sorted(statistics.median(generator.choices(values, k=count)) for _ in range(RESAMPLES))
    tail = (1.0 - coverage) / 2.0
    return medians[int(tail * (RESAMPLES - 1))], medians[math.ceil((1.0 - tail) * (RESAMPLES - 1))]


def _paired_rounds(first: dict[str, Any], second: dict[str, Any]) -> list[tuple[float, float]] | None:
    """Per-round step times of both results, paired by round, or None when they were not interleaved."""
    a, b = first.get("rounds_ms"), second.get("rounds_ms")
    if not isinstance(a, list) or not isinstance(b, list):
        return None
    pairs = [
        (x, y)
        for x, y in zip(a, b, strict=False)
        if isinstance(x, int | float) and isinstance(y, int | float) and x > 0 and y > 0
    ]
    return pairs if len(pairs) >= MIN_ROUNDS else None


def _interleaved(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether both results were measured in interleaved rounds (however few)."""
    return isinstance(first.get("rounds_ms"), list) and isinstance(second.get("rounds_ms"), list)


def _compare_medians(first: dict[str, Any], second: dict[str, Any], floor: float = 0.0) -> str:
    if max(first["noise"] or 0.0, second["noise"] or 0.0) > MAX_STEADY_NOISE:
        return "unsteady"
    a, b = first["ms_per_step"]["median"], second["ms_per_step"]["median"]
    difference = abs(a - b) / min(a, b)
    if difference <= max(pair_noise(first["noise"], second["noise"]), floor):
        return "tie"
    return "faster" if a < b else "slower"


def loss_trend(losses: Sequence[float]) -> bool:
    """Whether the loss went down: the mean of the last quarter of steps below the first quarter's."""
    if len(losses) < 2:
        return False
    quarter = max(1, len(losses) // 4)
    return statistics.fmean(losses[-quarter:]) < statistics.fmean(losses[:quarter])
