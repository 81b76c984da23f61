"""The AMD probe over ROCm topologies recorded from real machines (tests/fixtures/kfd), and bad input."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from fakes.kfd import build, description

from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK
from hwcheck.probes.amd import gpu
from hwcheck.probes.amd.gpu import gfx_target

NODES = "sys/class/kfd/kfd/topology/nodes"


def probe(root: Path, **environ: str):
    return gpu.probe(root=root, environ=environ)


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        (
            "rx7900xtx",
            {
                "arch": "gfx1100",
                "name": "AMD Radeon RX 7900 XTX",
                "uuid": "GPU-0aac02dbebd629ee",
                "pci_bus_id": "0000:23:00.0",
                "pci_device_id": "0x744c",
                "compute_units": 96,
            },
        ),
        (
            "mi300x",
            {
                "arch": "gfx942",
                "name": "AMD Instinct MI300X",
                "uuid": "GPU-8af705259683161c",
                "pci_device_id": "0x74a1",
            },
        ),
        (
            "w6600-gfx1032",
            {"arch": "gfx1032", "name": "AMD Radeon Pro W6600", "uuid": None, "pci_bus_id": "0000:03:00.0"},
        ),
    ],
)
def test_recorded_gpus_are_seen_as_rocminfo_printed_them(tmp_path, machine, expected):
    result = probe(build(tmp_path, machine))
    assert result.status == OK, result.reason
    (found,) = result.facts["gpus"]
    assert found["vendor"] == "amd" and found["index"] == 0
    assert {key: found.get(key) for key in expected} == expected
    validate_facts({"schema_version": 1, **result.facts}, machine)


def test_the_rocm_release_comes_from_its_version_file(tmp_path):
    result = probe(build(tmp_path, "mi300x"))
    assert result.facts["rocm"]["version"] == "6.3.3"
    assert result.facts["rocm"]["path"] == "/opt/rocm"
    assert [entry["version"] for entry in result.facts["rocm"]["found"]] == ["6.3.3"]


def test_rocm_path_is_preferred_and_every_install_is_listed(tmp_path):
    root = build(tmp_path, "rx7900xtx", rocm_version="6.2.0")
    other = root / "opt/rocm-5.7.1/.info"
    other.mkdir(parents=True)
    (other / "version").write_text("5.7.1-98\n")
    rocm = probe(root, ROCM_PATH="/opt/rocm-5.7.1").facts["rocm"]
    assert (rocm["version"], rocm["path"]) == ("5.7.1", "/opt/rocm-5.7.1")
    assert [entry["version"] for entry in rocm["found"]] == ["6.2.0", "5.7.1"]


def test_a_garbage_rocm_version_is_a_reason_naming_the_file(tmp_path):
    root = build(tmp_path, "rx7900xtx")
    (root / "opt/rocm/.info").mkdir(parents=True)
    (root / "opt/rocm/.info/version").write_text("latest-and-greatest\n")
    result = probe(root)
    assert result.status == OK and result.facts["rocm"]["version"] is None
    assert "/opt/rocm/.info/version holds 'latest-and-greatest', not a ROCm release number" in result.reason


def test_a_truncated_properties_file_is_an_error_naming_the_node(tmp_path):
    root = build(tmp_path, "rx7900xtx")
    properties = root / NODES / "1" / "properties"
    text = properties.read_text()
    properties.write_text(text[: text.index("gfx_target_version") + 10])  # cut mid-line, as a full disk would
    result = probe(root)
    assert result.status == ERROR
    assert result.reason.startswith("KFD node 1 (/sys/class/kfd/kfd/topology/nodes/1/properties): ")
    assert "truncated" in result.reason
    assert result.facts["gpus"] == []


def test_a_target_the_table_lacks_is_kept_and_named(tmp_path):
    root = build(tmp_path, "rx7900xtx")
    properties = root / NODES / "1" / "properties"
    properties.write_text(
        properties.read_text().replace("gfx_target_version 110000", "gfx_target_version 120500")
    )
    result = probe(root)
    assert result.status == OK
    assert result.facts["gpus"][0]["arch"] == "gfx1250"
    assert "gfx target gfx1250 is not in hwcheck's table (rules/knowledge/amd.toml [[gfx]])" in result.reason


@pytest.mark.parametrize("value", ["123456", "99999999999999999999999", "-1", "0x90402"])
def test_a_gfx_target_version_that_encodes_no_target_is_an_error(tmp_path, value):
    root = build(tmp_path, "rx7900xtx")
    properties = root / NODES / "1" / "properties"
    properties.write_text(properties.read_text().replace("110000", value))
    result = probe(root)
    assert result.status == ERROR and result.reason.startswith("KFD node 1")


@pytest.mark.parametrize(
    ("version", "target"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (110000, "gfx1100"),
        (100302, "gfx1032"),
        (110501, "gfx1151"),
        (123456, None),
    ],
)
def test_gfx_target_version_decodes_as_kfd_encodes_it(version, target):
    assert gfx_target(version) == target


def test_no_topology_is_absent(tmp_path):
    result = probe(tmp_path)
    assert result.status == ABSENT
    assert result.reason == "no AMD GPU in the KFD topology (/sys/class/kfd)"


def test_a_drm_card_without_kfd_says_rocm_cannot_use_it(tmp_path):
    root = build(tmp_path, "rx7900xtx")
    shutil.rmtree(root / "sys/class/kfd")
    result = probe(root)
    assert result.status == ABSENT
    assert (
        "AMD GPU at 0000:23:00.0 has a DRM device but the kernel lists no KFD compute node" in result.reason
    )


def test_a_fifo_in_a_copied_tree_does_not_hang_the_probe(tmp_path):
    root = build(tmp_path, "rx7900xtx")
    properties = root / NODES / "1" / "properties"
    properties.unlink()
    os.mkfifo(properties)
    box = []
    thread = threading.Thread(target=lambda: box.append(probe(root)), daemon=True)
    thread.start()
    thread.join(10)
    assert box, "the probe blocked on a FIFO"
    assert box[0].status == ERROR and "KFD node 1" in box[0].reason


def test_the_recorded_machines_name_their_sources():
    for path in Path(__file__).parent.joinpath("fixtures", "kfd").glob("*.json"):
        assert description(path.stem)["source"].startswith("https://github.com/"), path.name
