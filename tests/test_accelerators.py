"""Accelerators hwcheck has no advice for are named: the probe over replayed PCI trees, the
rules over its facts, and doctor over a replayed tree (Gaudi, Ascend, Neuron)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.sysfs import build

from hwcheck import recommend_policy
from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, OK, accelerators, pci
from hwcheck.probes.result import ProbeResult

ROOT = Path(__file__).resolve().parent.parent


def _probe(tmp_path: Path, machine: str) -> ProbeResult:
    root, dev = build(tmp_path, machine)
    return accelerators.probe(root=root, dev=dev, system=tmp_path)


def _installed(site: Path, name: str, version: str) -> None:
    """A dist-info folder as pip writes it, for the site_packages scan."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )


def test_gaudi_devices_are_named_by_the_table_and_the_bmc_display_is_not(tmp_path):
    result = _probe(tmp_path, "gaudi2-habanalabs")
    assert result.status == OK
    devices = result.facts["accelerators"]["devices"]
    assert len(devices) == 8
    assert {(d["name"], d["family"], d["driver"], d["device_nodes"]) for d in devices} == {
        ("Intel Gaudi 2", "gaudi", "habanalabs", True)
    }
    validate_facts({"schema_version": 1, **result.facts}, "gaudi2")


def test_ascend_npus_are_named_and_the_compression_engine_of_the_same_vendor_is_no_npu(tmp_path):
    (tmp_path / "usr/local/Ascend/ascend-toolkit/latest/aarch64-linux").mkdir(parents=True)
    info = tmp_path / "usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\narch=aarch64\n", encoding="ascii")
    (tmp_path / "usr/local/Ascend/driver").mkdir(parents=True)
    (tmp_path / "usr/local/Ascend/driver/version.info").write_text("Version=24.1.rc2\n", encoding="ascii")
    result = _probe(tmp_path, "ascend-910b")
    devices = result.facts["accelerators"]["devices"]
    assert [d.get("family") for d in devices] == ["ascend", "ascend", None]
    assert devices[2]["device_id"] == "0xa250" and devices[2]["name"] == "PCI vendor 0x19e5 device 0xa250"
    software = result.facts["accelerators"]["software"]["ascend"]
    assert (software["cann"], software["driver"]) == ("8.0.RC2", "24.1.rc2")


def test_a_trainium_is_named_by_id_and_the_ena_nic_is_not(tmp_path):
    (tmp_path / "sys/module/neuron").mkdir(parents=True)
    (tmp_path / "sys/module/neuron/version").write_text("2.19.64.0\n", encoding="ascii")
    result = _probe(tmp_path, "trn1-neuron")
    [device] = result.facts["accelerators"]["devices"]
    assert (device["name"], device["class"], device["device_nodes"]) == ("AWS Trainium", None, True)
    assert result.facts["accelerators"]["software"]["neuron"]["driver"] == "2.19.64.0"


def test_neuron_device_nodes_without_a_pci_tree_still_name_the_device(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/neuron0").touch()
    result = accelerators.probe(root=tmp_path / "no-sysfs", dev=tmp_path / "dev", system=tmp_path)
    assert [d["name"] for d in result.facts["accelerators"]["devices"]] == ["AWS Neuron device"]


@pytest.mark.parametrize("machine", ["hwcheck-dev-vm", "mi300x", "h100-driver-loaded", "tpu-v4"])
def test_gpus_and_tpus_are_left_to_their_own_probes(tmp_path, machine):
    result = _probe(tmp_path, machine)
    assert (result.status, result.facts["accelerators"]["devices"]) == (ABSENT, [])


def test_a_hostile_version_file_gives_no_version(tmp_path):
    (tmp_path / "sys/module/habanalabs").mkdir(parents=True)
    (tmp_path / "sys/module/habanalabs/version").write_text("1.16.0; rm -rf /\n", encoding="ascii")
    software = _probe(tmp_path, "gaudi2-habanalabs").facts["accelerators"]["software"]["gaudi"]
    assert (software["driver"], software["driver_loaded"]) == (None, True)


def test_pci_ids_names_only_what_is_asked_and_stops_at_the_classes(tmp_path):
    ids = tmp_path / "pci.ids"
    ids.write_text(
        "# comment\n8086  Intel Corporation\n\t7d1d  Meteor Lake NPU\n\t\t1028 0cc8  subsystem\n"
        "\t0001  Other\n10de  NVIDIA Corporation\nC 12  Processing accelerators\n",
        encoding="utf-8",
    )
    names = pci.pci_names({"0x8086": {"0x7d1d"}}, files=(str(tmp_path / "missing"), str(ids)))
    assert names == {("0x8086", None): "Intel Corporation", ("0x8086", "0x7d1d"): "Meteor Lake NPU"}


# --- what the rules say ---------------------------------------------------------------------


def _facts(tmp_path: Path, machine: str, **frameworks: dict) -> dict:
    facts = {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "x86_64"},
        "cpu": {
            "arch": "x86_64",
            "vendor": "GenuineIntel",
            "model": "Intel(R) Xeon(R) Platinum 8380",
            "flags": ["avx", "avx2", "avx512f"],
        },
        "frameworks": frameworks,
        **_probe(tmp_path, machine).facts,
    }
    return facts


