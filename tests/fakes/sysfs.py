"""Builds a fake /sys/bus/pci + /dev tree from a machine description in fixtures/sysfs/."""

from __future__ import annotations

import json
import os
from pathlib import Path

SYSFS_FIXTURES = Path(__file__).parent.parent / "fixtures" / "sysfs"
# Files the kernel puts in every PCI device folder, keyed as in the descriptions.
_ATTRIBUTES = ("vendor", "device", "class", "subsystem_vendor", "subsystem_device")


def build(tmp_path: Path, machine: str) -> tuple[Path, Path]:
    """Lay out fixtures/sysfs/MACHINE.json under tmp_path; return (pci devices root, dev)."""
    description = json.loads((SYSFS_FIXTURES / f"{machine}.json").read_text(encoding="utf-8"))
    sys_root = tmp_path / "sys"
    devices_root = sys_root / "bus" / "pci" / "devices"
    devices_root.mkdir(parents=True)
    for device in description["devices"]:
        # Like the kernel: the real folder is under /sys/devices, the bus lists symlinks.
        folder = sys_root / "devices" / "pci0000:00" / device["address"]
        folder.mkdir(parents=True)
        for name in _ATTRIBUTES:
            if device.get(name) is not None:
                (folder / name).write_text(device[name] + "\n", encoding="ascii")
        if device.get("driver"):
            driver = sys_root / "bus" / "pci" / "drivers" / device["driver"]
            driver.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(driver, folder), folder / "driver")
        os.symlink(os.path.relpath(folder, devices_root), devices_root / device["address"])
    dev = tmp_path / "dev"
    dev.mkdir()
    for node in description["dev"]:
        (dev / node).parent.mkdir(parents=True, exist_ok=True)
        (dev / node).touch()
    return devices_root, dev
