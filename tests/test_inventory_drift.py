"""`hwcheck inventory`: NCCL, driver, CUDA and framework versions that differ within a training job.

The nodes are the real-machine profiles of inventory_helpers. The framework and NCCL
versions are those of real wheels: torch 2.5.1 pins nvidia-nccl-cu12==2.21.5 and torch
2.4.0 pins 2.20.5 (their METADATA, as `pip install` lists them); 535.104.05 is a real R535
driver (nvidia.toml [cuda_drivers]). The mixed-release scenario is the one of
open-mmlab/mmdetection#1089 (a nightly on one node, a release on the other) and
pytorch/pytorch#108212 (check driver and NCCL versions across the nodes of a DDP job).
"""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
from pathlib import Path

import pytest
from inventory_helpers import make_report, write_report

from conftest import run_hwcheck
from hwcheck.inventory.drift import JobGroup, job_group
from hwcheck.inventory.merge import Inventory, Merger
from hwcheck.inventory.output import inventory_csv, inventory_document
from hwcheck.inventory.software import node_software

A100, V100, SAPPHIRE_RAPIDS = "a100-sxm4x8-epyc", "v100-sxm2x8-broadwell", "sapphirerapids-cpu"
TORCH_251 = ("2.5.1+cu124", "12.4", "2.21.5")
TORCH_240 = ("2.4.0+cu121", "12.1", "2.20.5")
NCCL_WHEEL = "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"


def with_torch(report: dict, torch: tuple[str, str, str]) -> dict:
    """`report` whose node has torch (version, CUDA, pinned NCCL) loading that NCCL's wheel."""
    version, cuda, nccl = torch
    facts = report["facts"]
    facts["frameworks"]["torch"] = {"version": version, "cuda": cuda, "nccl": nccl}
    facts["loaded"] = {"torch": {"nccl": {"version": nccl, "path": NCCL_WHEEL, "source": "pip"}}}
    return report


def merge(reports: list[tuple[str, dict]], groups: tuple[JobGroup, ...] = ()) -> Inventory:
    """The inventory of (host, report) pairs."""
    merger = Merger()
    for host, report in reports:
        merger.add(report, f"{host}.json")
    return merger.finish(job_groups=groups)


