"""hwcheck doctor --measure: a bench decides what the tables cannot, is recorded, and is reused.

The blocks are real recordings (tests/fixtures/bench/README.md): this project's 2-core
Sapphire-Rapids-class VM, 2026-11-26, whose facts are tests/fixtures/facts/cpu-amx-torch213-jax0102.json.
"""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.cli import main
from hwcheck.commands import Machine
from hwcheck.engine.measured import MEASURED_FOR, block_verdict

FACTS = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())
TORCH_BLOCK = json.loads((FIXTURES / "bench" / "cpu-amx-torch-float32-bf16.json").read_text())
JAX_BLOCK = json.loads((FIXTURES / "bench" / "cpu-amx-jax-float32-bf16.json").read_text())


def with_measurement(facts: dict, block: dict) -> dict:
    return {**facts, "measurements": {"bench": [{**block, "measured_for": MEASURED_FOR}]}}


def doctor_json(tmp_path, capsys, facts: dict, *options: str) -> dict:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    assert main(["doctor", "--json", "--facts", str(path), *options]) == 0
    return json.loads(capsys.readouterr().out)["recommendation"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(tmp_path / "cache"))


def test_the_tables_name_what_to_measure_on_a_cpu_with_bfloat16(tmp_path, capsys):
    measure = doctor_json(tmp_path, capsys, FACTS, "--framework", "torch")["measure"]
    assert measure["candidates"] == ["float32", "mixed_bfloat16"]
    assert "AMX-BF16" in measure["why"]


def test_a_clear_measurement_decides_and_cites_its_ratio(tmp_path, capsys):
    # float32 3.16 ms/step, bf16 2.29 (1.38x, noise ±10%): a clear verdict.
    assert block_verdict(TORCH_BLOCK)[0] == "clear"
    recommendation = doctor_json(
        tmp_path, capsys, with_measurement(FACTS, TORCH_BLOCK), "--framework", "torch"
    )
    assert recommendation["policy"] == "mixed_bfloat16"
    reason = recommendation["reasons"][0]
    assert reason["id"] == "measured-cpu-bf16"
    assert "1.38x as fast as float32" in reason["message"] and "noise ±10%" in reason["message"]


def test_a_tie_keeps_the_tables_answer_and_says_why(tmp_path, capsys):
    # JAX: float32 2.89 ms/step (±33%), bf16 2.31: within the noise. The tables say float32 for JAX.
    assert block_verdict(JAX_BLOCK)[0] == "tie"
    recommendation = doctor_json(tmp_path, capsys, with_measurement(FACTS, JAX_BLOCK), "--framework", "jax")
    assert recommendation["policy"] == "float32"
    assert recommendation["reasons"][0]["id"] == "cpu-float32"
    tie = next(f for f in recommendation["findings"] if f["id"] == "measured-tie")
    assert "within the noise" in tie["message"] and "their answer stands" in tie["message"]


def test_another_frameworks_measurement_does_not_decide(tmp_path, capsys):
    recommendation = doctor_json(tmp_path, capsys, with_measurement(FACTS, TORCH_BLOCK), "--framework", "jax")
    assert (recommendation["policy"], recommendation["reasons"][0]["id"]) == ("float32", "cpu-float32")
    assert "bench-not-applicable" in {f["id"] for f in recommendation["findings"]}


def test_another_devices_measurement_does_not_decide(tmp_path, capsys):
    # The same block on another machine's CPU is stale; the tables decide (bf16 on AMX for torch).
    other_cpu = copy.deepcopy(FACTS)
    other_cpu["cpu"]["model"] = "Intel(R) Xeon(R) Platinum 8480+"
    recommendation = doctor_json(
        tmp_path, capsys, with_measurement(other_cpu, TORCH_BLOCK), "--framework", "torch"
    )
    assert (recommendation["policy"], recommendation["reasons"][0]["id"]) == ("mixed_bfloat16", "cpu-bf16")
    assert "bench-stale" in {f["id"] for f in recommendation["findings"]}
    # A CPU measurement never decides a GPU's advice: the EPYC block's clear float32 (3.78 against
    # 25.7 ms/step), carried by the H100 (which records no CPU, so the block is not stale there).
    h100 = json.loads((FIXTURES / "facts" / "h100-anchor-torch211.json").read_text())
    float32_wins = json.loads((FIXTURES / "bench" / "cpu-torch-mlp.json").read_text())
    float32_wins["framework_versions"] = {"torch": h100["frameworks"]["torch"]["version"]}
    assert block_verdict(float32_wins)[0] == "clear"
    recommendation = doctor_json(
        tmp_path, capsys, with_measurement(h100, float32_wins), "--framework", "torch"
    )
    assert (recommendation["policy"], recommendation["reasons"][0]["id"]) == ("mixed_bfloat16", "gpu-bf16")


