"""Bench statistics and verdicts on recorded numbers: a real CPU run and the H100 anchors table."""

from __future__ import annotations

import json

import pytest

from hwcheck.engine.verdict import judge, loss_scaling_cost, measured_best, recommended_variant
from hwcheck.facts import schema_problem
from hwcheck.facts.stats import NOISE_FLOOR, compare, loss_trend, pair_noise, speedup, summarize


def _load(fixtures, name):
    return json.loads((fixtures / "bench" / name).read_text())


def _result(variant, median, noise=0.0, status="ok"):
    policy = "float32" if variant.startswith("float32") else variant.removesuffix("-noscale")
    return {
        "variant": variant,
        "policy": policy,
        "tf32": variant == "float32+tf32",
        "status": status,
        "reason": None if status == "ok" else "crashed",
        "ms_per_step": {"median": median, "iqr": median * noise, "min": median, "max": median},
        "noise": noise,
        "speedup": None,
    }


def test_summary_of_recorded_step_times():
    # Step times (ms) of a recorded run: quartiles by the inclusive method.
    summary = summarize([4.0, 5.0, 6.0, 7.0, 100.0])
    assert summary == {"median": 6.0, "iqr": 2.0, "min": 4.0, "max": 100.0}
    assert summarize([3.5]) == {"median": 3.5, "iqr": 0.0, "min": 3.5, "max": 3.5}
    with pytest.raises(ValueError):
        summarize([])


def test_differences_within_the_noise_are_a_tie():
    steady, also_steady = _result("float32", 10.0, 0.01), _result("mixed_bfloat16", 10.1, 0.01)
    assert compare(steady, also_steady) == "tie"  # 1 % apart, under the 2 % floor
    assert compare(_result("a", 10.0, 0.01), _result("b", 12.0, 0.01)) == "faster"
    assert compare(_result("a", 12.0, 0.01), _result("b", 10.0, 0.01)) == "slower"
    # The same 20 % gap is a tie when the runs themselves spread by 30 %.
    assert compare(_result("a", 10.0, 0.3), _result("b", 12.0, 0.1)) == "tie"
    assert pair_noise(0.0, 0.0) == NOISE_FLOOR
    assert pair_noise(0.03, 0.04) == pytest.approx(0.05)
    assert speedup(19.8, 2.45) == pytest.approx(8.08, abs=0.01)


def test_loss_trend_compares_first_and_last_quarters():
    assert loss_trend([2.3, 2.1, 1.9, 1.7, 1.5, 1.3, 1.0, 0.7])
    assert not loss_trend([1.0, 1.0, 1.0, 1.0])
    assert not loss_trend([1.0, 1.2, 1.5, 2.0])
    assert not loss_trend([1.0])


@pytest.mark.parametrize(
    ("workload", "agreement", "best"),
    [
        ("mlp", "agrees", "mixed_bfloat16"),  # 2.44 ms unscaled fp16 is not a candidate
        ("transformer", "agrees", "mixed_bfloat16"),
        ("conv", "agrees", "mixed_bfloat16"),  # fp16 without scaling (28.1) is never recommended
        ("lstm", "disagrees", "float32+tf32"),  # TF32 15.3 ms beat bf16 17.0 ms
    ],
)
def test_verdict_on_the_h100_anchors(fixtures, workload, agreement, best):
    document = _load(fixtures, "h100-anchors.json")
    assert schema_problem(document, "bench") is None
    block = next(b for b in document["benches"] if b["workload"]["name"] == workload)
    verdict = judge(block["results"], "mixed_bfloat16", f"the {workload} workload")
    assert verdict["agreement"] == agreement
    assert verdict["best"]["variant"] == best
    ids = [f["id"] for f in verdict["findings"]]
    if agreement == "disagrees":
        assert ids == ["bench-disagrees"]
        message = verdict["findings"][0]["message"]
        assert "15.3 ms/step" in message and "17 ms/step" in message and "1.11x" in message
        assert "float32 with TF32" in verdict["findings"][0]["remedy"]
    else:
        assert ids == []


def test_loss_scaling_cost_on_the_h100_anchors(fixtures):
    blocks = {b["workload"]["name"]: b for b in _load(fixtures, "h100-anchors.json")["benches"]}
    mlp = loss_scaling_cost(blocks["mlp"]["results"])
    assert mlp["cost"] == pytest.approx(3.25 / 2.44 - 1, abs=1e-3)
    assert mlp["comparison"] == "slower"
    assert loss_scaling_cost(blocks["lstm"]["results"][:3]) is None  # no float16 runs


def test_recommended_float32_stands_for_tf32_where_it_was_measured():
    assert recommended_variant("float32", ["float32", "float32+tf32"]) == "float32+tf32"
    assert recommended_variant("float32", ["float32", "mixed_bfloat16"]) == "float32"
    assert recommended_variant("mixed_float16", ["mixed_float16"]) == "mixed_float16"