def drift_of(inventory: Inventory) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(group, component) -> version -> nodes."""
    return {
        (drift.group, drift.component): {version: list(nodes) for version, nodes in drift.versions}
        for drift in inventory.drift
    }


def test_a_node_with_another_driver_is_named_though_the_class_table_splits_it():
    inventory = merge(
        [
            ("gpu1", make_report(A100, "gpu1")),
            ("gpu2", make_report(A100, "gpu2")),
            ("gpu3", make_report(A100, "gpu3", driver=("535.104.05", "12.2"))),
        ]
    )
    assert len(inventory.classes) == 2  # the driver is part of a class
    ((group, component), versions), *rest = drift_of(inventory).items()
    assert not rest
    assert group == "C1+C2" and component == "NVIDIA driver"
    assert versions == {"555.42.02": ["gpu1", "gpu2"], "535.104.05": ["gpu3"]}
    assert inventory.drift[0].describe() == (
        "C1+C2 (8× NVIDIA A100-SXM4-80GB): NVIDIA driver 555.42.02 on gpu1, gpu2; 535.104.05 on gpu3"
    )


def test_nccl_and_torch_differences_within_one_class_name_the_nodes():
    inventory = merge(
        [
            ("gpu1", with_torch(make_report(A100, "gpu1"), TORCH_251)),
            ("gpu2", with_torch(make_report(A100, "gpu2"), TORCH_251)),
            ("gpu3", with_torch(make_report(A100, "gpu3"), TORCH_240)),
        ]
    )
    assert len(inventory.classes) == 1
    assert drift_of(inventory) == {
        ("C1", "NCCL"): {"2.21.5": ["gpu1", "gpu2"], "2.20.5": ["gpu3"]},
        ("C1", "torch"): {"2.5.1+cu124": ["gpu1", "gpu2"], "2.4.0+cu121": ["gpu3"]},
    }


def test_nodes_that_agree_or_cannot_train_together_show_no_drift():
    # Identical nodes: nothing differs.
    same = merge([(h, with_torch(make_report(A100, h), TORCH_251)) for h in ("gpu1", "gpu2", "gpu3")])
    assert same.drift == []
    # A100 and V100 nodes run other drivers, but without a job group they are not one job.
    mixed = merge([("a", make_report(A100, "a")), ("v", make_report(V100, "v"))])
    assert mixed.drift == []
    # A node whose report has no torch (written from another environment) is not counted.
    missing = merge(
        [
            ("gpu1", with_torch(make_report(A100, "gpu1"), TORCH_251)),
            ("gpu2", make_report(A100, "gpu2")),
        ]
    )
    assert missing.drift == []


def test_a_job_group_spans_hardware_and_lists_hosts_without_a_report():
    reports = [
        ("a100-1", with_torch(make_report(A100, "a100-1"), TORCH_251)),
        ("a100-2", with_torch(make_report(A100, "a100-2"), TORCH_251)),
        ("v100-1", with_torch(make_report(V100, "v100-1"), TORCH_240)),
        ("cpu-1", make_report(SAPPHIRE_RAPIDS, "cpu-1")),
    ]
    group = job_group("train=a100-*,v100-1,v100-2")
    inventory = merge(reports, (group,))
    found = drift_of(inventory)
    assert found[("train", "NVIDIA driver")] == {"555.42.02": ["a100-1", "a100-2"], "550.127.05": ["v100-1"]}
    assert found[("train", "NCCL")] == {"2.21.5": ["a100-1", "a100-2"], "2.20.5": ["v100-1"]}
    assert not any("cpu-1" in nodes for versions in found.values() for nodes in versions.values())
    assert inventory.unmatched == [("train", "v100-2")]
    # Given groups replace the same-hardware comparison: a group of two agreeing nodes is clean.
    assert merge(reports, (job_group("pair=a100-1,a100-2"),)).drift == []


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("gpu-*", "gpu-17", True),
        ("gpu-??", "gpu-17", True),
        ("gpu-??", "gpu-170", False),
        ("gpu-1", "gpu-17", False),  # a name is whole, not a prefix
        ("gpu[01-04]", "gpu01", False),  # a Slurm range is not expanded (scontrol show hostnames does)
        ("gpu[01-04]", "gpu[01-04]", True),
        ("a.b", "axb", False),  # a dot is a dot
    ],
)
def test_job_group_hosts_are_names_or_star_and_question_mark_patterns(pattern, host, matches):
    assert job_group(f"g={pattern}").matches(host) is matches


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("gpu1,gpu2", "expected NAME=HOST"),
        ("=gpu1", "expected NAME=HOST"),
        ("bad name=gpu1", "expected NAME=HOST"),
        ("train=", "names no host"),
        ("train= , ,", "names no host"),
        ("train=" + "x" * 300, "longer than 256"),
    ],
)
def test_a_bad_group_is_refused_with_the_reason(text, problem):
    with pytest.raises(argparse.ArgumentTypeError, match=problem):
        job_group(text)


def test_the_nccl_a_framework_loads_counts_before_the_nodes_own():
    facts = with_torch(make_report(A100, "gpu1"), TORCH_251)["facts"]
    facts["nccl"] = {
        "version": "2.18.1",
        "source": "loader",
        "path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
    }
    software = dict(node_software(facts))
    assert software["NCCL"] == "2.21.5"
    del facts["loaded"]
    assert dict(node_software(facts))["NCCL"] == "2.18.1"
    assert dict(node_software(facts))["TensorFlow"] == "2.16.1 CUDA 12.3"


def test_json_csv_terminal_and_page_name_the_same_nodes(tmp_path):
    reports = tmp_path / "reports"
    for host, torch in (("gpu1", TORCH_251), ("gpu2", TORCH_251), ("<b>gpu3</b>", TORCH_240)):
        write_report(reports, f"{host.strip('<>/b')}.json", with_torch(make_report(A100, host), torch))
    as_json = run_hwcheck("inventory", str(reports), "--json", "--group", "job=gpu*,<b>gpu3</b>,gpu9")
    as_csv = run_hwcheck("inventory", str(reports), "--csv", "--group", "job=gpu*,<b>gpu3</b>,gpu9")
    page = tmp_path / "inventory.html"
    shown = run_hwcheck("inventory", str(reports), "--html", str(page), env={"COLUMNS": "200"})
    assert as_json.returncode == as_csv.returncode == shown.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert [(d["group"], d["component"]) for d in document["version_drift"]] == [
        ("job", "NCCL"),
        ("job", "torch"),
    ]
    assert document["version_drift"][0]["versions"] == [
        {"version": "2.21.5", "nodes": ["gpu1", "gpu2"]},
        {"version": "2.20.5", "nodes": ["<b>gpu3</b>"]},
    ]
    assert document["job_groups"] == [
        {"name": "job", "hosts": ["gpu*", "<b>gpu3</b>", "gpu9"], "unmatched": ["gpu9"]}
    ]
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [
        (r["group"], r["component"], r["version"], r["host"]) for r in rows if r["record"] == "drift"
    ] == [
        ("job", d["component"], v["version"], node)
        for d in document["version_drift"]
        for v in d["versions"]
        for node in v["nodes"]
    ]
    assert [(r["group"], r["host"]) for r in rows if r["record"] == "unmatched"] == [("job", "gpu9")]
    # Without --group the three nodes share their hardware: the terminal names them.
    assert "Version drift between nodes that train together (2)" in shown.stdout
    assert "C1 (8× NVIDIA A100-SXM4-80GB): NCCL 2.21.5 on gpu1, gpu2; 2.20.5 on <b>gpu3</b>" in shown.stdout
    text = page.read_text(encoding="utf-8")
    assert 'id="group-drift"' in text and "<b>gpu3</b>" not in text
    assert html.escape("2.20.5: <b>gpu3</b>") in text


def test_a_bad_group_on_the_command_line_is_a_usage_error(tmp_path):
    write_report(tmp_path, "a.json", make_report(A100, "a"))
    result = run_hwcheck("inventory", str(tmp_path), "--group", "no-equals-sign")
    assert result.returncode == 2
    assert "expected NAME=HOST" in result.stderr and "Traceback" not in result.stderr


def test_the_document_lists_no_drift_and_no_groups_for_a_uniform_cluster():
    document = inventory_document(merge([(h, make_report(A100, h)) for h in ("gpu1", "gpu2")]))
    assert document["version_drift"] == [] and document["job_groups"] == []
    assert "drift" not in {
        row.split(",")[0] for row in inventory_csv(merge([("a", make_report(A100, "a"))])).splitlines()
    }


def test_the_docs_example_is_what_the_inventory_prints():
    inventory = merge(
        [
            ("gpu1", with_torch(make_report(A100, "gpu1"), TORCH_251)),
            ("gpu2", with_torch(make_report(A100, "gpu2"), TORCH_251)),
            ("gpu3", with_torch(make_report(A100, "gpu3", driver=("535.104.05", "12.2")), TORCH_240)),
        ]
    )
    page = (Path(__file__).parent.parent / "docs" / "inventory.md").read_text(encoding="utf-8")
    block = page.split("Version drift between nodes that train together (3):\n", 1)[1].split("```", 1)[0]
    assert [line.strip() for line in block.splitlines()] == [d.describe() for d in inventory.drift]
