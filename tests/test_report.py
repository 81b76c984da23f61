"""`hwcheck report`: stamped, redactable, written atomically."""

from __future__ import annotations

import json
import os

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.facts import schema_problem
from hwcheck.render.report import write_output

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")


def test_report_is_stamped_and_valid(tmp_path):
    out = tmp_path / "node.json"
    result = run_hwcheck("report", "-o", str(out), "--facts", A100)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert schema_problem(report, "report") is None
    assert report["time"].endswith("+00:00")
    assert report["facts"]["gpus"][0]["uuid"].startswith("GPU-")


def test_bare_facts_replayed_have_no_host(tmp_path):
    out = tmp_path / "node.json"
    assert run_hwcheck("report", "-o", str(out), "--facts", A100).returncode == 0
    # The facts are another machine's: this one's name would be a lie.
    assert json.loads(out.read_text())["host"] is None


def test_a_replayed_report_keeps_its_host(tmp_path):
    first = tmp_path / "first.json"
    report = json.loads(run_hwcheck("report", "-o", "-", "--facts", A100).stdout)
    report["host"] = "trainer-17.cluster.example"
    first.write_text(json.dumps(report))
    result = run_hwcheck("report", "-o", str(tmp_path / "%N.json"), "--facts", str(first))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "trainer-17.json").read_text())["host"] == "trainer-17.cluster.example"


@pytest.mark.parametrize("host", ["../../escape", "a/b", ""])
def test_percent_n_refuses_a_host_that_is_no_file_name(tmp_path, host):
    replayed = tmp_path / "replayed.json"
    report = json.loads(run_hwcheck("report", "-o", "-", "--facts", A100).stdout)
    report["host"] = host
    replayed.write_text(json.dumps(report))
    result = run_hwcheck("report", "-o", str(tmp_path / "out" / "%N.json"), "--facts", str(replayed))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "%N" in result.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["replayed.json"]


def test_percent_n_needs_a_host(tmp_path):
    result = run_hwcheck("report", "-o", str(tmp_path / "%N.json"), "--facts", A100)
    assert result.returncode == 2 and "does not say which host" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_report_host_that_is_no_name_is_refused(tmp_path):
    replayed = tmp_path / "replayed.json"
    report = json.loads(run_hwcheck("report", "-o", "-", "--facts", A100).stdout)
    report["host"] = ["node1"]
    replayed.write_text(json.dumps(report))
    result = run_hwcheck("report", "-o", "-", "--facts", str(replayed))
    assert result.returncode == 2 and f"{replayed}: host:" in result.stderr


def test_redact_drops_host_uuid_and_serial(tmp_path):
    out = tmp_path / "node.json"
    run_hwcheck("report", "-o", str(out), "--redact", "--facts", A100)
    report = json.loads(out.read_text())
    assert report["host"] is None and report["redacted"] is True
    for gpu in report["facts"]["gpus"]:
        assert not {"uuid", "serial", "pci_bus_id"} & set(gpu)
    assert "GPU-1111" not in out.read_text()
    assert schema_problem(report, "report") is None


def test_unwritable_destination_exits_2_with_one_line(tmp_path):
    # A missing folder is made; a folder that cannot be (a file stands in its place) is refused.
    (tmp_path / "a-file").write_text("not a folder\n")
    target = tmp_path / "a-file" / "node.json"
    result = run_hwcheck("report", "-o", str(target), "--facts", A100)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and str(target) in result.stderr


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "node.json"
    target.write_text("old report\n")

    def broken_replace(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(InputError, match="No space left on device"):
        write_output(target, "new report\n")
    assert target.read_text() == "old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.json"]


def test_report_to_stdout(tmp_path):
    result = run_hwcheck("report", "-o", "-", "--facts", A100)
    assert json.loads(result.stdout)["recommendation"]["device"] == "gpu"


def test_percent_n_in_the_output_name_is_the_short_host_name(tmp_path):
    import socket

    result = run_hwcheck("report", "-o", str(tmp_path / "%N.json"), "--timeout", "20")
    assert result.returncode in (0, 1), result.stderr
    written = tmp_path / f"{socket.gethostname().split('.')[0]}.json"
    assert json.loads(written.read_text())["host"] == socket.gethostname()