def test_a_failed_recommendation_is_a_finding_and_never_the_best():
    results = [_result("float32", 50.0), _result("mixed_bfloat16", 20.0, status="failed")]
    assert measured_best(results)["variant"] == "float32"
    verdict = judge(results, "mixed_bfloat16", "the mlp workload")
    assert [f["id"] for f in verdict["findings"]] == ["bench-recommended-failed"]
    assert verdict["agreement"] == "disagrees"


def test_recorded_cpu_run_validates_and_judges_the_same(fixtures):
    block = _load(fixtures, "cpu-torch-mlp.json")
    assert schema_problem(block, "bench") is None
    assert block["device"]["kind"] == "cpu"
    again = judge(block["results"], block["recommended"]["policy"], "the mlp workload")
    assert again["best"] == block["best"]
    assert again["agreement"] == block["agreement"]
    assert again["findings"] == block["findings"]
    # The cost now also carries its interval (low, high); what the recording held is unchanged.
    cost = loss_scaling_cost(block["results"])
    assert {key: cost[key] for key in block["loss_scaling_cost"]} == block["loss_scaling_cost"]
    assert cost["low"] <= cost["cost"] + 1.0 <= cost["high"]


def test_schema_rejects_a_result_without_status(fixtures):
    block = _load(fixtures, "cpu-torch-mlp.json")
    del block["results"][0]["status"]
    assert "status" in schema_problem(block, "bench")


def test_a_run_too_noisy_to_rank_calls_no_winner():
    # Recorded on the 2-core development VM with other jobs running (2026-11-23): float32's
    # steps took 4.7 to 292 ms (IQR 150 ms on a median of 95.7) while bf16 looked 3.9x
    # faster; on the idle machine float32 ran at 4.7-4.9 ms and bf16 at 27-28 ms.
    noisy_float32 = _result("float32", 95.7, noise=150 / 95.7)
    bf16 = _result("mixed_bfloat16", 24.3, noise=1.20 / 24.3)
    assert compare(noisy_float32, bf16) == "unsteady"
    verdict = judge([noisy_float32, bf16], "float32", "mlp")
    assert verdict["agreement"] == "unknown"
    assert [finding["id"] for finding in verdict["findings"]] == ["bench-too-noisy"]
    assert "±157%" in verdict["findings"][0]["message"]
    # The same pair measured steadily does rank.
    steady = judge(
        [_result("float32", 4.88, noise=0.08), _result("mixed_bfloat16", 27.2, noise=0.02)], "float32", "mlp"
    )
    assert steady["agreement"] == "agrees" and steady["findings"] == []


def test_a_noisy_run_that_the_recommendation_leads_names_two_different_precisions():
    # Issue 20: "too unsteady to say whether float32 (43.9 ms/step) or float32 (43.9 ms/step)".
    results = [_result("float32", 43.9, noise=0.7), _result("mixed_bfloat16", 50.0, noise=0.1)]
    verdict = judge(results, "float32", "mlp")
    [finding] = verdict["findings"]
    assert finding["id"] == "bench-too-noisy"
    assert "float32 (43.9 ms/step) or mixed_bfloat16 (50 ms/step)" in finding["message"]
    assert verdict["agreement"] == "unknown"


def test_a_variant_skipped_because_the_device_cannot_run_it_is_never_the_recommendation():
    # bench --policies float32,float32+tf32 on a CPU: TF32 is skipped, float32 stands for the advice.
    skipped = {**_result("float32+tf32", 0.0, status="skipped"), "reason": "a CPU has no TF32"}
    verdict = judge([_result("float32", 4.0), skipped], "float32", "mlp")
    assert verdict["recommended"] == {"policy": "float32", "variant": "float32", "ms_per_step": 4.0}
    assert verdict["agreement"] == "agrees" and verdict["findings"] == []


def test_interleaved_results_with_too_few_rounds_to_pair_tie_within_the_rounds_floor():
    # An H100 transformer bench with a 20 s budget fitted one round per precision
    # (docs/measurements/h100-2026-11-27/verdicts-gpu.txt): bf16 at 1.05x float16 was called a clear
    # win in one run and a tie in the next. One round cannot see the difference between processes.
    from hwcheck.facts.stats import ROUNDS_FLOOR

    fp16 = {"ms_per_step": {"median": 23.1}, "noise": 0.01, "rounds_ms": [23.1]}
    bf16 = {"ms_per_step": {"median": 24.2}, "noise": 0.01, "rounds_ms": [24.2]}
    assert compare(bf16, fp16) == "tie"
    slow = {"ms_per_step": {"median": 23.1 * (1 + ROUNDS_FLOOR) * 1.05}, "noise": 0.01, "rounds_ms": [30.0]}
    assert compare(slow, fp16) == "slower"
    # results measured without rounds keep the spread-based comparison
    assert compare({**bf16, "rounds_ms": None}, {**fp16, "rounds_ms": None}) == "slower"
