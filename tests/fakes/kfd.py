"""Lays out a recorded ROCm topology (tests/fixtures/kfd/NAME.json) under a temporary root."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

KFD_FIXTURES = Path(__file__).parent.parent / "fixtures" / "kfd"


def description(machine: str) -> dict[str, Any]:
    """The recorded machine, as the fixture file holds it."""
    return json.loads((KFD_FIXTURES / f"{machine}.json").read_text(encoding="utf-8"))


def build(root: Path, machine: str, *, rocm_version: str | None = None) -> Path:
    """Write MACHINE's KFD nodes, DRM cards, amdgpu.ids and ROCm version file under `root`; return it."""
    recorded = description(machine)
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    for number, values in recorded["nodes"].items():
        folder = nodes / number
        folder.mkdir(parents=True)
        # The kernel prints one "name value" line per property, newline-terminated.
        (folder / "properties").write_text("".join(f"{k} {v}\n" for k, v in values.items()), encoding="ascii")
        (folder / "gpu_id").write_text("0\n" if values.get("gfx_target_version") == 0 else "1\n")
    for card in recorded["drm"]:
        device = root / "sys/devices/pci0000:00" / card["address"]
        device.mkdir(parents=True)
        (device / "vendor").write_text(card["vendor"] + "\n")
        (device / "device").write_text(card["device"] + "\n")
        if card.get("revision"):
            (device / "revision").write_text(card["revision"] + "\n")
        link = root / "sys/class/drm" / card["card"]
        link.mkdir(parents=True)
        os.symlink(os.path.relpath(device, link), link / "device")
    if recorded.get("amdgpu_ids"):
        ids = root / "usr/share/libdrm/amdgpu.ids"
        ids.parent.mkdir(parents=True)
        ids.write_text("# List of AMDGPU IDs\n1.0.0\n" + "\n".join(recorded["amdgpu_ids"]) + "\n")
    version = rocm_version or recorded.get("rocm_version")
    if version:
        info = root / "opt" / f"rocm-{version}" / ".info"
        info.mkdir(parents=True)
        (info / "version").write_text(version + "\n")
        os.symlink(f"rocm-{version}", root / "opt" / "rocm")
    return root
