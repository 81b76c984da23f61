"""A node's readiness in the inventory: ready unless its report has an error finding, unknown
without advice, in the text, JSON, CSV and HTML outputs alike (recommendation/readiness.py)."""

from __future__ import annotations

import csv
import io
import json

from inventory_helpers import make_report, write_report

from conftest import run_hwcheck

HOSTILE_CHECK = "node-<img src=x onerror=alert(1)>"


def _reports(folder):
    healthy = make_report("a100-sxm4x8-epyc", "gpu-ok")
    warned = make_report("a100-sxm4x8-epyc", "gpu-shm")
    warned["recommendation"]["findings"].append(
        {"id": HOSTILE_CHECK, "severity": "warning", "message": "/dev/shm is small", "remedy": "--shm-size"}
    )
    broken = make_report("t4-vm-old-driver", "gpu-old")
    unadvised = make_report("a100-sxm4x8-epyc", "gpu-unadvised")
    unadvised["recommendation"] = None
    for report in (healthy, warned, broken, unadvised):
        write_report(folder, f"{report['host']}.json", report)
    return {r["host"]: r for r in (healthy, warned, broken, unadvised)}


def test_every_output_says_which_nodes_can_train_and_what_stops_the_others(tmp_path):
    reports = _reports(tmp_path / "reports")
    assert any(f["severity"] == "error" for f in reports["gpu-old"]["recommendation"]["findings"])
    document = json.loads(run_hwcheck("inventory", str(tmp_path / "reports"), "--json").stdout)
    summary = document["summary"]
    counts = ("ready_nodes", "ready_with_warnings_nodes", "not_ready_nodes", "readiness_unknown_nodes")
    # The node that warns is never counted plainly ready.
    assert tuple(summary[key] for key in counts) == (1, 1, 1, 1)
    members = {m["host"]: m for c in document["classes"] for m in c["members"]}
    assert members["gpu-ok"]["ready"] is True and members["gpu-ok"]["warnings"] == []
    assert members["gpu-shm"]["ready"] is True and members["gpu-shm"]["warnings"] == [HOSTILE_CHECK]
    errors = sorted(
        {f["id"] for f in reports["gpu-old"]["recommendation"]["findings"] if f["severity"] == "error"}
    )
    assert members["gpu-old"]["ready"] is False and members["gpu-old"]["failing"] == errors
    assert members["gpu-unadvised"]["ready"] is None  # never counted ready for lacking advice

    text = run_hwcheck("inventory", str(tmp_path / "reports"), env={"COLUMNS": "100"}).stdout
    assert "Ready to train: 1 of 4 nodes (1 ready with warnings, listed below: node checks that" in text
    assert "1 not ready: its errors are listed below; 1 unknown: its" in text
    assert "Ready with warnings (1):" in text and "gpu-shm: node-<img" in text

    rows = list(
        csv.DictReader(io.StringIO(run_hwcheck("inventory", str(tmp_path / "reports"), "--csv").stdout))
    )
    nodes = {row["host"]: row for row in rows if row["record"] == "node"}
    assert nodes["gpu-old"]["ready"] == "false" and nodes["gpu-old"]["failing"] == " ".join(errors)
    assert nodes["gpu-unadvised"]["ready"] == ""

    page = tmp_path / "inventory.html"
    assert run_hwcheck("inventory", str(tmp_path / "reports"), "--html", str(page)).returncode == 0
    html = page.read_text(encoding="utf-8")
    assert '<span id="summary-ready-to-train"><b>1</b>' in html and 'id="node-warnings"' in html
    assert '<span id="summary-ready-with-warnings"><b>1</b>' in html
    assert HOSTILE_CHECK not in html and "node-&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_reports_readiness_is_the_one_doctor_wrote(tmp_path):
    facts = "tests/fixtures/facts/cpu-docker-shm64m-torch213.json"
    written = run_hwcheck(
        "report", "--facts", facts, "--framework", "torch", "-o", str(tmp_path / "r" / "a.json")
    )
    assert written.returncode == 0, written.stderr
    report = json.loads((tmp_path / "r" / "a.json").read_text())
    document = json.loads(run_hwcheck("inventory", str(tmp_path / "r"), "--json").stdout)
    (member,) = [m for c in document["classes"] for m in c["members"]]
    assert {key: member[key] for key in ("ready", "failing", "warnings")} == report["node"]
    assert report["node"]["warnings"] == ["node-shm-small"]
