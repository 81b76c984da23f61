"""Results belong to their versions: a bench result of another framework version or device is stale."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.engine import measured
from hwcheck.facts.bench import Freshness, same_release

# Measured with PyTorch 2.13 on a Zen 4 EPYC (tests/fixtures/bench/README.md).
CPU_TORCH = json.loads((FIXTURES / "bench" / "cpu-torch-mlp.json").read_text())


def machine(torch: str) -> dict:
    """A CPU-only machine with `torch` installed, the CPU the fixture was measured on."""
    return {
        "schema_version": 1,
        "cpu": {"arch": "x86_64", "vendor": "AuthenticAMD", "model": CPU_TORCH["device"]["name"]},
        "gpus": [],
        "tpu": {"present": False},
        "frameworks": {"torch": {"version": torch}},
    }


def bench_file(tmp_path, **change) -> str:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({**CPU_TORCH, **change}))
    return str(path)


def report_findings(tmp_path, facts: dict, bench: str) -> dict:
    """`hwcheck report --facts ... --bench ...` and the findings of the report it writes."""
    (tmp_path / "facts.json").write_text(json.dumps(facts))
    out = tmp_path / "report.json"
    arguments = ["--facts", str(tmp_path / "facts.json"), "--framework", "torch", "--bench", bench]
    result = run_hwcheck("report", "-o", str(out), *arguments)
    assert result.returncode in (0, 1), result.stderr
    return {f["id"]: f for f in json.loads(out.read_text())["recommendation"]["findings"]}


def test_a_torch_214_result_is_stale_on_a_torch_213_machine(tmp_path):
    bench = bench_file(tmp_path, framework_versions={"torch": "2.14.0+cpu"})
    found = report_findings(tmp_path, machine("2.13.0+cpu"), bench)
    assert not {"bench-agrees", "bench-disagrees", "bench-not-applicable"} & set(found)
    message = found["bench-stale"]["message"]
    assert "mlp on the CPU" in message
    assert "measured with torch 2.14.0+cpu, this machine has torch 2.13.0+cpu" in message
    assert "hwcheck bench --framework torch" in found["bench-stale"]["remedy"]


def test_the_same_result_on_its_own_torch_is_used(tmp_path):
    found = report_findings(tmp_path, machine("2.13.0+cpu"), bench_file(tmp_path))
    assert "bench-stale" not in found
    assert {"bench-agrees", "bench-disagrees"} & set(found)


def test_a_stale_result_reaches_no_rule_variable():
    facts = {
        **machine("2.13.0"),
        "measurements": {"bench": [{**CPU_TORCH, "framework_versions": {"torch": "2.14"}}]},
    }
    found = measured.variables(facts, "torch", "torch")
    assert found["count"] == 0 and found["applicable"] == 0 and found["results"] == {}
    assert found["stale_count"] == 1 and "torch 2.14" in found["stale_text"]


@pytest.mark.parametrize(
    ("facts_change", "block_change", "why"),
    [
        ({"frameworks": {}}, {}, "which this machine does not have"),
        ({}, {"device": {"kind": "cpu", "name": "Intel Xeon"}}, "measured on the CPU Intel Xeon"),
        ({}, {"device": {"kind": "gpu", "name": None}}, "measured on a GPU, this machine has none"),
        ({}, {"device": {"kind": "tpu", "name": None}}, "measured on a TPU"),
    ],
)
def test_stale_says_why(facts_change, block_change, why):
    reason = Freshness({**machine("2.13.0"), **facts_change}).stale({**CPU_TORCH, **block_change})
    assert reason is not None and why in reason


def test_a_release_is_matched_without_its_build_label_or_trailing_parts():
    assert same_release("2.11", "2.11.0+cu130") and same_release("2.13.0+cpu", "2.13.0")
    assert not same_release("2.14.0", "2.13.0") and not same_release("2.1", "2.13")
