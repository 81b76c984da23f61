"""`hwcheck inventory --framework X`: whose policy the classes and the cluster state, named.

The reports are written by `hwcheck report` from recorded machines (tests/fixtures/facts/README.md):
the AMX VM with PyTorch, JAX and TensorFlow, the 4x A100 with TensorFlow, the T4 with PyTorch.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck

MACHINES = ("cpu-amx-torch213-jax0102", "a100-sxm4x4-tf216", "t4-torch201-trainers")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    for name in MACHINES:
        result = run_hwcheck(
            "report", "--facts", str(FIXTURES / "facts" / f"{name}.json"), "-o", str(folder / f"{name}.json")
        )
        assert result.returncode == 0, result.stderr
    return folder


def classes(reports, *arguments: str) -> dict:
    result = run_hwcheck("inventory", str(reports), "--json", *arguments)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_framework_advises_every_class_for_it_and_names_it(reports):
    torch = classes(reports, "--framework", "torch")
    assert torch["cluster"]["frameworks"] == ["torch"]
    by_cpu = {c["description"]["cpu"]: c for c in torch["classes"]}
    assert {c["framework"] for c in torch["classes"]} == {"torch"}
    # The AMX VM: bfloat16 for PyTorch, float32 for JAX (its CPU bfloat16 was measured faster in PyTorch).
    assert by_cpu["Intel(R) Xeon(R) Processor"]["policy"] == "mixed_bfloat16"
    jax = classes(reports, "--framework", "jax")
    assert {c["framework"] for c in jax["classes"]} == {"jax"}
    assert {c["description"]["cpu"]: c["policy"] for c in jax["classes"]}[
        "Intel(R) Xeon(R) Processor"
    ] == "float32"


def test_without_framework_each_class_names_the_one_its_reports_were_advised_for(reports):
    document = classes(reports)
    frameworks = {c["description"]["gpus"]: c["framework"] for c in document["classes"]}
    assert frameworks["4× NVIDIA A100-SXM4-80GB"] == "tensorflow"  # TensorFlow alone is installed there
    assert frameworks["1× Tesla T4"] == "torch"


def test_the_table_and_page_say_whose_policy(reports, tmp_path):
    table = run_hwcheck("inventory", str(reports), "--framework", "lightning", env={"COLUMNS": "250"})
    assert table.returncode == 0, table.stderr
    assert "for PyTorch Lightning" in table.stdout
    assert "Cluster policy: float32 (no loss scaling) for PyTorch Lightning" in table.stdout
    page = tmp_path / "inventory.html"
    result = run_hwcheck("inventory", str(reports), "--framework", "torch", "--html", str(page))
    assert result.returncode == 0, result.stderr
    text = page.read_text()
    assert 'for <span class="framework">PyTorch</span>' in text
    assert "<th>driver, framework build</th>" in text
    # Each class names its own framework's build, never TensorFlow's absence on a PyTorch node.
    assert "PyTorch 2.13.0+cpu" in text and "TF not installed" not in text
    assert "PyTorch 2.13.0+cpu" in table.stdout and "TF not installed" not in table.stdout


def test_a_report_records_the_advice_for_every_framework_installed_or_the_named_one(reports, tmp_path):
    advice = json.loads((reports / "cpu-amx-torch213-jax0102.json").read_text())["advice"]
    assert {name: entry["policy"] for name, entry in advice.items()} == {
        "torch": "mixed_bfloat16",
        "tensorflow": "mixed_bfloat16",
        "jax": "float32",
        "keras": "mixed_bfloat16",
    }
    trainers = json.loads((reports / "t4-torch201-trainers.json").read_text())["advice"]
    assert trainers["lightning"]["native"] == "16-mixed" and trainers["accelerate"]["native"] == "fp16"
    named = tmp_path / "named.json"
    facts = str(FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json")
    assert run_hwcheck("report", "--facts", facts, "--framework", "jax", "-o", str(named)).returncode == 0
    assert list(json.loads(named.read_text())["advice"]) == ["jax"]


def test_the_drift_table_compares_like_with_like_within_a_vendor(tmp_path):
    from hwcheck.inventory.html import version_drift
    from hwcheck.inventory.merge import Merger

    for name in ("apple-m2max-macos152-tf217-metal110", "a100-sxm4x4-tf216"):
        facts = str(FIXTURES / "facts" / f"{name}.json")
        assert run_hwcheck("report", "--facts", facts, "-o", str(tmp_path / f"{name}.json")).returncode == 0
    merger = Merger()
    merger.add_files(sorted(tmp_path.glob("*.json")))
    drift = version_drift(merger.finish())
    # TensorFlow 2.17 on the Mac and 2.16.1 on the A100 node: two vendors, no drift between them.
    assert drift[("TensorFlow", "Apple")] == {"2.17.0": 1}
    assert drift[("TensorFlow", "NVIDIA")] == {"2.16.1 CUDA 12.3": 1}
    assert all(len(versions) == 1 for versions in drift.values())


def test_a_framework_installed_without_a_version_is_not_called_missing(tmp_path):
    # The corpus's 8x H100 (pytorch/torchtitan#853) records torch without its version: doctor
    # says "PyTorch (version unknown)", and inventory must say the same, not "not installed".
    case = FIXTURES.parent / "corpus" / "cases" / "healthy-8xh100-torchtitan-shm-1g.json"
    doctor = run_hwcheck("doctor", "--facts", str(case), "--framework", "torch")
    assert "PyTorch (version unknown)" in doctor.stdout
    report = run_hwcheck(
        "report", "--facts", str(case), "--framework", "torch", "-o", str(tmp_path / "a.json")
    )
    assert report.returncode == 0, report.stderr
    table = run_hwcheck("inventory", str(tmp_path), env={"COLUMNS": "200"})
    assert "PyTorch (version unknown)" in table.stdout
    assert "PyTorch not installed" not in table.stdout


def test_the_csv_and_json_have_a_column_per_framework(reports):
    import csv
    import io

    result = run_hwcheck("inventory", str(reports), "--csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {"tensorflow", "torch", "jax", "keras"} <= set(rows[0])
    by_class = [row for row in rows if row["record"] == "class"]
    # The AMX VM has PyTorch 2.13 and JAX 0.10.2; the 4x A100 has TensorFlow alone.
    assert any(row["torch"].startswith("2.13") and row["jax"].startswith("0.10.2") for row in by_class)
    assert any(row["torch"] == "not installed" and row["tensorflow"].startswith("2.16") for row in by_class)
    document = classes(reports)
    assert all({"torch", "jax", "keras"} <= set(c["description"]) for c in document["classes"])
