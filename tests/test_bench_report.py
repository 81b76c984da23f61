"""Bench results as facts: report --bench carries them, doctor --facts replays them into the rules."""

from __future__ import annotations

import copy
import json

import pytest
from profiles import BY_NAME

from conftest import FIXTURES, run_hwcheck
from hwcheck.facts import schema_problem

ANCHORS = FIXTURES / "bench" / "h100-anchors.json"


@pytest.fixture
def h100_facts(tmp_path):
    """The measured H100's facts (tests/profiles.py, anchors/h100.md) as a facts file."""
    path = tmp_path / "h100-facts.json"
    path.write_text(json.dumps(BY_NAME["h100-anchor-torch"].facts))
    return path


def report_with_bench(tmp_path, facts, *bench_files, framework="torch"):
    output = tmp_path / "report.json"
    arguments = ["report", "--facts", str(facts), "--framework", framework, "-o", str(output)]
    for path in bench_files:
        arguments += ["--bench", str(path)]
    result = run_hwcheck(*arguments)
    assert result.returncode == 0, result.stderr
    return output, json.loads(output.read_text())


def doctor_findings(path, framework="torch"):
    result = run_hwcheck("doctor", "--json", "--facts", str(path), "--framework", framework)
    assert result.returncode == 0, result.stderr
    return {f["id"]: f for f in json.loads(result.stdout)["recommendation"]["findings"]}


def test_report_carries_the_bench_blocks_and_validates(tmp_path, h100_facts):
    _, report = report_with_bench(tmp_path, h100_facts, ANCHORS)
    assert schema_problem(report, "report") is None
    workloads = [block["workload"]["name"] for block in report["bench"]]
    assert workloads == ["mlp", "transformer", "lstm", "conv"]
    assert "measurements" not in report["facts"]  # one place in a report: its bench key
    # The report's own findings already weigh the measurement.
    ids = {f["id"] for f in report["recommendation"]["findings"]}
    assert {"bench-disagrees", "bench-agrees"} <= ids


def test_a_contradicting_measurement_changes_what_doctor_says(tmp_path, h100_facts):
    without = doctor_findings(h100_facts)
    assert not [name for name in without if name.startswith("bench-")]
    report, _ = report_with_bench(tmp_path, h100_facts, ANCHORS)
    found = doctor_findings(report)
    disagrees = found["bench-disagrees"]
    assert disagrees["severity"] == "warning"
    # It cites the figures of the one workload where bf16 lost: the LSTM, TF32 15.3 against 17.0.
    assert "lstm" in disagrees["message"] and "15.3" in disagrees["message"]
    assert "17 ms/step" in disagrees["message"] and "1.11x" in disagrees["message"]
    assert "mlp" not in disagrees["message"]
    assert "mlp" in found["bench-agrees"]["message"]

    terminal = run_hwcheck("doctor", "--facts", str(report), "--framework", "torch")
    assert terminal.returncode == 0, terminal.stderr
    shown = " ".join(terminal.stdout.split())
    assert "[bench-disagrees]" in shown and "15.3 ms/step" in shown


def test_a_measurement_that_agrees_is_said_without_a_warning(tmp_path, h100_facts):
    anchors = json.loads(ANCHORS.read_text())
    anchors["benches"] = [b for b in anchors["benches"] if b["workload"]["name"] != "lstm"]
    path = tmp_path / "no-lstm.json"
    path.write_text(json.dumps(anchors))
    report, _ = report_with_bench(tmp_path, h100_facts, path)
    found = doctor_findings(report)
    assert "bench-disagrees" not in found and "bench-agrees" in found


def test_a_tie_within_the_noise_is_no_contradiction(tmp_path, h100_facts):
    anchors = json.loads(ANCHORS.read_text())
    lstm = next(b for b in anchors["benches"] if b["workload"]["name"] == "lstm")
    for result in lstm["results"]:
        result["noise"] = 0.2  # 15.3 against 17.0 is 11 %, inside ±28 % combined
    path = tmp_path / "noisy.json"
    path.write_text(json.dumps(lstm))
    report, _ = report_with_bench(tmp_path, h100_facts, path)
    found = doctor_findings(report)
    assert "bench-disagrees" not in found
    assert "within the noise" in found["bench-agrees"]["message"]


@pytest.mark.parametrize(
    ("change", "framework", "said"),
    [
        ({}, "jax", "bench-not-applicable"),  # torch measured, JAX advised
        ({"framework": "keras", "backend": "torch"}, "torch", "bench-not-applicable"),  # not raw torch
        ({"device": {"kind": "cpu", "name": None}}, "torch", "bench-not-applicable"),  # CPU, advised on GPU
        # Another GPU than this machine has: the result is stale, listed with why.
        ({"device": {"kind": "gpu", "name": "NVIDIA A100-SXM4-80GB"}}, "torch", "bench-stale"),
    ],
)
def test_a_measurement_of_another_framework_or_device_says_nothing(
    tmp_path, h100_facts, change, framework, said
):
    anchors = json.loads(ANCHORS.read_text())
    lstm = copy.deepcopy(next(b for b in anchors["benches"] if b["workload"]["name"] == "lstm"))
    lstm.update(change)
    path = tmp_path / "other.json"
    path.write_text(json.dumps(lstm))
    report, _ = report_with_bench(tmp_path, h100_facts, path, framework=framework)
    found = doctor_findings(report, framework)
    assert "bench-disagrees" not in found and "bench-agrees" not in found
    assert "lstm" in found[said]["message"]


def test_replaying_a_report_keeps_its_bench(tmp_path, h100_facts):
    first, report = report_with_bench(tmp_path, h100_facts, ANCHORS)
    again = tmp_path / "again.json"
    result = run_hwcheck("report", "--facts", str(first), "--framework", "torch", "-o", str(again))
    assert result.returncode == 0, result.stderr
    replayed = json.loads(again.read_text())
    assert replayed["bench"] == report["bench"]
    # A second --bench with the same results adds nothing twice.
    third = tmp_path / "third.json"
    result = run_hwcheck(
        "report", "--facts", str(again), "--bench", str(ANCHORS), "--framework", "torch", "-o", str(third)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(third.read_text())["bench"] == report["bench"]


def test_a_bad_bench_file_is_one_line_naming_it(tmp_path, h100_facts):
    broken = json.loads(ANCHORS.read_text())
    broken["benches"][0]["results"][0]["status"] = "fast"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = run_hwcheck("report", "--facts", str(h100_facts), "--bench", str(path), "-o", "-")
    assert result.returncode == 2
    assert str(path) in result.stderr and "status" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr

    facts = tmp_path / "not-bench.json"
    facts.write_text(h100_facts.read_text())
    result = run_hwcheck("report", "--facts", str(h100_facts), "--bench", str(facts), "-o", "-")
    assert result.returncode == 2 and str(facts) in result.stderr


def test_a_report_with_a_broken_bench_is_refused_by_doctor(tmp_path, h100_facts):
    path, report = report_with_bench(tmp_path, h100_facts, ANCHORS)
    report["bench"][0]["results"][0]["ms_per_step"] = "fast"
    path.write_text(json.dumps(report))
    result = run_hwcheck("doctor", "--facts", str(path))
    assert result.returncode == 2
    assert str(path) in result.stderr and "bench" in result.stderr and "Traceback" not in result.stderr
