"""The TPU probe: PCI ids, slice environment variables, device nodes and libtpu as evidence."""

from __future__ import annotations

import re

import pytest
from fakes.sysfs import build

from hwcheck.base.tables import load
from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK, tpu


def _probe(tmp_path, machine, environ=None, site=()):
    root, dev = build(tmp_path, machine)
    result = tpu.probe(root=root, dev=dev, environ=environ or {}, site_paths=list(site))
    validate_facts({"schema_version": 1, **result.facts}, machine)
    return result, dev


def _libtpu(tmp_path, folder="libtpu-0.0.17.dist-info"):
    site = tmp_path / "site-packages"
    (site / folder).mkdir(parents=True)
    return site


def test_tpu_v4_from_pci_with_its_accel_nodes(tmp_path):
    result, dev = _probe(tmp_path, "tpu-v4")
    assert result.status == OK
    facts = result.facts["tpu"]
    assert (facts["present"], facts["type"], facts["chips"]) == (True, "v4", 4)
    assert facts["detected_by"] == [
        "PCI: 4 x Google 0x005e (v4)",
        "device nodes: " + ", ".join(str(dev / f"accel{n}") for n in range(4)),
    ]


def test_tpu_v6e_uses_vfio_groups_not_the_vfio_control_node(tmp_path):
    result, dev = _probe(tmp_path, "tpu-v6e")
    facts = result.facts["tpu"]
    assert (facts["type"], facts["chips"]) == ("v6e", 8)
    nodes = facts["detected_by"][-1]
    assert nodes == "device nodes: " + ", ".join(str(dev / "vfio" / str(n)) for n in range(8))


@pytest.mark.parametrize(("subsystem", "generation"), [("0x004f", "v3"), ("0x004e", "v2")])
def test_v2_and_v3_share_a_device_id_and_differ_by_subsystem(tmp_path, subsystem, generation):
    root, dev = build(tmp_path, "tpu-v3")
    (root / "0000:00:04.0" / "subsystem_device").write_text(subsystem + "\n")
    facts = tpu.probe(root=root, dev=dev, environ={}, site_paths=[]).facts["tpu"]
    assert (facts["present"], facts["type"]) == (True, generation)


def test_tpu_with_no_public_name_is_present_without_a_type(tmp_path):
    root, dev = build(tmp_path, "tpu-v3")
    (root / "0000:00:04.0" / "device").write_text("0x0056\n")
    facts = tpu.probe(root=root, dev=dev, environ={}, site_paths=[]).facts["tpu"]
    assert (facts["present"], facts["type"], facts["chips"]) == (True, None, 1)
    assert facts["detected_by"][0] == "PCI: 1 x Google 0x0056 (TPU with no public name)"


def test_google_nic_alone_is_not_a_tpu(tmp_path):
    root, dev = build(tmp_path, "tpu-v4")
    for address in ("0000:00:04.0", "0000:00:05.0", "0000:00:06.0", "0000:00:07.0"):
        (root / address).unlink()
    result = tpu.probe(root=root, dev=dev, environ={}, site_paths=[])
    assert (result.status, result.facts) == (ABSENT, {"tpu": {"present": False, "libtpu": None}})


@pytest.mark.parametrize("node", ["accel/accel0", "accel0"])
def test_intel_npu_accel_node_is_not_a_tpu(tmp_path, node):
    root, dev = build(tmp_path, "intel-npu-meteor-lake")
    (dev / node).parent.mkdir(parents=True, exist_ok=True)
    (dev / node).touch()
    result = tpu.probe(root=root, dev=dev, environ={}, site_paths=[])
    assert result.status == ABSENT
    assert result.facts == {"tpu": {"present": False, "libtpu": None}}
    assert "accel" not in result.reason


def test_intel_npu_with_libtpu_installed_is_still_not_a_tpu(tmp_path):
    result, _dev = _probe(tmp_path, "intel-npu-meteor-lake", site=[_libtpu(tmp_path)])
    assert result.status == ABSENT
    assert result.facts["tpu"] == {
        "present": False,
        "libtpu": "0.0.17",
        "detected_by": ["libtpu 0.0.17 installed (weak: `pip install jax[tpu]` installs it on any machine)"],
    }
    assert "libtpu 0.0.17 installed" in result.reason


def test_libtpu_nightly_is_recognised(tmp_path):
    site = _libtpu(tmp_path, "libtpu_nightly-0.1.dev20240617.dist-info")
    assert tpu.libtpu_version(["libtpu", "libtpu_nightly"], [str(site)]) == "0.1.dev20240617"
    assert tpu.libtpu_version(["libtpu", "libtpu_nightly"], [str(tmp_path / "none")]) is None


