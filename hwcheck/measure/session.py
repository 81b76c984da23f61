"""`hwcheck.bench(...)`: probe, recommend, measure each precision, and judge."""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.engine.verdict import judge, loss_scaling_cost, paired_speedups, undecided
from hwcheck.facts.stats import MIN_ROUNDS, ROUNDS_FLOOR
from hwcheck.measure.arguments import facts_argument, policy_names, whole_count
from hwcheck.measure.machine_load import (
    cpu_times,
    environment_record,
    load_average_now,
    load_findings,
    other_busy_cores,
    place,
    process_jiffies,
)
from hwcheck.measure.numerics_verdict import judged
from hwcheck.measure.rounds import (
    DEFAULT_ROUNDS,
    MAX_ROUNDS,
    QUICK_ROUNDS,
    Plan,
    merge_replicas,
    plan_rounds,
    step_estimate,
    turn_order,
)
from hwcheck.measure.runner import (
    BENCH_SCHEMA_VERSION,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT,
    DEFAULT_WARMUP,
    MAX_TIMEOUT,
    QUICK_STEPS,
    QUICK_WARMUP,
    Progress,
    Variant,
    Worker,
    canonical_framework,
    check_framework,
    child_environment,
    default_framework,
    engine_framework,
    result_entry,
    select_variants,
)
from hwcheck.measure.target import measured_device
from hwcheck.measure.workloads.sizes import WORKLOADS, size_of

DEVICE_CHOICES = ("auto", "cpu", "gpu", "mps", "xpu")
WORKLOAD_CHOICES = (*WORKLOADS, "all")
REPLICAS = 2  # measuring processes per precision when the rounds are calibrated (1 with --quick)
# Within a budget the second process of each precision starts only when, after the first ones
# loaded, this many times their loading time is left: loading again, warming up, and the rounds.
# On a 2-core VM four TensorFlow processes importing at once took most of doctor's 60 s.
ROOM_FOR_REPLICAS = 3.0
# Of a budget, what the end takes after the last round: the children hand over their results and
# exit (a TensorFlow process takes about a second on a loaded 2-core VM), and the verdict.
FINISH_SECONDS = 2.0


