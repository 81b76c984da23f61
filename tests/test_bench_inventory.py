"""hwcheck inventory: the speed-ups reports' bench results measured, per hardware class."""

from __future__ import annotations

import copy
import csv
import io
import json

from inventory_helpers import make_report, write_report

from conftest import FIXTURES, run_hwcheck

ANCHORS = json.loads((FIXTURES / "bench" / "h100-anchors.json").read_text())
A100 = "NVIDIA A100-SXM4-80GB"  # the GPUs of the class these tests build
TORCH = "2.11.0+cu121"  # the torch its reports say is installed (the anchors measured 2.11)


def mlp_block(bf16_speedup: float, *, script: str | None = None, gpu: str = A100) -> dict:
    """The anchors' MLP block with its bf16 speed-up set, as if measured on one of the class's nodes."""
    block = copy.deepcopy(ANCHORS["benches"][0])
    block["device"]["name"] = gpu
    for result in block["results"]:
        if result["variant"] == "mixed_bfloat16":
            result["speedup"] = bf16_speedup
    if script is not None:
        block["workload"] = {"name": "script", "script": script, "sizes": None}
    return block


def inventory(tmp_path, *benches):
    """Reports of one A100 class, one node per entry of `benches` (None: a report without bench)."""
    folder = tmp_path / "reports"
    for number, blocks in enumerate(benches):
        report = make_report("a100-sxm4x8-epyc", f"node{number}")
        report["facts"]["frameworks"]["torch"] = {"version": TORCH}
        if blocks is not None:
            report["bench"] = blocks
        write_report(folder, f"node{number}.json", report)
    return folder


def test_each_class_shows_the_median_speedup_over_the_nodes_that_measured_it(tmp_path):
    folder = inventory(tmp_path, [mlp_block(8.0)], [mlp_block(9.0)], [mlp_block(12.0)], None)
    result = run_hwcheck("inventory", str(folder), "--json")
    assert result.returncode == 0, result.stderr
    (node_class,) = json.loads(result.stdout)["classes"]
    measured = {m["variant"]: m for m in node_class["measured_speedups"]}
    # float32 is 1 by definition and float16 unscaled is never advice: neither is listed.
    assert set(measured) == {"float32+tf32", "mixed_bfloat16", "mixed_float16"}
    assert measured["mixed_bfloat16"] == {
        "workload": "mlp",
        "framework": "torch",
        "device": "gpu",
        "variant": "mixed_bfloat16",
        "speedup": 9.0,
        "nodes": 3,
    }
    assert measured["float32+tf32"]["speedup"] == 4.041  # the anchors' 19.8 / 4.9, on every node

    table = run_hwcheck("inventory", str(folder), env={"COLUMNS": "250"})
    assert table.returncode == 0, table.stderr
    assert "measured speed-up" in table.stdout
    line = "mlp (torch, GPU): float32+tf32 4.04x, mixed_bfloat16 9.00x, mixed_float16 6.09x (3)"
    assert line in table.stdout

    rows = list(csv.DictReader(io.StringIO(run_hwcheck("inventory", str(folder), "--csv").stdout)))
    speedups = [row for row in rows if row["record"] == "class_speedup"]
    assert {(row["variant"], row["speedup"], row["nodes"]) for row in speedups} == {
        ("float32+tf32", "4.041", "3"),
        ("mixed_bfloat16", "9.0", "3"),
        ("mixed_float16", "6.092", "3"),
    }


def test_without_bench_results_the_table_has_no_speedup_column(tmp_path):
    folder = inventory(tmp_path, None, None)
    result = run_hwcheck("inventory", str(folder), env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    assert "measured speed-up" not in result.stdout
    document = json.loads(run_hwcheck("inventory", str(folder), "--json").stdout)
    assert document["classes"][0]["measured_speedups"] == []


def test_a_hostile_script_name_is_shown_as_text(tmp_path):
    hostile = "/home/x/\x1b]8;;http://evil\x07model\x1b[31m.py"
    folder = inventory(tmp_path, [mlp_block(8.0, script=hostile)])
    result = run_hwcheck("inventory", str(folder), env={"COLUMNS": "250"})
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "model" in result.stdout
    cells = run_hwcheck("inventory", str(folder), "--csv").stdout
    assert "\x1b" not in cells


def test_a_result_measured_with_another_torch_or_gpu_is_no_speedup_of_the_class(tmp_path):
    newer = mlp_block(8.0)
    newer["framework_versions"] = {"torch": "2.14.0"}
    folder = inventory(tmp_path, [newer], [mlp_block(8.0, gpu="NVIDIA H100 80GB HBM3")])
    result = run_hwcheck("inventory", str(folder), "--json")
    assert result.returncode == 0, result.stderr
    (node_class,) = json.loads(result.stdout)["classes"]
    assert node_class["measured_speedups"] == []
