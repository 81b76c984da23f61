"""How many rounds, and how many steps per variant in each, from the warm-up and the time allowed.

A sample is one variant's batch of steps in one round; its mean step time is what rounds
compare. A sample shorter than MIN_SAMPLE_MS is mostly timer and scheduler jitter, so fast
steps run in batches long enough to reach it; a budget (doctor --measure) scales the batches
down first, then the rounds, never below one step.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from hwcheck.base.records import NamedTuple
from hwcheck.measure.numerics import merged as merged_numerics

MIN_SAMPLE_MS = 200.0
# Nine rounds: a bootstrap interval of the median of nine ratios leaves out the most extreme
# round on each side, so one disturbed round cannot decide; five with --quick.
DEFAULT_ROUNDS, QUICK_ROUNDS, MAX_ROUNDS = 9, 5, 100
MAX_BATCH = 100_000


class Plan(NamedTuple):
    """The rounds to run and each variant's steps per round."""

    rounds: int
    steps: dict[str, int]


def step_estimate(warmup_ms: list[float]) -> float:
    """A step's time from the warm-up: the first step pays for compilation, so it counts only alone."""
    times = warmup_ms[1:] or warmup_ms
    return max(statistics.median(times), 1e-3)


def plan_rounds(
    estimates: dict[str, float],
    *,
    steps: int,
    rounds: int,
    seconds_left: float | None = None,
    calibrate: bool = True,
) -> Plan:
    """Steps per round per variant: at least steps / rounds and MIN_SAMPLE_MS of work, in the time left.

    `calibrate` False (the user counted the steps): `steps` in all, spread over the rounds.
    One variant alone has nothing to take turns with: one round.
    """
    if not estimates:
        return Plan(rounds, {})
    if len(estimates) == 1:
        rounds = 1
    if not calibrate:
        rounds = min(rounds, steps)
        return Plan(rounds, {name: math.ceil(steps / rounds) for name in estimates})
    floor_steps = math.ceil(steps / rounds)
    batch = {
        name: min(MAX_BATCH, max(floor_steps, math.ceil(MIN_SAMPLE_MS / estimate)))
        for name, estimate in estimates.items()
    }
    if seconds_left is None:
        return Plan(rounds, batch)
    left_ms = max(0.0, seconds_left) * 1000.0
    per_round = sum(batch[name] * estimates[name] for name in estimates)
    if per_round * rounds > left_ms:
        scale = left_ms / (per_round * rounds)
        batch = {name: max(1, math.floor(count * scale)) for name, count in batch.items()}
        per_round = sum(batch[name] * estimates[name] for name in estimates)
        rounds = max(1, min(rounds, math.floor(left_ms / per_round) if per_round else rounds))
    return Plan(rounds, batch)


def turn_order(names: list[str], round_index: int) -> list[str]:
    """The variants in the order they run in a round: rotated each round, so none always goes first."""
    if not names:
        return []
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def merge_replicas(raws: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's result from the processes that took its rounds in turn (round r ran in r mod n)."""
    if len(raws) == 1:
        return raws[0]
    failed = next((raw for raw in raws if raw.get("status") != "ok"), None)
    if failed is not None:
        return failed
    merged = dict(raws[0])
    rounds: list[float] = []
    for index in range(max(len(raw.get("rounds_ms") or []) for raw in raws)):
        for raw in raws:
            own = raw.get("rounds_ms") or []
            if index < len(own):
                rounds.append(own[index])
    merged["rounds_ms"] = rounds
    merged["times_ms"] = [t for raw in raws for t in raw.get("times_ms") or []]
    merged["losses"] = [loss for raw in raws for loss in raw.get("losses") or []]
    merged["finite"] = all(raw.get("finite") for raw in raws)
    merged["decreased"] = all(raw.get("decreased") for raw in raws)
    merged["numerics"] = merged_numerics([raw.get("numerics") for raw in raws])
    peaks = [raw["peak_memory_mib"] for raw in raws if isinstance(raw.get("peak_memory_mib"), int | float)]
    merged["peak_memory_mib"] = max(peaks) if peaks else None
    merged["notes"] = list(dict.fromkeys(note for raw in raws for note in raw.get("notes") or []))
    return merged