def bench(
    workload: str = "mlp",
    *,
    script: str | Path | None = None,
    framework: str | None = None,
    policies: str | Sequence[str] | None = None,
    steps: int | None = None,
    warmup: int | None = None,
    quick: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    device: str = "auto",
    facts: dict[str, Any] | str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    rounds: int | None = None,
    budget: float | None = None,
    replicas: int | None = None,
) -> dict[str, Any]:
    """Measure each precision on a built-in workload or a make_step script; returns the bench block.

    The precisions take turns in `rounds` (default 9, 5 with `quick`), each round's batch long
    enough to time, each precision in `replicas` processes (default 2, 1 with `quick`);
    `budget` (seconds) bounds the whole measurement, the frameworks' imports included.
    With workload "all", returns {"schema_version", "hwcheck_version", "time", "benches": [...]}.
    """
    began = time.monotonic()
    policies = policy_names(policies)
    facts = facts_argument(facts)
    calibrate = steps is None
    steps = whole_count("--steps", steps, QUICK_STEPS if quick else DEFAULT_STEPS, minimum=1)
    rounds = whole_count(
        "--rounds", rounds, QUICK_ROUNDS if quick else DEFAULT_ROUNDS, minimum=1, maximum=MAX_ROUNDS
    )
    if budget is not None and (
        isinstance(budget, bool)
        or not isinstance(budget, int | float)
        or not math.isfinite(budget)
        or not 0 < budget <= MAX_TIMEOUT
    ):
        raise InputError("--budget", f"must be above 0 and at most {MAX_TIMEOUT:.0f} seconds, not {budget!r}")
    replicas = whole_count("replicas", replicas, 1 if quick else REPLICAS, minimum=1, maximum=REPLICAS)
    # One warm-up step at least: the first step pays for compilation and allocation.
    warmup = whole_count("--warmup", warmup, QUICK_WARMUP if quick else DEFAULT_WARMUP, minimum=1)
    if not isinstance(timeout, int | float) or not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise InputError(
            "--timeout", f"must be above 0 and at most {MAX_TIMEOUT:.0f} seconds, not {timeout!r}"
        )
    if device not in DEVICE_CHOICES:
        raise InputError(
            "--device", f"unknown device {device!r}; expected one of {', '.join(DEVICE_CHOICES)}"
        )
    if script is None and workload not in WORKLOAD_CHOICES:
        raise InputError(
            "--workload", f"unknown workload {workload!r}; expected one of {', '.join(WORKLOAD_CHOICES)}"
        )
    variants = select_variants(policies)
    accepts_scaling: bool | None = None
    if script is not None:
        from hwcheck.measure.contract import check_script, script_framework

        accepts_scaling = check_script(script)
        framework = framework or script_framework(script)
    chosen = framework is not None
    framework = canonical_framework(framework or default_framework())
    check_framework(framework, chosen=chosen)

    from hwcheck.recommendation import recommend

    probes = None
    if facts is None:
        from hwcheck.probes import collect

        collected = collect()
        facts, probes = collected.facts, collected.statuses
    recommendation = recommend(facts, probes=probes, framework=engine_framework(framework))
    target, device_name, tf32_reason = measured_device(device, facts, recommendation.device, framework)
    if tf32_reason is not None and policies is None:
        variants = [v for v in variants if not v.tf32]

    settings = {
        "framework": framework,
        "device": target,
        "steps": steps,
        "warmup": warmup,
        "timeout": float(timeout),
        "rounds": rounds,
        "replicas": replicas,
        "calibrate": calibrate,
        # The rounds share what is left of the budget once the children have loaded and warmed up.
        "deadline": None if budget is None else began + budget,
        # The rounds end earlier: handing over the results and ending the children take time too.
        "rounds_deadline": None if budget is None else began + budget - FINISH_SECONDS,
        "tf32_reason": tf32_reason,
        "accepts_scaling": accepts_scaling,
    }
    names = [str(script)] if script is not None else (list(WORKLOADS) if workload == "all" else [workload])
    blocks = [
        _bench_one(name, script is not None, variants, settings, recommendation.policy, device_name, progress)
        for name in names
    ]
    if len(blocks) == 1:
        return blocks[0]
    first = blocks[0]
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "hwcheck_version": first["hwcheck_version"],
        "time": first["time"],
        "benches": blocks,
    }


