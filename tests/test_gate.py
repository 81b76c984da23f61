"""The gate a scheduler can trust: `doctor --strict` / `--fail-on` and `inventory --strict`.

Exit statuses: 0 ready, 1 an error finding, 2 bad input, 3 no error but the gate failed. The
machines are replays: an A100 node with TensorFlow and no PyTorch (a100-sxm4x4-tf216), two RTX
4090 without peer-to-peer support (rtx4090x2-driver525-torch201: NCCL hangs unless P2P is
disabled), a V100 whose driver is too old (an error) and the recorded H100 (healthy).
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.recommendation import recommend
from hwcheck.recommendation.readiness import gate
from hwcheck.render.report import build_report

FACTS = FIXTURES / "facts"
NO_TORCH = str(FACTS / "a100-sxm4x4-tf216.json")
NO_P2P = FACTS / "rtx4090x2-driver525-torch201.json"
TOO_OLD = str(FACTS / "v100-driver-too-old.json")
H100 = FACTS / "h100-anchor-torch211.json"


def _doctor(*arguments: str) -> tuple[int, dict]:
    result = run_hwcheck("doctor", "--json", *arguments)
    assert result.returncode in (0, 1, 3), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_a_node_without_the_framework_named_fails_only_under_strict():
    status, report = _doctor("--facts", NO_TORCH, "--framework", "torch")
    assert status == 0 and "gate" not in report  # the advice for the hardware alone, as before
    assert "framework-not-installed" in {f["id"] for f in report["recommendation"]["findings"]}
    status, report = _doctor("--facts", NO_TORCH, "--framework", "torch", "--strict")
    assert status == 3
    assert report["gate"] == {
        "strict": True,
        "fail_on": [],
        "passed": False,
        "failing": ["framework-not-installed"],
    }
    # The framework doctor picked itself (TensorFlow, installed) is no reason to fail.
    status, report = _doctor("--facts", NO_TORCH, "--strict")
    assert status == 0 and report["gate"]["passed"] is True


def test_strict_fails_on_a_node_check_that_warns_and_says_so_in_the_text():
    status, report = _doctor("--facts", str(NO_P2P), "--strict")
    assert status == 3 and report["node"]["ready"] is True
    assert report["gate"]["failing"] == ["node-p2p-unsupported-class"]
    text = run_hwcheck("doctor", "--facts", str(NO_P2P), "--strict", env={"COLUMNS": "80"})
    assert text.returncode == 3
    assert "Gate: failed (--strict): node-p2p-unsupported-class." in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80


def test_fail_on_takes_ids_repeated_or_as_a_comma_list():
    status, report = _doctor(
        "--facts", NO_TORCH, "--framework", "torch", "--fail-on", "gpu-tf32-torch,node-shm-small"
    )
    assert status == 3 and report["gate"]["failing"] == ["gpu-tf32-torch"]
    assert report["gate"]["fail_on"] == ["gpu-tf32-torch", "node-shm-small"]
    status, report = _doctor(
        "--facts", NO_TORCH, "--fail-on", "node-shm-small", "--fail-on", "node-acs-redirect"
    )
    assert status == 0 and report["gate"] == {
        "strict": False,
        "fail_on": ["node-acs-redirect", "node-shm-small"],
        "passed": True,
        "failing": [],
    }


@pytest.mark.parametrize("ids", ["node-shm-smal", "node-shm-small,no-such-rule"])
def test_a_rule_id_no_rule_has_is_one_line_and_exit_2(ids):
    result = run_hwcheck("doctor", "--facts", NO_TORCH, "--fail-on", ids)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("hwcheck: error: --fail-on: no rule has the id")


@pytest.mark.parametrize("text", ["", ",", "Node-SHM", "node shm", "x" * 200, "<script>"])
def test_a_malformed_rule_id_is_a_usage_error(text):
    result = run_hwcheck("doctor", "--facts", NO_TORCH, "--fail-on", text)
    assert result.returncode == 2 and "not a rule id" in result.stderr and "Traceback" not in result.stderr


def test_an_error_still_exits_1_and_a_healthy_node_passes():
    status, report = _doctor("--facts", TOO_OLD, "--strict")
    assert status == 1 and report["gate"]["passed"] is False
    status, report = _doctor("--facts", str(H100), "--strict", "--framework", "torch")
    assert status == 0 and report["gate"]["passed"] is True
    from hwcheck.facts import schema_problem

    assert schema_problem(report, "report") is None


def test_the_gate_of_findings():
    findings = [
        ("node-shm-small", "warning"),
        ("gpu-tf32-torch", "info"),
        ("framework-not-installed", "info"),
    ]
    assert gate(findings)["passed"] is True
    assert gate(findings, strict=True)["failing"] == ["node-shm-small"]  # no framework was named
    assert gate(findings, strict=True, framework_named=True)["failing"] == [
        "framework-not-installed",
        "node-shm-small",
    ]
    assert gate(findings, fail_on=["gpu-tf32-torch"])["failing"] == ["gpu-tf32-torch"]
    errors = [("driver-too-old", "error")]
    assert gate(errors, fail_on=["driver-too-old"]) == {
        "strict": False,
        "fail_on": ["driver-too-old"],
        "passed": False,
        "failing": [],  # the error stops the job by itself (exit 1)
    }
    assert gate(None, strict=True)["passed"] is None


def _job(folder):
    """Two RTX 4090 nodes of one job (no P2P, one on another driver) and a healthy H100."""
    facts = json.loads(NO_P2P.read_text())
    other = copy.deepcopy(facts)
    other["nvidia_driver"] = {"version": "535.104.05", "cuda": "12.2"}  # a real R535 driver
    folder.mkdir()
    for host, machine in (("gpu1", facts), ("gpu2", other), ("gpu3", json.loads(H100.read_text()))):
        report = build_report(machine, {}, recommend(machine), stamped=True, host=host)
        (folder / f"{host}.json").write_text(json.dumps(report))
    return str(folder)


def test_inventory_never_counts_warned_or_drifting_nodes_plainly_ready(tmp_path):
    reports = _job(tmp_path / "reports")
    group = "--group=job=gpu1,gpu2"
    text = run_hwcheck("inventory", reports, group, env={"COLUMNS": "200"})
    assert text.returncode == 0
    assert "Ready to train: 1 of 3 nodes (2 ready with warnings" in text.stdout
    assert "gpu1: node-p2p-unsupported-class, NVIDIA driver drift" in text.stdout
    strict = run_hwcheck("inventory", reports, group, "--strict", env={"COLUMNS": "200"})
    assert strict.returncode == 3
    assert "Ready to train: 1 of 3 nodes (2 not ready under --strict" in strict.stdout
    assert "Not ready under --strict (2):" in strict.stdout

    result = run_hwcheck("inventory", reports, group, "--strict", "--json")
    assert result.returncode == 3
    document = json.loads(result.stdout)
    summary = document["summary"]
    assert (summary["ready_nodes"], summary["ready_with_warnings_nodes"], summary["not_ready_nodes"]) == (
        1,
        0,
        2,
    )
    assert document["gate"] == {"strict": True, "passed": False}
    members = {m["host"]: m for c in document["classes"] for m in c["members"]}
    assert members["gpu2"]["ready"] is False and members["gpu2"]["drift"] == ["NVIDIA driver"]
    assert members["gpu2"]["warnings"] == ["node-p2p-unsupported-class"]
    assert members["gpu3"]["ready"] is True and members["gpu3"]["drift"] == []


def test_inventory_strict_passes_a_healthy_group_and_fails_a_missing_host(tmp_path):
    reports = _job(tmp_path / "reports")
    healthy = run_hwcheck("inventory", f"{reports}/gpu3.json", "--strict", "--json")
    assert healthy.returncode == 0 and json.loads(healthy.stdout)["gate"]["passed"] is True
    missing = run_hwcheck("inventory", f"{reports}/gpu3.json", "--strict", "--group=job=gpu3,gpu4")
    assert missing.returncode == 3  # gpu4 sent no report: it was never checked
