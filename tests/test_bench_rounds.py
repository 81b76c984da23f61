"""Verdicts that reproduce: interleaved rounds, their paired comparison, the plan, threads and load."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import time

import pytest

from conftest import run_hwcheck
from hwcheck.engine.verdict import judge, rank, verdict_of
from hwcheck.facts import schema_problem
from hwcheck.facts.stats import ROUNDS_FLOOR, comparison, median_interval
from hwcheck.measure import machine_load
from hwcheck.measure.rounds import MIN_SAMPLE_MS, merge_replicas, plan_rounds, step_estimate, turn_order


def _load(fixtures, name):
    return json.loads((fixtures / "bench" / name).read_text())


def _by_variant(block):
    return {r["variant"]: r for r in block["results"]}


def test_recorded_rounds_validate_and_judge_the_same(fixtures):
    # Nine interleaved rounds of torch 2.13 on the 2-core Xeon (AMX) VM (tests/fixtures/bench/README.md).
    block = _load(fixtures, "cpu-xeon-amx-torch-rounds.json")
    assert schema_problem(block, "bench") is None
    assert block["rounds"] == 9
    assert all(len(r["rounds_ms"]) == 9 for r in block["results"])
    again = judge(block["results"], block["recommended"]["policy"], "the mlp workload")
    for key in ("best", "verdict", "comparisons", "agreement"):
        assert again[key] == block[key], key
    # float32 and bf16 within 15 % of each other: a tie, whichever is ahead; float16 slower beyond it.
    assert block["verdict"] == "tie"
    assert {block["best"]["variant"], *block["best"]["ties"]} == {"float32", "mixed_bfloat16"}
    results = {c["variant"]: c["result"] for c in block["comparisons"]}
    assert results["mixed_float16"] == "slower"


def test_one_disturbed_round_does_not_decide(fixtures):
    block = _load(fixtures, "cpu-xeon-amx-torch-rounds.json")
    results = _by_variant(block)
    baseline = {c["variant"]: c["result"] for c in rank(block["results"])}
    for victim in ("float32", "mixed_bfloat16", "mixed_float16"):
        for round_index in (0, 4, 8):
            disturbed = copy.deepcopy(block["results"])
            result = next(r for r in disturbed if r["variant"] == victim)
            result["rounds_ms"][round_index] *= 4.0  # a neighbour took the core for that batch
            assert {c["variant"]: c["result"] for c in rank(disturbed)} == baseline, (victim, round_index)
    assert results["float32"]["rounds_ms"] != []


def test_paired_rounds_follow_the_ratio_and_repeat():
    base = [2.0, 2.1, 1.9, 2.4, 2.0, 2.2, 1.8, 2.0, 2.1]
    rounds = {"variant": "b", "ms_per_step": {"median": 2.0}, "noise": 0.1, "rounds_ms": base}

    def scaled(factor):
        return {**rounds, "variant": "a", "rounds_ms": [v * factor for v in base]}

    assert comparison(scaled(1.5), rounds)["result"] == "slower"
    assert comparison(scaled(1 / 1.5), rounds)["result"] == "faster"
    assert comparison(scaled(1.0 + ROUNDS_FLOOR / 2), rounds)["result"] == "tie"
    assert comparison(scaled(1.5), rounds)["ratio"] == pytest.approx(1.5)
    # Seeded: the same times give the same interval.
    values = [1.1, 0.9, 1.3, 1.0, 1.05, 0.95, 1.2]
    assert median_interval(values) == median_interval(list(values))
    low, high = median_interval(values)
    assert min(values) <= low <= 1.05 <= high <= max(values)


def test_rounds_that_disagree_too_much_are_too_noisy_and_name_no_winner(fixtures):
    # Recorded while another job took a core for two of the nine rounds.
    block = _load(fixtures, "cpu-xeon-amx-torch-load-changed.json")
    assert schema_problem(block, "bench") is None
    assert verdict_of(_by_variant(block)["mixed_float16"], rank(block["results"])) == "too noisy"
    assert block["environment"]["load_changed"] is True
    assert "bench-load-changed" in [f["id"] for f in block["findings"]]
    from rich.console import Console

    from hwcheck.measure.render import render_bench

    console = Console(record=True, width=200)
    render_bench(block, console)
    text = console.export_text()
    assert "measured best: none, too noisy to rank" in text
    assert "too unsteady to rank" in text


def test_without_rounds_precisions_are_compared_by_their_medians(fixtures):
    # A block from before rounds (no rounds_ms) keeps its old comparison.
    block = _load(fixtures, "cpu-torch-mlp.json")
    assert all(c["rounds"] is None for c in rank(block["results"]))


def test_the_plan_calibrates_each_sample_and_fits_the_budget():
    estimates = {"float32": 2.0, "mixed_bfloat16": 50.0}
    plan = plan_rounds(estimates, steps=20, rounds=9)
    assert plan.rounds == 9
    assert plan.steps == {"float32": MIN_SAMPLE_MS / 2.0, "mixed_bfloat16": 4}
    # Fewer steps per sample first, then fewer rounds, never below one step.
    tight = plan_rounds(estimates, steps=20, rounds=9, seconds_left=2.0)
    work = tight.rounds * sum(tight.steps[name] * estimates[name] for name in estimates)
    assert work <= 2000.0 and tight.rounds >= 1 and min(tight.steps.values()) >= 1
    none_left = plan_rounds(estimates, steps=20, rounds=9, seconds_left=0.0)
    assert none_left.rounds == 1 and set(none_left.steps.values()) == {1}
    # Steps the user counted are kept, spread over the rounds; a variant alone runs once.
    assert plan_rounds(estimates, steps=3, rounds=9, calibrate=False).steps == {
        "float32": 1,
        "mixed_bfloat16": 1,
    }
    assert plan_rounds(estimates, steps=3, rounds=9, calibrate=False).rounds == 3
    assert plan_rounds({"float32": 2.0}, steps=20, rounds=9).rounds == 1
    assert step_estimate([900.0, 2.0, 4.0]) == 3.0  # the first step compiled
    assert [turn_order(["a", "b", "c"], r)[0] for r in range(3)] == ["a", "b", "c"]


def test_cpu_times_and_quota_read_the_kernel_files(tmp_path):
    stat = tmp_path / "stat"
    # The head of a real /proc/stat (2-core VM, 2026-11-26).
    stat.write_text(
        "cpu  71345 12 6001 180214 301 0 96 0 0 0\n"
        "cpu0 35511 7 3005 90015 150 0 60 0 0 0\n"
        "cpu1 35834 5 2996 90199 151 0 36 0 0 0\n"
        "intr 123 0\n"
    )
    times = machine_load.cpu_times(str(stat))
    assert times is not None
    assert times.total == 71345 + 12 + 6001 + 180214 + 301 + 96
    assert times.busy == times.total - 180214 - 301
    assert set(times.cores) == {0, 1}
    later = machine_load.CpuTimes(times.busy + 150, times.total + 200, times.cores)
    # 200 jiffies over 2 cores is 100 per core: 150 busy, 50 of them ours, is one other core.
    assert machine_load.other_busy_cores(times, later, 50) == pytest.approx(1.0)
    cpu_max = tmp_path / "cpu.max"
    for text, cores in (("max 100000\n", None), ("150000 100000\n", 1.5), ("１ 100000", None), ("", None)):
        cpu_max.write_text(text)
        assert machine_load.cgroup_quota(str(cpu_max)) == cores
    assert machine_load.cgroup_quota(str(tmp_path / "absent")) is None
    stat.write_text("cpu  1 2 three\n")
    assert machine_load.cpu_times(str(stat)) is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc/stat on this system")
def test_this_machine_is_read_as_the_kernel_shows_it():
    times = machine_load.cpu_times()
    assert times is not None
    online = sum(1 for line in open("/proc/stat") if line.startswith("cpu") and line[3:4].isdigit())
    assert len(times.cores) == online
    cores, _quota = machine_load.usable_cores()
    assert cores == sorted(os.sched_getaffinity(0))
    assert machine_load.process_jiffies([os.getpid()]) > 0


PROBE_SCRIPT = """
import json
import os


