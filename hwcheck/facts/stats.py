"""Step-time statistics and comparisons: pure functions over milliseconds."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

# Between two processes the clock, the placement and the neighbours change, which no single
# run's spread shows: differences below this fraction are a tie however steady each run was.
NOISE_FLOOR = 0.02
# A run whose IQR is more than half its median (a neighbour stealing the CPU, a GPU
# clocking down) cannot rank precisions: its median is not a property of the model.
MAX_STEADY_NOISE = 0.5


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
    `unsteady` when either run was too noisy to rank at all (MAX_STEADY_NOISE).
    """
    if max(first["noise"] or 0.0, second["noise"] or 0.0) > MAX_STEADY_NOISE:
        return "unsteady"
    a, b = first["ms_per_step"]["median"], second["ms_per_step"]["median"]
    difference = abs(a - b) / min(a, b)
    if difference <= pair_noise(first["noise"], second["noise"]):
        return "tie"
    return "faster" if a < b else "slower"


def loss_trend(losses: Sequence[float]) -> bool:
    """Whether the loss went down: the mean of the last quarter of steps below the first quarter's."""
    if len(losses) < 2:
        return False
    quarter = max(1, len(losses) // 4)
    return statistics.fmean(losses[-quarter:]) < statistics.fmean(losses[:quarter])
