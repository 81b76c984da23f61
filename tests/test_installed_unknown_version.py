"""`"torch": {}` in the facts is an installed PyTorch whose version could not be read, everywhere:
the rules' torch.installed, doctor's frameworks row and the findings (never "not installed")."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.engine import build_context
from hwcheck.facts import installed
from hwcheck.recommendation import recommend

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"
NAMESPACES = {"torch": "torch", "jax": "jax", "tensorflow": "tf"}


def facts_with(name: str, value) -> dict:
    facts = json.loads(H100.read_text())
    facts["frameworks"].pop(name, None)
    if value is not ...:
        facts["frameworks"][name] = value
    return facts


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize(("value", "expected"), [({}, True), ({"version": "2.5.1"}, True), (..., False)])
def test_an_empty_section_is_installed_and_an_absent_one_is_not(name, value, expected):
    facts = facts_with(name, value)
    assert installed(facts["frameworks"], name) is expected
    assert build_context(facts, framework="torch")[NAMESPACES[name]]["installed"] is expected


def test_torch_with_an_unknown_version_is_never_called_not_installed(tmp_path):
    facts = facts_with("torch", {})
    ids = {finding.id for finding in recommend(facts, framework="torch").findings}
    assert "framework-not-installed" not in ids
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--facts", str(path), "--framework", "torch", env={"COLUMNS": "200"})
    assert "PyTorch (version unknown)" in result.stdout
    assert "PyTorch is not installed" not in result.stdout
    absent = facts_with("torch", ...)
    assert "framework-not-installed" in {f.id for f in recommend(absent, framework="torch").findings}


JETSON = FIXTURES / "facts" / "jetson-orin-nx-jp62-torch260-cu126.json"


@pytest.mark.parametrize("soc", ["tegra210", "tegra186", "tegra194", "tegra234", "tegra264"])
def test_the_jetson_probes_own_gpu_names_are_not_unlisted_models(soc):
    """The integrated GPU named from rules/knowledge/tegra.toml is hwcheck's own row, with its capability."""
    from hwcheck.base.tables import load
    from hwcheck.probes.nvidia.tegra import gpu_name

    row = load("tegra")["soc"][soc]
    facts = json.loads(JETSON.read_text())
    facts["tegra"] = {**facts["tegra"], "soc": soc, "family": row["family"]}
    facts["tegra"].update(compute_capability=row["compute_capability"], gpu_name=gpu_name(row))
    gpu = build_context(facts, framework="torch")["gpu"]
    assert gpu["count"] == 1 and gpu["unlisted"] == [] and gpu["assumed"] == []
    ids = {finding.id for finding in recommend(facts, framework="torch").findings}
    assert "gpu-unlisted-model" not in ids


def test_a_gpu_named_otherwise_is_still_unlisted():
    facts = json.loads(H100.read_text())
    gpu = {key: value for key, value in facts["gpus"][0].items() if key != "pci_device_id"}
    facts["gpus"] = [{**gpu, "name": "NVIDIA Zorblax 9000", "integrated": True}]
    assert build_context(facts, framework="torch")["gpu"]["unlisted"]