def _bench_one(
    name: str,
    is_script: bool,
    variants: list[Variant],
    settings: dict[str, Any],
    policy: str,
    device_name: str | None,
    progress: Progress | None,
) -> dict[str, Any]:
    from hwcheck.base import __version__

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    framework, target = settings["framework"], settings["device"]
    placement = place()
    raw_results: dict[str, dict[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    workers: dict[str, list[Worker]] = {}
    totals: dict[str, int] = {}
    done: dict[tuple[str, int], int] = {}

    def reporter(variant_name: str, replica: int) -> Callable[[int], None]:
        def report(count: int) -> None:
            done[variant_name, replica] = count
            if progress is not None:
                steps = sum(n for (name, _), n in done.items() if name == variant_name)
                progress(variant_name, steps, totals[variant_name])

        return report

    skipped = {variant.name: _skip_reason(variant, settings) for variant in variants}
    runnable = [variant for variant in variants if skipped[variant.name] is None]
    # Each process has its own memory layout and placement for its whole life, which the rounds
    # of one pair of processes cannot see (on the 2-core Xeon VM one bf16 process ran 1.4x slower
    # than float32 and the next 0.8x): with calibrated rounds every precision runs in two
    # processes, the rounds alternating between them, so such a difference widens the interval.
    replicas = settings["replicas"] if settings["calibrate"] and len(runnable) > 1 else 1
    deadline = settings["deadline"]
    jobs: dict[str, dict[str, Any]] = {}
    load_average = [load_average_now()]
    busy_during: list[float] = []
    plan = Plan(1, {})
    loading = time.monotonic()  # the children start loading as they are spawned
    try:
        for variant in variants:
            reason = skipped[variant.name]
            if reason is not None:
                raw_results[variant.name] = reason
                continue
            env, notes[variant.name] = child_environment(framework, variant, target)
            job = {
                "framework": framework,
                "workload": None if is_script else name,
                "script": str(Path(name).resolve()) if is_script else None,
                "policy": variant.policy,
                "tf32": variant.tf32,
                "loss_scaling": variant.loss_scaling,
                "device": target,
                "threads": placement.threads,
                "cores": placement.pinned,
                "env": env,
            }
            totals[variant.name] = replicas * settings["warmup"] + settings["steps"]
            reporter(variant.name, 0)(0)
            jobs[variant.name] = job
            # Within a budget the second processes wait to see what loading the first ones cost.
            workers[variant.name] = [
                Worker(job, settings["timeout"], reporter(variant.name, replica), deadline)
                for replica in range(replicas if deadline is None else 1)
            ]
        # The children import their frameworks side by side; each warms up alone.
        # Every child has imported its framework before any warms up: an import beside a warm-up
        # slows it, and the calibration would take that for the step's own time.
        loaded = {
            variant_name: [worker.loaded() for worker in processes]
            for variant_name, processes in workers.items()
        }
        if deadline is not None and replicas > 1:
            took = time.monotonic() - loading
            if deadline - time.monotonic() > ROOM_FOR_REPLICAS * took:
                for variant_name, processes in workers.items():
                    processes += [
                        Worker(jobs[variant_name], settings["timeout"], reporter(variant_name, r), deadline)
                        for r in range(1, replicas)
                    ]
                for variant_name, processes in workers.items():
                    loaded[variant_name] += [worker.loaded() for worker in processes[1:]]
            else:
                replicas = 1  # the budget is better spent on rounds than on loading again
        estimates: dict[str, float] = {}
        for variant_name, processes in workers.items():
            if not all(loaded[variant_name]):
                continue
            warmups = [worker.batch(settings["warmup"], warmup=True) for worker in processes]
            if all(warmups):
                estimates[variant_name] = step_estimate([t for times in warmups if times for t in times])
        rounds_end = settings["rounds_deadline"]
        seconds_left = None if rounds_end is None else rounds_end - time.monotonic()
        plan = plan_rounds(
            estimates,
            steps=settings["steps"],
            rounds=settings["rounds"],
            seconds_left=seconds_left,
            calibrate=settings["calibrate"],
        )
        for variant_name, count in plan.steps.items():
            totals[variant_name] = replicas * settings["warmup"] + count * plan.rounds
        everyone = [worker for processes in workers.values() for worker in processes]
        samples: dict[str, list[float]] = {variant_name: [] for variant_name in plan.steps}
        round_index, round_seconds = 0, 0.0
        # The planned rounds, then, within a budget, more while a comparison straddles the floor
        # (neither a tie nor a win yet) and another round fits in the time left.
        while (
            round_index < plan.rounds
            # The plan fits the rounds in the budget from estimates; a round that would overrun stops them.
            and (rounds_end is None or round_index == 0 or rounds_end - time.monotonic() > round_seconds)
        ) or (
            rounds_end is not None
            and round_index < MAX_ROUNDS
            and rounds_end - time.monotonic() > 1.5 * round_seconds
            and undecided(samples)
        ):
            if round_index == 1 and settings["calibrate"] and plan.rounds > 1:
                plan = _recalibrated(plan, samples, settings, totals, replicas)
            started_round = time.monotonic()
            before, own_before = cpu_times(), _used(everyone)
            for variant_name in turn_order(list(plan.steps), round_index):
                if round_index >= plan.rounds:
                    totals[variant_name] += plan.steps[variant_name]  # an extra round
                times = workers[variant_name][round_index % replicas].batch(plan.steps[variant_name])
                if times:
                    samples[variant_name].append(statistics.median(times))
            after = cpu_times()
            if before is not None and after is not None:
                other = other_busy_cores(before, after, _used(everyone) - own_before)
                if other is not None:
                    busy_during.append(round(other, 2))
            round_index, round_seconds = round_index + 1, time.monotonic() - started_round
        plan = Plan(round_index, plan.steps)
        for worker in everyone:
            worker.end()
        for variant_name, processes in workers.items():
            raw_results[variant_name] = merge_replicas([worker.finish() for worker in processes])
    finally:
        for processes in workers.values():
            for worker in processes:
                worker.close()
    load_average.append(load_average_now())
    for variant_name, raw in raw_results.items():
        raw["notes"] = notes.get(variant_name, []) + list(raw.get("notes") or [])

    ordered = [(variant, raw_results[variant.name]) for variant in variants]
    float32_median = None
    for variant, raw in ordered:
        if variant.name == "float32" and raw.get("status") == "ok" and raw.get("times_ms"):
            float32_median = result_entry(variant, raw, None)["ms_per_step"]["median"]
    label = Path(name).name if is_script else f"the {name} workload"
    # A precision whose numbers did not hold (NaN, overflow, underflow, a loss that strays from
    # float32's) is failed here, before the verdict: it is never the best nor recommended.
    entries, numerics_findings = judged(
        [result_entry(variant, raw, float32_median) for variant, raw in ordered],
        raw_results,
        label,
        framework,
        target,
    )
    results = paired_speedups(entries)
    versions: dict[str, str] = {}
    files: dict[str, str] = {}
    for _variant, raw in ordered:
        versions.update(raw.get("framework_versions") or {})
        files.update(raw.get("framework_files") or {})
    verdict = judge(results, policy, label, target)
    environment = environment_record(placement, busy_during, load_average)
    findings = verdict["findings"] + numerics_findings + load_findings(environment, label)
    compared = sum(1 for result in results if result["status"] == "ok")
    if settings["calibrate"] and compared > 1 and plan.rounds < MIN_ROUNDS:
        findings.append(few_rounds_finding(plan.rounds, label, settings["deadline"] is not None))
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "hwcheck_version": __version__,
        "time": started,
        "framework": framework,
        "framework_versions": versions,
        "framework_files": files,
        "backend": engine_framework(framework),
        "device": {"kind": target, "name": device_name},
        "workload": {
            "name": "script" if is_script else name,
            "script": name if is_script else None,
            "sizes": None if is_script else size_of(name, target),
        },
        "steps": settings["steps"],
        "warmup": settings["warmup"],
        "rounds": plan.rounds,
        "timeout": settings["timeout"],
        "environment": environment,
        "results": results,
        "recommended": verdict["recommended"],
        "best": verdict["best"],
        "verdict": verdict["verdict"],
        "comparisons": verdict["comparisons"],
        "agreement": verdict["agreement"],
        "loss_scaling_cost": loss_scaling_cost(results),
        "findings": findings,
    }


def few_rounds_finding(rounds: int, label: str, budgeted: bool) -> dict[str, Any]:
    """The finding when too few rounds ran to compare the precisions round by round."""
    why = "the --budget allowed" if budgeted else "there was time for"
    return {
        "id": "bench-few-rounds",
        "severity": "info",
        "message": f"On {label}, {why} {rounds} round{'s' if rounds != 1 else ''} of each precision, "
        f"fewer than the {MIN_ROUNDS} a verdict compares round by round: the precisions were compared "
        f"by their medians, and only a difference beyond {ROUNDS_FLOOR:.0%} counts.",
        "remedy": "A longer --budget, fewer --policies or a smaller workload leave room for more rounds.",
    }


def _recalibrated(
    plan: Plan,
    samples: dict[str, list[float]],
    settings: dict[str, Any],
    totals: dict[str, int],
    replicas: int,
) -> Plan:
    """The rounds after the first, planned from its timed steps, which say more than the warm-up did."""
    rounds_end = settings["rounds_deadline"]
    seconds_left = None if rounds_end is None else rounds_end - time.monotonic()
    first = {name: rounds[0] for name, rounds in samples.items() if rounds}
    rest = plan_rounds(
        first, steps=settings["steps"], rounds=plan.rounds - 1, seconds_left=seconds_left, calibrate=True
    )
    for name, count in rest.steps.items():
        totals[name] = replicas * settings["warmup"] + plan.steps[name] + count * rest.rounds
    return Plan(1 + rest.rounds, {**plan.steps, **rest.steps})


def _used(workers: list[Worker]) -> int:
    """CPU time used so far by the measuring children and this process."""
    return process_jiffies([os.getpid(), *(worker.pid for worker in workers)])


def _skip_reason(variant: Variant, settings: dict[str, Any]) -> dict[str, Any] | None:
    """A skipped result when the variant cannot run here, else None."""
    if variant.tf32 and settings["tf32_reason"] is not None:
        return {"status": "skipped", "reason": settings["tf32_reason"], "notes": []}
    if variant.name == "mixed_float16-noscale" and settings["accepts_scaling"] is False:
        reason = "make_step takes no loss_scaling keyword, so float16 cannot run unscaled"
        return {"status": "skipped", "reason": reason, "notes": []}
    return None