def _findings(recommendation) -> dict[str, tuple[str, str]]:
    return {f.id: (f.severity, f.message) for f in recommendation.findings}


def test_gaudi_host_gets_a_warning_naming_the_device_and_bf16_never_no_accelerator(tmp_path):
    facts = _facts(tmp_path, "gaudi2-habanalabs", torch={"version": "2.2.2"})
    facts["accelerators"]["software"]["gaudi"] = {
        "plugins": {"habana-torch-plugin": "1.16.0.526"},
        "driver": "1.16.0-526",
        "driver_loaded": True,
    }
    recommendation = recommend_policy(facts, framework="torch")
    severity, message = _findings(recommendation)["accelerator-without-advice"]
    assert severity == "warning"
    assert "8× Intel Gaudi 2" in message and "bfloat16" in message
    assert "habana-torch-plugin 1.16.0.526" in message and "driver habanalabs 1.16.0-526" in message
    assert "gaudi-plugin-driver-mismatch" not in _findings(recommendation)
    assert "gaudi-torch-mismatch" not in _findings(recommendation)
    text = " ".join(reason.message for reason in recommendation.reasons)
    assert "No accelerator:" not in text and "8× Intel Gaudi 2 is named in the findings" in text


def test_gaudi_plugin_from_another_release_than_the_driver_is_an_error_and_torch_a_warning(tmp_path):
    facts = _facts(tmp_path, "gaudi2-habanalabs", torch={"version": "2.4.0"})
    facts["accelerators"]["software"]["gaudi"] = {
        "plugins": {"habana-torch-plugin": "1.17.0.495"},
        "driver": "1.16.0-526",
    }
    found = _findings(recommend_policy(facts, framework="torch"))
    severity, message = found["gaudi-plugin-driver-mismatch"]
    assert severity == "error" and "1.17.0.495" in message and "1.16.0-526" in message
    assert "Support_Matrix_v1.17.0" in found["gaudi-torch-mismatch"][1]
    assert "built for PyTorch 2.3.1, and PyTorch 2.4.0 is installed" in found["gaudi-torch-mismatch"][1]


def test_a_patch_release_apart_is_a_mismatch(tmp_path):
    # containers/ai-lab-recipes#587: habana-torch-plugin 1.16.0.526 does not work with drivers 1.16.1-7.
    facts = _facts(tmp_path, "gaudi2-habanalabs", torch={"version": "2.2.2"})
    facts["accelerators"]["software"]["gaudi"] = {
        "plugins": {"habana-torch-plugin": "1.16.0.526"},
        "driver": "1.16.1-7",
    }
    found = _findings(recommend_policy(facts, framework="torch"))
    assert found["gaudi-plugin-driver-mismatch"][0] == "error"
    assert "gaudi-torch-mismatch" not in found


def test_an_unknown_driver_version_is_a_warning_that_says_what_to_run_not_an_error(tmp_path):
    facts = _facts(tmp_path, "gaudi2-habanalabs")
    facts["accelerators"]["software"]["gaudi"] = {"plugins": {"habana-torch-plugin": "1.17.0.495"}}
    found = _findings(recommend_policy(facts, framework="torch"))
    assert "gaudi-plugin-driver-mismatch" not in found
    assert found["gaudi-driver-unknown"][0] == "warning"
    assert (
        "hl-smi"
        in [f for f in recommend_policy(facts, framework="torch").findings if f.id == "gaudi-driver-unknown"][
            0
        ].remedy
    )
    assert "driver habanalabs not loaded" in found["accelerator-without-advice"][1]


def test_an_unknown_processing_accelerator_is_an_info_not_silence(tmp_path):
    found = _findings(recommend_policy(_facts(tmp_path, "intel-npu-meteor-lake"), framework="torch"))
    assert found["accelerator-unknown"][0] == "info"
    assert "0x8086:0x7d1d" in found["accelerator-unknown"][1]
    assert "accelerator-without-advice" not in found


