"""A node is its machine: a plain and a redacted report of one are one node; one host name twice is two."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_hwcheck
from hwcheck.facts import schema_problem
from hwcheck.facts.identity import machine_fingerprint, read_machine_id
from hwcheck.inventory.merge import Merger

A100_FACTS = "a100-sxm4x4-tf216.json"


def written_report(tmp_path: Path, facts: Path, name: str, *extra: str) -> dict:
    """`hwcheck report --facts FACTS` as the file it writes."""
    path = tmp_path / name
    result = run_hwcheck("report", "-o", str(path), "--facts", str(facts), *extra)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_plain_and_a_redacted_report_of_one_machine_are_one_node(tmp_path, fixtures):
    facts = fixtures / "facts" / A100_FACTS
    plain = written_report(tmp_path, facts, "plain.json")
    plain["host"] = "gpu17.cluster.example"
    hidden = written_report(tmp_path, facts, "redacted.json", "--redact")
    assert hidden["host"] is None and hidden["redacted"] is True
    assert plain["fingerprint"] == hidden["fingerprint"]
    assert "gpu17" not in plain["fingerprint"]
    merger = Merger()
    merger.add(plain, "plain.json")
    merger.add(hidden, "redacted.json")
    inventory = merger.finish(lambda *_: ("float32",))
    assert inventory.nodes == 1
    assert [s.dropped.source for s in inventory.superseded] == ["plain.json"]


def test_two_machines_with_one_host_name_are_two_nodes(tmp_path, fixtures):
    facts = json.loads((fixtures / "facts" / A100_FACTS).read_text(encoding="utf-8"))
    twin = {
        **facts,
        "gpus": [{**gpu, "uuid": f"GPU-{gpu['index']}-twin", "serial": "1"} for gpu in facts["gpus"]],
    }
    (tmp_path / "twin.json").write_text(json.dumps(twin), encoding="utf-8")
    reports = [
        written_report(tmp_path, fixtures / "facts" / A100_FACTS, "one.json"),
        written_report(tmp_path, tmp_path / "twin.json", "two.json"),
    ]
    merger = Merger()
    for number, report in enumerate(reports):
        merger.add({**report, "host": "node-a"}, f"{number}.json")
    inventory = merger.finish(lambda *_: ("float32",))
    assert inventory.nodes == 2 and inventory.superseded == []


def test_the_machine_id_names_the_machine_without_revealing_it(tmp_path):
    machine_id = "0123456789abcdef0123456789abcdef"
    (tmp_path / "machine-id").write_text(machine_id + "\n", encoding="ascii")
    assert read_machine_id((str(tmp_path / "missing"), str(tmp_path / "machine-id"))) == machine_id
    one = machine_fingerprint({"gpus": []}, machine_id)
    assert one == machine_fingerprint({"gpus": [{"uuid": "GPU-1"}]}, machine_id)  # the id decides
    assert one is not None and machine_id not in one and len(one) == 32
    assert machine_fingerprint({"gpus": []}, "f" * 32) != one
    # Without an id or a board id nothing tells two nodes of a class apart: no fingerprint.
    assert machine_fingerprint({"gpus": [{"name": "NVIDIA A100-SXM4-80GB"}]}) is None


def test_old_reports_without_a_fingerprint_stay_valid_and_count_by_host(fixtures):
    from inventory_helpers import make_report

    report = make_report("a100-sxm4x8-epyc", "gpu1")
    assert "fingerprint" not in report and schema_problem(report, "report") is None
    assert schema_problem({**report, "fingerprint": "gpu1"}, "report") is not None
    merger = Merger()
    merger.add(report, "a.json")
    merger.add(dict(report), "b.json")
    assert merger.finish(lambda *_: ("float32",)).nodes == 1


def test_a_live_report_carries_this_machines_fingerprint(tmp_path):
    path = tmp_path / "live.json"
    result = run_hwcheck("report", "-o", str(path), "--redact")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(path.read_text(encoding="utf-8"))
    if read_machine_id() is not None:
        assert report["fingerprint"] == machine_fingerprint({}, read_machine_id())