class FakeBench:
    """hwcheck.measure.session.bench counted: returns the recorded torch block."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, **options):
        self.calls.append(options)
        return copy.deepcopy(TORCH_BLOCK)


@pytest.fixture
def fake_bench(monkeypatch):
    import hwcheck.commands.doctor
    import hwcheck.measure.session

    bench = FakeBench()
    monkeypatch.setattr(hwcheck.measure.session, "bench", bench)
    machine = Machine(copy.deepcopy(FACTS), {}, None)
    monkeypatch.setattr(hwcheck.commands.doctor, "read_machine", lambda args: machine)
    return bench


def measure(capsys, *options: str) -> dict:
    assert main(["doctor", "--measure", "--json", "--framework", "torch", *options]) == 0
    return json.loads(capsys.readouterr().out)


def test_measure_benches_the_candidates_and_the_advice_follows(fake_bench, capsys):
    report = measure(capsys, "--budget", "10")
    (options,) = fake_bench.calls
    assert options["policies"] == "float32,mixed_bfloat16" and options["device"] == "cpu"
    assert options["framework"] == "torch" and options["workload"] == "mlp" and options["quick"]
    assert options["timeout"] <= 30
    (block,) = report["bench"]
    assert block["measured_for"] == MEASURED_FOR
    assert report["recommendation"]["measure"]["status"] == "measured"
    assert report["recommendation"]["policy"] == block["best"]["policy"]
    assert report["recommendation"]["reasons"][0]["id"] == "measured-cpu-bf16"


def test_a_second_measure_reuses_the_recorded_bench(fake_bench, capsys):
    first = measure(capsys)
    second = measure(capsys)
    assert len(fake_bench.calls) == 1
    assert second["recommendation"]["measure"]["status"] == "reused"
    assert "2026-11-26 12:32 UTC" in second["recommendation"]["measure"]["reason"]
    assert second["bench"] == first["bench"]
    assert second["recommendation"]["policy"] == first["recommendation"]["policy"]
    measure(capsys, "--no-cache")
    assert len(fake_bench.calls) == 2


def test_an_unwritable_cache_only_costs_the_reuse(fake_bench, capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(blocker / "cache"))
    for _ in range(2):
        report = measure(capsys)
        assert report["recommendation"]["measure"]["status"] == "measured"
        assert report["recommendation"]["reasons"][0]["id"] == "measured-cpu-bf16"
    assert len(fake_bench.calls) == 2


def test_the_terminal_report_says_what_was_measured_and_where_it_came_from(fake_bench, capsys):
    assert main(["doctor", "--measure", "--framework", "torch"]) == 0
    assert "Measured now: float32, bfloat16 autocast on the CPU" in capsys.readouterr().out
    assert main(["doctor", "--measure", "--framework", "torch"]) == 0
    assert "Reused from the cache: float32, bfloat16 autocast" in capsys.readouterr().out


@pytest.mark.parametrize("budget", ["0", "-5", "nan", "3601", "a minute"])
def test_a_bad_budget_is_a_one_line_error(budget, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "--measure", "--budget", budget])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("hwcheck doctor: error: argument --budget: ")


def test_measure_refuses_replayed_facts(tmp_path, capsys):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(FACTS))
    assert main(["doctor", "--measure", "--facts", str(path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--measure" in error and "--facts" in error


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_doctor_measure_end_to_end_on_this_cpu(tmp_path):
    """One real --measure (about 10 s here): the report records the block, the advice follows it.

    The budget is ten times that, so that a loaded machine still loads torch within it."""
    result = run_hwcheck(
        "doctor", "--measure", "--framework", "torch", "--budget", "100", "--json",
        env={"HWCHECK_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    measure = report["recommendation"]["measure"]
    if not measure["candidates"]:
        pytest.skip("this CPU has no bfloat16 instructions: the tables decide, nothing is measured")
    assert measure["status"] == "measured", measure
    (block,) = [b for b in report["bench"] if b.get("measured_for") == MEASURED_FOR]
    assert [r["variant"] for r in block["results"]] == measure["candidates"]
    verdict, best, _ties = block_verdict(block)
    reason = report["recommendation"]["reasons"][0]
    if verdict == "clear":
        assert report["recommendation"]["policy"] == best["policy"]
        assert reason["id"].startswith("measured-cpu-")
    else:
        assert not reason["id"].startswith("measured-")
        assert "measured-tie" in {f["id"] for f in report["recommendation"]["findings"]}
