"""The Intel probe over recorded sysfs trees: DRM cards, GPUs no driver claims, the dpkg drivers."""

from __future__ import annotations

import os

import pytest
from fakes.drm import build_root
from fakes.sysfs import build

from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK
from hwcheck.probes.intel import gpu as intel


def test_an_arc_a770_on_i915_is_found_with_its_family_and_drivers(tmp_path):
    root = build_root(tmp_path, "intel-arc-a770-i915")
    result = intel.probe(root=root)
    assert result.status == OK, result.reason
    assert result.facts["gpus"] == [
        {
            "index": 0,
            "vendor": "intel",
            "name": "Intel Arc A770",
            "arch": "Xe-HPG",
            "pci_device_id": "0x56a0",
            "pci_bus_id": "0000:03:00.0",
            "driver": "i915",
            "memory_mib": None,
        }
    ]
    # The versions sleap-nn#206 lists, read from the dpkg database as collect_env reports them.
    assert result.facts["intel_gpu_driver"] == {
        "level_zero": "1.28.2-2",
        "opencl": "26.05.37020.3-1",
        "compute_runtime": "26.05.37020.3-1",
        "source": "/var/lib/dpkg/status",
    }
    validate_facts({"schema_version": 1, **result.facts}, "intel probe")


def test_a_flex_170_that_i915_refused_is_reported_without_a_driver(tmp_path):
    root = build_root(tmp_path, "intel-flex-170-no-driver")
    result = intel.probe(root=root)
    assert result.status == OK
    (gpu,) = result.facts["gpus"]
    assert (gpu["name"], gpu["pci_device_id"], gpu["driver"]) == (
        "Intel Data Center GPU Flex 170",
        "0x56c0",
        None,
    )
    assert "intel_gpu_driver" not in result.facts  # no dpkg database in that tree


def test_machines_without_intel_gpus_are_absent(tmp_path):
    # The development VM's PCI bus, and a Meteor Lake NPU (an Intel accelerator, but no GPU).
    for machine in ("hwcheck-dev-vm", "intel-npu-meteor-lake"):
        root = tmp_path / machine
        root.mkdir()
        build(root, machine)
        result = intel.probe(root=root)
        assert (result.status, result.facts) == (ABSENT, {}), machine


def test_a_missing_sys_tree_is_absent(tmp_path):
    assert intel.probe(root=tmp_path).status == ABSENT


def test_a_connector_and_a_render_node_are_not_cards(tmp_path):
    root = build_root(tmp_path, "intel-arc-a770-i915")
    drm = root / "sys" / "class" / "drm"
    os.symlink("card1", drm / "card1-DP-1")
    (drm / "renderD128").mkdir()
    (drm / "version").write_text("drm 1.1.0 20060810\n")
    assert len(intel.probe(root=root).facts["gpus"]) == 1


@pytest.mark.parametrize("garbage", ["0xZZZZ", "56a0", "0x56a0a"])
def test_a_device_file_that_is_no_pci_id_is_an_error_naming_it(tmp_path, garbage):
    root = build_root(tmp_path, "intel-arc-a770-i915")
    (root / "sys" / "devices" / "pci0000:00" / "0000:03:00.0" / "device").write_text(garbage + "\n")
    result = intel.probe(root=root)
    assert result.status == ERROR
    assert "is not a PCI device id" in result.reason and "card1" in result.reason
    assert "\n" not in result.reason


def test_an_unreadable_drm_folder_is_an_error(tmp_path):
    root = build_root(tmp_path, "intel-arc-a770-i915")
    drm = root / "sys" / "class" / "drm"
    drm.chmod(0)
    try:
        if os.access(drm, os.R_OK):
            pytest.skip("running as root: permissions do not apply")
        assert intel.probe(root=root).status == ERROR
    finally:
        drm.chmod(0o755)


def test_a_truncated_dpkg_database_keeps_what_it_holds(tmp_path):
    root = build_root(tmp_path, "intel-arc-a770-i915")
    status = root / "var" / "lib" / "dpkg" / "status"
    text = status.read_text()
    status.write_text(text[: text.index("Package: intel-opencl-icd") + 30])  # cut mid-stanza
    driver = intel.probe(root=root).facts["intel_gpu_driver"]
    assert driver["level_zero"] == "1.28.2-2" and driver["opencl"] is None
