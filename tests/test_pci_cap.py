"""The PCI probes at the cap of 100,000 devices: vendor and class are read first, the rest only
for the devices a probe keeps, and a larger bus is read only to its cap.

The bus is held in memory (sysfs's scandir and reads answered from a dict, every read counted):
recorded devices from tests/fixtures/sysfs (an H100, a Gaudi 2, a TPU v4 and an Intel Flex 170
with no driver) among copies of the dev VM's Intel host bridge and virtio devices, as a
hostile or huge machine would list them.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from types import SimpleNamespace

import pytest
from fakes.sysfs import SYSFS_FIXTURES

from hwcheck.base.tables import load
from hwcheck.probes import OK, accelerators, pci, sysfs, tpu
from hwcheck.probes.intel import gpu as intel_gpu
from hwcheck.probes.sysfs import MAX_PCI_DEVICES

FILES = ("vendor", "device", "class", "subsystem_vendor", "subsystem_device")


def recorded(machine: str) -> list[dict]:
    return json.loads((SYSFS_FIXTURES / f"{machine}.json").read_text(encoding="utf-8"))["devices"]


class Bus:
    """`count` PCI devices in memory, answering sysfs's scandir, read_head and readlink."""

    def __init__(self, root: str, count: int) -> None:
        self.root = root
        wanted = [
            *recorded("h100-driver-loaded")[:1],
            *recorded("gaudi2-habanalabs")[:1],
            *recorded("tpu-v4")[:1],
            *recorded("intel-flex-170-no-driver")[:1],
        ]
        filler = recorded("hwcheck-dev-vm")
        self.devices = {f"0000:f{n:06x}.0": filler[n % len(filler)] for n in range(count - len(wanted))}
        self.devices.update({device["address"]: device for device in wanted})
        self.reads: Counter[str] = Counter()

    def scandir(self, path):
        assert path.rstrip("/") == self.root
        return _Entries([SimpleNamespace(name=name) for name in self.devices])

    def read_head(self, path, max_bytes):
        folder, _, name = path.rpartition("/")
        if folder.rpartition("/")[0] != self.root:  # a driver's version file: none on this machine
            raise FileNotFoundError(path)
        self.reads[name] += 1
        value = self.devices[folder.rpartition("/")[2]].get(name)
        if value is None:
            raise FileNotFoundError(path)
        return (value + "\n").encode()[:max_bytes]

    def readlink(self, path):
        driver = self.devices[path.rsplit("/", 2)[1]].get("driver")
        if driver is None:
            raise FileNotFoundError(path)
        return f"../../../bus/pci/drivers/{driver}"


class _Entries(list):
    def __enter__(self):
        return iter(self)

    def __exit__(self, *exc):
        return False


@pytest.fixture
def bus(tmp_path, monkeypatch):
    def make(count: int) -> Bus:
        made = Bus(str(tmp_path), count)
        shim = SimpleNamespace(scandir=made.scandir, readlink=made.readlink, path=os.path, fspath=os.fspath)
        monkeypatch.setattr(sysfs, "os", shim)
        monkeypatch.setattr(sysfs, "read_head", made.read_head)
        return made

    return make


def test_at_the_cap_each_probe_reads_vendor_and_class_only_of_what_it_does_not_keep(bus):
    made = bus(MAX_PCI_DEVICES)
    found = pci.probe(root=made.root, dev=made.root)
    assert found.status == OK
    assert sorted(d["device_id"] for d in found.facts["pci"]["devices"]) == ["0x005e", "0x2330"]
    assert made.reads["vendor"] == MAX_PCI_DEVICES
    # Only NVIDIA, AMD and Google devices have their class read; only accelerators the rest.
    assert made.reads["class"] == 2 and made.reads["device"] == 2 and made.reads["subsystem_device"] == 2

    made.reads.clear()
    named = accelerators.probe(root=made.root, dev=made.root, system=made.root)
    assert [d["family"] for d in named.facts["accelerators"]["devices"]] == ["gaudi"]
    assert made.reads["vendor"] == made.reads["class"] == MAX_PCI_DEVICES
    assert made.reads["device"] == 1

    made.reads.clear()
    assert tpu.tpu_pci_devices(made.root, load("tpu"))[0]["device_id"] == "0x005e"
    assert made.reads["vendor"] == MAX_PCI_DEVICES and made.reads["device"] == 1


def test_intel_reads_whole_only_its_display_devices(bus, tmp_path):
    made = bus(MAX_PCI_DEVICES)
    intel_root = tmp_path / "root"
    (intel_root / "sys/bus/pci").mkdir(parents=True)
    made.root = str(intel_root / "sys/bus/pci/devices")
    unbound = intel_gpu.unbound_devices(str(intel_root), load("intel"))
    assert [d["device_id"] for d in unbound] == ["0x56c0"]
    intel_devices = sum(d["vendor"] == "0x8086" for d in made.devices.values())
    assert made.reads["class"] == intel_devices and made.reads["device"] == 1


def test_just_over_the_cap_the_bus_is_read_to_its_cap(bus):
    made = bus(MAX_PCI_DEVICES + 1)
    sysfs.pci_devices(made.root, vendors={"0x10de"})
    assert made.reads["vendor"] == MAX_PCI_DEVICES


@pytest.mark.parametrize("name", ["pci", "accel", "tpu", "intel"])
def test_a_probe_at_its_deadline_returns_what_it_has_marked_partial(bus, tmp_path, monkeypatch, name):
    import time

    from hwcheck.probes import TIMEOUT, collect

    made = bus(MAX_PCI_DEVICES)
    read = made.read_head

    def slow(path, max_bytes):
        time.sleep(0.0002)  # a slow sysfs: the whole bus takes longer than the deadline
        return read(path, max_bytes)

    monkeypatch.setattr(sysfs, "read_head", slow)
    intel_root = tmp_path / "root"
    (intel_root / "sys/bus/pci").mkdir(parents=True)
    probes = {
        "pci": lambda: pci.probe(root=made.root, dev=made.root),
        "accel": lambda: accelerators.probe(root=made.root, dev=made.root, system=made.root),
        "tpu": lambda: tpu.probe(root=made.root, dev=made.root, environ={}, site_paths=[]),
        "intel": lambda: intel_gpu.probe(root=str(intel_root)),
    }
    if name == "intel":
        made.root = str(intel_root / "sys/bus/pci/devices")
    started = time.perf_counter()
    # 4 s: the probe stops reading at 3.2 s (PARTIAL_SHARE) and has the rest to answer, on a busy core.
    collected = collect(timeout=4.0, probes={name: probes[name]})
    assert time.perf_counter() - started < 40
    result = collected.results[name]
    # Not cut off with nothing: the devices read before the deadline are in the facts.
    assert result.status == TIMEOUT and result.reason.startswith("partial: the deadline came before ")
    assert f"of {MAX_PCI_DEVICES:,} PCI devices were read" in result.reason
    found = {
        "pci": lambda facts: sorted(d["device_id"] for d in facts["pci"]["devices"]) == ["0x005e", "0x2330"],
        "accel": lambda facts: [d["family"] for d in facts["accelerators"]["devices"]] == ["gaudi"],
        "tpu": lambda facts: facts["tpu"]["chips"] == 1,
        "intel": lambda facts: [g["pci_device_id"] for g in facts["gpus"]] == ["0x56c0"],
    }
    assert found[name](collected.facts), collected.facts
