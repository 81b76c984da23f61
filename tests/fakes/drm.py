"""Adds /sys/class/drm cards and a dpkg database to a fake sysfs tree (tests/fakes/sysfs.py).

A description's "drm" list names the DRM cards (card name and PCI address); the kernel makes
/sys/class/drm/cardN a link to the card's folder under its PCI device, and cardN/device a link
back to that PCI device. Its "dpkg" list holds installed packages as /var/lib/dpkg/status
records them (Package, Status, Version), one stanza each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fakes.sysfs import SYSFS_FIXTURES, build


def build_root(tmp_path: Path, machine: str) -> Path:
    """Lay out fixtures/sysfs/MACHINE.json with its DRM cards and packages; return the root."""
    build(tmp_path, machine)
    description = json.loads((SYSFS_FIXTURES / f"{machine}.json").read_text(encoding="utf-8"))
    drm = tmp_path / "sys" / "class" / "drm"
    drm.mkdir(parents=True, exist_ok=True)
    for card in description.get("drm", []):
        device = tmp_path / "sys" / "devices" / "pci0000:00" / card["address"]
        folder = device / "drm" / card["card"]
        folder.mkdir(parents=True)
        os.symlink(os.path.relpath(device, folder), folder / "device")
        os.symlink(os.path.relpath(folder, drm), drm / card["card"])
    packages = description.get("dpkg")
    if packages:
        status = tmp_path / "var" / "lib" / "dpkg" / "status"
        status.parent.mkdir(parents=True)
        status.write_text(
            "\n".join(
                f"Package: {p['package']}\nStatus: install ok installed\nVersion: {p['version']}\n"
                for p in packages
            ),
            encoding="utf-8",
        )
    return tmp_path