def test_libtpu_joins_stronger_evidence(tmp_path):
    result, _dev = _probe(tmp_path, "tpu-v4", site=[_libtpu(tmp_path)])
    assert result.facts["tpu"]["detected_by"][-1].startswith("libtpu 0.0.17 installed (weak")


def test_slice_environment_gives_presence_and_generation(tmp_path):
    environ = {"TPU_ACCELERATOR_TYPE": "v5litepod-8", "TPU_WORKER_ID": "0"}
    result, _dev = _probe(tmp_path, "hwcheck-dev-vm", environ=environ)
    assert result.status == OK
    assert result.facts["tpu"] == {
        "present": True,
        "type": "v5e",
        "chips": None,
        "detected_by": ["TPU_ACCELERATOR_TYPE=v5litepod-8", "TPU_WORKER_ID is set"],
        "libtpu": None,
    }


def test_worker_host_names_stay_out_of_the_facts(tmp_path):
    environ = {"TPU_WORKER_HOSTNAMES": "tpu-host-a.internal,tpu-host-b.internal"}
    result, _dev = _probe(tmp_path, "hwcheck-dev-vm", environ=environ)
    facts = result.facts["tpu"]
    assert (facts["present"], facts["type"]) == (True, None)
    assert facts["detected_by"] == ["TPU_WORKER_HOSTNAMES is set"]
    assert "tpu-host" not in repr(result)


def test_pci_generation_wins_over_the_environment(tmp_path):
    result, _dev = _probe(tmp_path, "tpu-v4", environ={"TPU_ACCELERATOR_TYPE": "v5p-8"})
    assert result.facts["tpu"]["type"] == "v4"


def test_tpu_name_alone_is_weak(tmp_path):
    result, _dev = _probe(tmp_path, "hwcheck-dev-vm", environ={"TPU_NAME": "my-tpu"})
    assert result.status == ABSENT
    assert result.facts["tpu"]["present"] is False
    assert result.facts["tpu"]["detected_by"][0].startswith("TPU_NAME is set (weak")


@pytest.mark.parametrize(
    ("value", "generation"),
    [
        ("v2-8", "v2"),
        ("v3-32", "v3"),
        ("v4-8", "v4"),
        ("v5litepod-16", "v5e"),
        ("v5p-128", "v5p"),
        ("v6e-256", "v6e"),
        ("v9z-8", None),
        ("", None),
        ("v4", None),
    ],
)
def test_accelerator_type_names(value, generation):
    assert tpu.accelerator_type_generation(value, load("tpu")["accelerator_types"]) == generation


def test_unreadable_pci_bus_is_an_error(tmp_path):
    (tmp_path / "devices").write_text("")
    result = tpu.probe(root=tmp_path / "devices", dev=tmp_path, environ={}, site_paths=[])
    assert (result.status, result.facts) == (ERROR, {})
    assert result.reason == f"{tmp_path / 'devices'}: cannot read: Not a directory"


def test_knowledge_table_shape_and_ids():
    table = load("tpu")
    assert isinstance(table["meta"]["title"], str)
    assert table["meta"]["sources"] and all(isinstance(s, str) for s in table["meta"]["sources"])
    assert table["pci"]["vendor_id"] == "0x1ae0"
    for device_id, entry in table["pci"]["devices"].items():
        assert re.fullmatch(r"0x[0-9a-f]{4}", device_id)
        assert set(entry) <= {"generation", "subsystems", "note"}
        for subsystem in entry.get("subsystems", {}):
            assert re.fullmatch(r"0x[0-9a-f]{4}", subsystem)


def test_probe_on_this_machine_follows_the_schema():
    result = tpu.probe()
    assert result.status in (OK, ABSENT)
    validate_facts({"schema_version": 1, **result.facts}, "this machine")


def test_a_dev_of_many_nodes_is_named_by_its_first_few(tmp_path):
    # The cap's 100,000 device nodes, scaled down: the evidence names 16 and counts the rest.
    root, dev = build(tmp_path, "tpu-v6e")
    for number in range(8, 1_000):
        (dev / "vfio" / str(number)).touch()
    facts = tpu.probe(root=root, dev=dev, environ={}, site_paths=[]).facts["tpu"]
    nodes = [line for line in facts["detected_by"] if line.startswith("device nodes: ")]
    assert len(nodes) == 1 and nodes[0].endswith(" and 984 more") and nodes[0].count(", ") == 15
