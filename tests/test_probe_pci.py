"""The PCI probe and the sysfs reader on fake /sys/bus/pci trees of real devices."""

from __future__ import annotations

import os

import pytest
from fakes.sysfs import SYSFS_FIXTURES, build

from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK, pci, sysfs

MACHINES = sorted(path.stem for path in SYSFS_FIXTURES.glob("*.json"))


def _probe(tmp_path, machine):
    root, dev = build(tmp_path, machine)
    return pci.probe(root=root, dev=dev)


@pytest.mark.parametrize("machine", MACHINES)
def test_facts_follow_the_schema(tmp_path, machine):
    result = _probe(tmp_path, machine)
    assert result.status in (OK, ABSENT)
    validate_facts({"schema_version": 1, **result.facts}, machine)


def test_h100_bound_to_nvidia(tmp_path):
    result = _probe(tmp_path, "h100-driver-loaded")
    assert result.status == OK
    # The NVSwitch bridge (class 0x0680) on the same board is not an accelerator.
    assert result.facts["pci"]["devices"] == [
        {
            "address": "0000:00:09.0",
            "vendor": "nvidia",
            "vendor_id": "0x10de",
            "device_id": "0x2330",
            "class": "0x030200",
            "driver": "nvidia",
            "device_nodes": True,
        }
    ]


def test_gpu_without_a_driver_is_still_reported(tmp_path):
    result = _probe(tmp_path, "l40s-no-driver")
    assert result.status == OK
    [device] = result.facts["pci"]["devices"]
    assert (device["device_id"], device["driver"], device["device_nodes"]) == ("0x26b9", None, False)


def test_nvidia_audio_function_is_ignored(tmp_path):
    result = _probe(tmp_path, "rtx6000ada-with-audio")
    assert [d["address"] for d in result.facts["pci"]["devices"]] == ["0000:5a:00.0"]
    assert result.facts["pci"]["devices"][0]["class"] == "0x030000"


def test_amd_mi300x_processing_accelerator(tmp_path):
    result = _probe(tmp_path, "mi300x")
    [device] = result.facts["pci"]["devices"]
    assert (device["vendor"], device["device_id"], device["class"]) == ("amd", "0x74a1", "0x120000")
    assert (device["driver"], device["device_nodes"]) == ("amdgpu", True)


def test_tpus_are_listed_by_device_id_and_the_gvnic_is_not(tmp_path):
    result = _probe(tmp_path, "tpu-v4")
    devices = result.facts["pci"]["devices"]
    assert [d["address"] for d in devices] == [f"0000:00:0{n}.0" for n in (4, 5, 6, 7)]
    assert {(d["vendor"], d["device_id"], d["class"], d["device_nodes"]) for d in devices} == {
        ("google", "0x005e", None, True)
    }


@pytest.mark.parametrize("machine", ["hwcheck-dev-vm", "intel-npu-meteor-lake"])
def test_no_accelerator_of_ours_is_absent(tmp_path, machine):
    result = _probe(tmp_path, machine)
    assert result.status == ABSENT
    assert result.facts == {"pci": {"devices": []}}
    assert result.reason == "no NVIDIA, AMD or Google accelerator on the PCI bus"


def test_nvidia_nodes_need_the_control_node_and_a_gpu_node(tmp_path):
    root, dev = build(tmp_path, "h100-driver-loaded")
    (dev / "nvidia0").unlink()
    assert pci.probe(root=root, dev=dev).facts["pci"]["devices"][0]["device_nodes"] is False


def test_missing_sysfs_is_absent_and_says_why(tmp_path):
    result = pci.probe(root=tmp_path / "no-sys", dev=tmp_path)
    assert (result.status, result.facts) == (ABSENT, {})
    assert "does not exist" in result.reason


def test_sysfs_that_is_not_a_folder_is_an_error(tmp_path):
    (tmp_path / "devices").write_text("")
    result = pci.probe(root=tmp_path / "devices", dev=tmp_path)
    assert (result.status, result.facts) == (ERROR, {})
    assert result.reason == f"{tmp_path / 'devices'}: cannot read: Not a directory"


def test_unreadable_sysfs_is_an_error(tmp_path, monkeypatch):
    root, dev = build(tmp_path, "h100-driver-loaded")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == os.fspath(root):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = pci.probe(root=root, dev=dev)
    assert result.status == ERROR
    assert result.reason == f"{root}: cannot read: Permission denied"


# --- the shared sysfs reader ---------------------------------------------------------------


def test_reader_returns_every_device_with_ids_and_driver(tmp_path):
    root, _dev = build(tmp_path, "rtx6000ada-with-audio")
    assert sysfs.pci_devices(root) == [
        {
            "address": "0000:5a:00.0",
            "vendor_id": "0x10de",
            "device_id": "0x26b1",
            "class": "0x030000",
            "subsystem_vendor_id": None,
            "subsystem_device_id": None,
            "driver": "nvidia",
        },
        {
            "address": "0000:5a:00.1",
            "vendor_id": "0x10de",
            "device_id": "0x22ba",
            "class": "0x040300",
            "subsystem_vendor_id": None,
            "subsystem_device_id": None,
            "driver": "snd_hda_intel",
        },
    ]


def test_reader_filters_by_vendor(tmp_path):
    root, _dev = build(tmp_path, "hwcheck-dev-vm")
    assert len(sysfs.pci_devices(root)) == 6
    assert [d["address"] for d in sysfs.pci_devices(root, vendors={"0x8086"})] == ["0000:00:00.0"]


def test_reader_skips_a_device_that_vanished(tmp_path):
    root, _dev = build(tmp_path, "tpu-v4")
    # Hot-unplugged mid-scan: its attribute files are gone by the time they are read.
    (root / "0000:00:05.0").resolve().joinpath("vendor").unlink()
    (root / "0000:00:06.0").resolve().joinpath("device").unlink()
    addresses = [d["address"] for d in sysfs.pci_devices(root)]
    assert addresses == ["0000:00:04.0", "0000:00:07.0", "0000:00:08.0"]


def test_reader_on_a_machine_without_sysfs(tmp_path):
    assert sysfs.pci_devices(tmp_path / "none") == []


@pytest.mark.host("linux")
def test_probe_on_this_machine_follows_the_schema():
    result = pci.probe()
    assert result.status in (OK, ABSENT)
    validate_facts({"schema_version": 1, **result.facts}, "this machine")
