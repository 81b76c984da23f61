"""One comparison, one number: bench's table and lines, doctor's reasons and findings, the JSON.

Replays of real recordings (tests/fixtures/bench/README.md): nine interleaved rounds of torch
2.13 on the 2-core Xeon (AMX) VM, where the ratio of the medians (bf16 1.08x float32's step
time) lies outside the paired interval (1.08-1.11x, ratio 1.10x); the same machine while another
job took a core (medians 1.10x, paired 1.02x); and doctor --measure on an H100
(docs/measurements/h100-2026-11-27/measure-torch.json).
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from conftest import FIXTURES
from hwcheck.cli import main
from hwcheck.engine.measured import MEASURED_FOR
from hwcheck.engine.verdict import judge, rank
from hwcheck.facts.stats import comparison

AMX_FACTS = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())
ROUNDS = json.loads((FIXTURES / "bench" / "cpu-xeon-amx-torch-rounds.json").read_text())
LOAD_CHANGED = json.loads((FIXTURES / "bench" / "cpu-xeon-amx-torch-load-changed.json").read_text())
CLEAR = json.loads((FIXTURES / "bench" / "cpu-amx-torch-float32-bf16.json").read_text())
JAX_TIE = json.loads((FIXTURES / "bench" / "cpu-amx-jax-float32-bf16.json").read_text())
H100_REPORT = FIXTURES.parent.parent / "docs" / "measurements" / "h100-2026-11-27" / "measure-torch.json"
# A ratio as printed ("1.10x"), not an interval's ends ("1.08-1.11x" gives neither 1.08 nor 1.11).
RATIO = re.compile(r"(?<![-\d.])(\d+\.\d\d)x")
INVITES = re.compile(
    r"hwcheck bench|doctor --measure benches|--no-cache|until (a|this) (measurement|machine measures)"
    r"|measure it here"
)


def _ratios(text: str) -> set[str]:
    return set(RATIO.findall(text))


def _doctor(tmp_path, capsys, facts: dict, framework: str) -> tuple[dict, str]:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    assert main(["doctor", "--json", "--facts", str(path), "--framework", framework]) in (0, 1)
    report = json.loads(capsys.readouterr().out)["recommendation"]
    assert main(["doctor", "--facts", str(path), "--framework", framework]) in (0, 1)
    return report, capsys.readouterr().out


def _measured(facts: dict, block: dict) -> dict:
    return {**copy.deepcopy(facts), "measurements": {"bench": [{**block, "measured_for": MEASURED_FOR}]}}


def _no_amx(facts: dict) -> dict:
    """The Xeon's facts without AMX: AVX-512 BF16 alone, where the tables' evidence for torch is split."""
    changed = copy.deepcopy(facts)
    changed["cpu"]["flags"] = [flag for flag in changed["cpu"]["flags"] if not flag.startswith("amx")]
    return changed


def test_the_recording_that_shows_the_difference_is_still_one():
    # If the medians' ratio were the paired one, the tests below could not tell them apart.
    results = {r["variant"]: r for r in ROUNDS["results"]}
    bf16, float32 = results["mixed_bfloat16"], results["float32"]
    medians = bf16["ms_per_step"]["median"] / float32["ms_per_step"]["median"]
    paired = comparison(bf16, float32)
    assert f"{medians:.2f}" != f"{paired['ratio']:.2f}"
    assert not paired["low"] <= medians <= paired["high"]


@pytest.mark.parametrize("block", [ROUNDS, LOAD_CHANGED], ids=["rounds", "load-changed"])
def test_bench_prints_the_paired_ratio_in_its_table_and_its_lines(block):
    from rich.console import Console

    from hwcheck.measure.render import render_bench

    console = Console(record=True, width=200)
    render_bench(block, console)
    text = console.export_text()
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.rstrip().endswith(" ok")}
    baseline = next(r for r in block["results"] if r["variant"] == "float32")
    for result in block["results"]:
        if result["status"] == "ok":
            speedup = round(comparison(baseline, result)["ratio"], 4)
            assert f"{speedup:.2f}x" in rows[result["variant"]], result["variant"]
    for compared in rank(block["results"]):
        assert f"{compared['variant']} against {compared['against']}: {compared['ratio']:.2f}x" in text
    # The loss-scaling line gives its cost and interval from the same paired comparison.
    cost = judge(block["results"], "mixed_bfloat16", "the mlp workload")
    scaled = next(r for r in block["results"] if r["variant"] == "mixed_float16")
    unscaled = next(r for r in block["results"] if r["variant"] == "mixed_float16-noscale")
    found = comparison(scaled, unscaled)
    assert f"({found['ratio'] - 1:+.0%}, interval {found['low'] - 1:+.0%} to {found['high'] - 1:+.0%}" in text
    assert cost["verdict"] == block["verdict"]


def test_the_json_speedups_are_the_comparisons_figures():
    from hwcheck.engine.verdict import paired_speedups

    results = {r["variant"]: r for r in paired_speedups(ROUNDS["results"])}
    against_float32 = {c["variant"]: c["ratio"] for c in rank(ROUNDS["results"]) if c["against"] == "float32"}
    for variant, ratio in against_float32.items():
        assert results[variant]["speedup"] == pytest.approx(1.0 / ratio, rel=1e-3)


def test_a_tie_states_the_paired_ratio_in_every_finding_and_invites_no_measurement(tmp_path, capsys):
    # bf16 against float32: paired 1.10x (interval 1.08-1.11x); the medians' 1.08x appears nowhere.
    results = {r["variant"]: r for r in ROUNDS["results"]}
    paired = f"{comparison(results['mixed_bfloat16'], results['float32'])['ratio']:.2f}"
    for facts in (AMX_FACTS, _no_amx(AMX_FACTS)):
        report, terminal = _doctor(tmp_path, capsys, _measured(facts, ROUNDS), "torch")
        findings = {f["id"]: f for f in report["findings"]}
        assert "cpu-bf16-measure" not in findings
        tie = findings["measured-tie"]["message"]
        assert _ratios(tie) == {paired} and "interval 1.08-1.11x" in tie, tie
        # bench-agrees: the recommended bf16 within the noise of float32 (AMX), or the fastest.
        assert _ratios(findings["bench-agrees"]["message"]) <= {paired}
        assert all(
            _ratios(f["message"]) <= {paired} for f in report["findings"] if "Measured" in f["message"]
        )
        assert not INVITES.search(terminal), INVITES.search(terminal)
        assert "tables' answer stands" in terminal.split("measure ", 1)[1].splitlines()[0]


def test_a_clear_measurement_in_rounds_states_the_paired_ratio_in_the_reason(tmp_path, capsys):
    # The recorded rounds of float32 and float16 alone: float32 clearly faster (paired 1.30x,
    # medians 1.32x); the block is judged again as doctor would judge a block without a verdict.
    block = copy.deepcopy(ROUNDS)
    block["results"] = [r for r in block["results"] if r["variant"] in ("float32", "mixed_float16")]
    for key in ("verdict", "comparisons"):
        block.pop(key)
    block["best"].pop("ties")
    (compared,) = rank(block["results"])
    assert compared["result"] == "slower"
    report, terminal = _doctor(tmp_path, capsys, _measured(_no_amx(AMX_FACTS), block), "torch")
    reason = report["reasons"][0]
    assert reason["id"] == "measured-cpu-float32"
    assert _ratios(reason["message"]) == {f"{compared['ratio']:.2f}"}, reason["message"]
    assert f"interval {compared['low']:.2f}-{compared['high']:.2f}x" in reason["message"]
    assert "cpu-bf16-measure" not in {f["id"] for f in report["findings"]}
    assert not INVITES.search(terminal), INVITES.search(terminal)
    assert "it decides the advice" in terminal


@pytest.mark.parametrize(
    ("block", "framework"), [(CLEAR, "torch"), (JAX_TIE, "jax")], ids=["clear-torch", "tie-jax"]
)
def test_after_a_decided_measurement_no_line_suggests_measuring(tmp_path, capsys, block, framework):
    for facts in (AMX_FACTS, _no_amx(AMX_FACTS)):
        _report, terminal = _doctor(tmp_path, capsys, _measured(facts, block), framework)
        assert "Measured on this machine" in terminal
        assert not INVITES.search(terminal), (framework, INVITES.search(terminal))


def test_without_a_measurement_the_same_machine_still_names_what_would_settle_it(tmp_path, capsys):
    report, terminal = _doctor(tmp_path, capsys, _no_amx(AMX_FACTS), "torch")
    assert "cpu-bf16-measure" in {f["id"] for f in report["findings"]}
    assert "doctor --measure benches" in terminal and "until a measurement" in report["reasons"][0]["message"]


def test_the_h100_measurement_states_one_ratio(tmp_path, capsys):
    report = json.loads(H100_REPORT.read_text())
    (block,) = report["bench"]
    tied = next(c for c in block["comparisons"] if c["result"] == "tie")
    recommendation, terminal = _doctor(tmp_path, capsys, report, "torch")
    tie = next(f for f in recommendation["findings"] if f["id"] == "measured-tie")
    assert _ratios(tie["message"]) == {f"{tied['ratio']:.2f}"}
    assert f"interval {tied['low']:.2f}-{tied['high']:.2f}x" in tie["message"]
    assert not INVITES.search(terminal), INVITES.search(terminal)


def test_a_measurement_of_too_few_rounds_says_so_where_it_is_cited(tmp_path, capsys):
    # The recorded rounds cut to the first two, as a tight --budget leaves them.
    block = copy.deepcopy(ROUNDS)
    block["rounds"] = 2
    for result in block["results"]:
        result["rounds_ms"] = result["rounds_ms"][:2]
    for key in ("verdict", "comparisons"):
        block.pop(key)
    block["best"].pop("ties")
    report, terminal = _doctor(tmp_path, capsys, _measured(AMX_FACTS, block), "torch")
    cited = [f["message"] for f in report["findings"] if f["id"].startswith(("measured-", "bench-"))]
    cited += [r["message"] for r in report["reasons"] if r["id"].startswith("measured-")]
    assert cited and all("2 interleaved rounds, fewer than the 3 a paired verdict needs" in m for m in cited)