def make_step(policy, loss_scaling=True):
    with open(os.environ["PLACEMENT_FILE"] + "." + policy, "w") as handle:
        seen = {"cores": sorted(os.sched_getaffinity(0)), "omp": os.environ.get("OMP_NUM_THREADS")}
        json.dump(seen, handle)
    with open(os.environ["PLACEMENT_FILE"] + ".pids." + policy, "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    state = {"w": 3.0}

    def step():
        total = 0
        for number in range(20000):
            total += number
        state["w"] -= 0.1 * 2 * state["w"]
        return state["w"] ** 2

    return step
"""


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity")
    or len(os.sched_getaffinity(0)) < 2
    or not os.path.exists("/proc/stat"),
    reason="needs two cores this process may use and /proc/stat",
)
def test_a_busy_core_is_left_to_its_owner_and_every_precision_gets_the_same_threads(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(PROBE_SCRIPT)
    allowed = sorted(os.sched_getaffinity(0))
    busy_core = allowed[0]
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{busy_core}}})\nwhile True: pass"]
    )
    try:
        time.sleep(0.5)
        result = run_hwcheck(
            "bench",
            "--json",
            "--script",
            str(script),
            "--policies",
            "float32,bf16",
            "--rounds",
            "3",
            "--device",
            "cpu",
            env={"PLACEMENT_FILE": str(tmp_path / "placement")},
            timeout=240,
        )
    finally:
        spinner.kill()
        spinner.wait()
    assert result.returncode == 0, result.stderr
    block = json.loads(result.stdout)
    assert schema_problem(block, "bench") is None
    environment = block["environment"]
    # The spinner is one busy core; other work on the machine (a loaded CI runner) adds to it, so
    # the threads are checked against the bench's own reading of the machine, not an idle one.
    busy, quota = environment["busy_before"], environment["cpu_quota"]
    usable = len(allowed) if quota is None else max(1, min(len(allowed), math.ceil(quota - 1e-9)))
    assert busy > 0.5
    assert environment["threads"] == max(1, usable - round(busy))
    assert len(environment["pinned"]) == environment["threads"] < len(allowed)
    if busy < 1.5:
        # Only the spinner was busy: its core is the busiest, and is left to it.
        assert busy_core not in environment["pinned"]
    for policy in ("float32", "mixed_bfloat16"):
        seen = json.loads((tmp_path / f"placement.{policy}").read_text())
        assert seen == {"cores": environment["pinned"], "omp": str(environment["threads"])}
        # Calibrated rounds: each precision ran in two processes, which took the rounds in turn.
        assert len(set((tmp_path / f"placement.pids.{policy}").read_text().split())) == 2
    assert all(len(result["rounds_ms"]) == block["rounds"] for result in block["results"])


def test_replicas_merge_round_by_round():
    first = {
        "status": "ok",
        "rounds_ms": [1.0, 3.0, 5.0],
        "times_ms": [1.0, 3.0, 5.0],
        "losses": [2.0, 1.0],
        "finite": True,
        "decreased": True,
        "peak_memory_mib": 300.0,
        "notes": ["a"],
    }
    second = {
        "status": "ok",
        "rounds_ms": [2.0, 4.0],
        "times_ms": [2.0, 4.0],
        "losses": [2.0, 1.5],
        "finite": True,
        "decreased": False,
        "peak_memory_mib": 310.0,
        "notes": ["a"],
    }
    merged = merge_replicas([first, second])
    assert merged["rounds_ms"] == [1.0, 2.0, 3.0, 4.0, 5.0]  # round r ran in process r mod 2
    assert sorted(merged["times_ms"]) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert merged["decreased"] is False and merged["peak_memory_mib"] == 310.0 and merged["notes"] == ["a"]
    failed = {"status": "failed", "reason": "killed by SIGKILL"}
    assert merge_replicas([first, failed]) == failed


def test_more_rounds_only_while_a_comparison_straddles_the_floor():
    from hwcheck.engine.verdict import undecided

    base = [2.0, 2.1, 1.9, 2.4, 2.0, 2.2, 1.8, 2.0, 2.1]
    across = [1.02, 1.30, 1.05, 1.28, 1.04, 1.26, 1.06, 1.3, 1.03]  # ratios either side of 1 + floor
    assert undecided({"float32": base, "mixed_bfloat16": [b * r for b, r in zip(base, across, strict=True)]})
    assert not undecided({"float32": base, "mixed_bfloat16": [b * 1.05 for b in base]})  # a settled tie
    assert not undecided({"float32": base, "mixed_bfloat16": [b * 1.5 for b in base]})  # a settled win
    assert not undecided({"float32": base})
    assert not undecided({"float32": base[:2], "mixed_bfloat16": base[:2]})  # too few rounds to compare
    # Unscaled float16 is never advice: its comparison keeps no round going.
    straddling = [b * r for b, r in zip(base, across, strict=True)]
    assert not undecided({"float32": base, "mixed_float16-noscale": straddling})