# --- doctor over a replayed tree, no facts file -------------------------------------------------

DOCTOR_OVER = """
import functools, sys
import hwcheck.probes.accelerators as probe
probe.probe = functools.partial(probe.probe, root=sys.argv[1], dev=sys.argv[2], system=sys.argv[3])
from hwcheck.cli import main
sys.exit(main(sys.argv[4:]))
"""


def _doctor_over(
    tmp_path: Path, machine: str, *args: str, site: Path | None = None
) -> subprocess.CompletedProcess[str]:
    root, dev = build(tmp_path, machine)
    path = os.pathsep.join(str(p) for p in (ROOT, site) if p)
    environment = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-c", DOCTOR_OVER, str(root), str(dev), str(tmp_path), "doctor", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("machine", "named"),
    [
        ("gaudi2-habanalabs", "8× Intel Gaudi 2"),
        ("ascend-910b", "2× Huawei Ascend 910B"),
        ("trn1-neuron", "AWS Trainium"),
    ],
)
def test_doctor_names_each_accelerator_of_a_replayed_tree(tmp_path, machine, named):
    done = _doctor_over(tmp_path, machine, "--json", "--framework", "torch")
    report = json.loads(done.stdout)
    assert report["probes"]["accel"]["status"] == "ok"
    findings = {f["id"]: f for f in report["recommendation"]["findings"]}
    assert named in findings["accelerator-without-advice"]["message"]
    assert "No accelerator:" not in json.dumps(report["recommendation"]["reasons"])


def test_doctor_reads_the_gaudi_plugin_from_package_metadata_and_the_driver_from_sysfs(tmp_path):
    site = tmp_path / "site"
    _installed(site, "habana-torch-plugin", "1.17.0.495")
    (tmp_path / "sys/module/habanalabs").mkdir(parents=True)
    (tmp_path / "sys/module/habanalabs/version").write_text("1.16.0-526\n", encoding="ascii")
    done = _doctor_over(tmp_path, "gaudi2-habanalabs", "--framework", "torch", site=site)
    assert "habana-torch-plugin 1.17.0.495" in done.stdout
    assert "driver habanalabs 1.16.0-526" in done.stdout
    assert "accel " in done.stdout and "8× Intel Gaudi 2" in done.stdout


def test_doctor_facts_keeps_and_names_the_accelerators_of_a_facts_file():
    facts = ROOT / "tests" / "fixtures" / "facts" / "gaudi2-plugin1170-torch222-driver-unread.json"
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "hwcheck", "doctor", "--facts", str(facts), "--framework", "torch", "--json"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    report = json.loads(done.stdout)
    assert report["facts"]["accelerators"]["devices"][0]["name"] == "Intel Gaudi 2"
    found = {f["id"]: f["severity"] for f in report["recommendation"]["findings"]}
    assert found["accelerator-without-advice"] == "warning"
    assert found["gaudi-driver-unknown"] == "warning"  # unknown driver: a warning, not a mismatch error
    assert "gaudi-plugin-driver-mismatch" not in found
    assert done.returncode == 0


@pytest.mark.parametrize(
    ("torch", "npu", "error"),
    [
        ("2.5.1", "2.5.1rc1", False),
        ("2.1.0+cpu", "2.1.0.post3", False),
        ("2.4.0", "2.1.0.post3", True),
        ("2.4.0", None, False),
    ],
)
def test_torch_npu_names_the_pytorch_it_works_with(tmp_path, torch, npu, error):
    facts = _facts(tmp_path, "ascend-910b", torch={"version": torch})
    facts["accelerators"]["software"]["ascend"] = {"plugins": {"torch-npu": npu} if npu else {}}
    found = _findings(recommend_policy(facts, framework="torch"))
    assert ("ascend-torch-npu-mismatch" in found) is error


@pytest.mark.parametrize(("loaded", "error"), [(False, True), (True, False), (None, False)])
def test_a_plugin_without_its_loaded_driver_is_an_error_only_when_known(tmp_path, loaded, error):
    facts = _facts(tmp_path, "trn1-neuron", torch={"version": "2.5.1"})
    software = {"plugins": {"torch-neuronx": "2.5.1.2.8.6734"}, "driver": None}
    if loaded is not None:
        software["driver_loaded"] = loaded
    facts["accelerators"]["software"]["neuron"] = software
    found = _findings(recommend_policy(facts, framework="torch"))
    assert ("accelerator-driver-not-loaded" in found) is error
    if error:
        assert "AWS Neuron (neuron)" in found["accelerator-driver-not-loaded"][1]
