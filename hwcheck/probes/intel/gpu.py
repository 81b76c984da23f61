"""Intel GPUs: the DRM cards the i915 and xe drivers drive, and Intel GPUs no driver claimed.

Each /sys/class/drm/cardN/device is a link to the card's PCI device folder (vendor 0x8086,
its device id, the bound driver). A GPU of a family that trains (rules/knowledge/intel.toml)
found on the PCI bus with no driver bound is reported too, with `driver` null: i915 refuses
some new boards unless `i915.force_probe` names them, and training then runs on the CPU.
Everything is read under `root`, so tests replay recorded trees in a temporary folder.
"""

from __future__ import annotations

import os

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, plain_path
from hwcheck.probes.intel.driver import driver_facts
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import pci_device, pci_devices, pci_vendor_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DRM = "sys/class/drm"
PCI = "sys/bus/pci/devices"
# PCI base class 0x03: display controller (VGA 0x0300, 3D 0x0302, other 0x0380).
DISPLAY_CLASS = "0x03"


def probe(*, root: str | os.PathLike[str] = "/") -> ProbeResult:
    """The "intel" facts: Intel GPUs in `gpus` and their user-space drivers in `intel_gpu_driver`."""
    from hwcheck.base.tables import load

    root = plain_path(root)
    try:
        table = load("intel")
    except InputError as error:  # a broken install: say which file, never raise
        return ProbeResult(ERROR, reason=str(error))
    try:
        devices = drm_devices(root) + unbound_devices(root, table)
    except OSError as error:
        return ProbeResult(ERROR, reason=f"{joined(root, DRM)}: cannot read: {error.strerror or error}")
    except InputError as error:  # a device file that does not hold a PCI id
        return ProbeResult(ERROR, reason=str(error))
    if not devices:
        return ProbeResult(ABSENT, reason="no Intel GPU in /sys/class/drm or on the PCI bus")
    families = _families(table)
    gpus = [_describe(index, device, families, table) for index, device in enumerate(devices)]
    facts: dict[str, Any] = {"gpus": gpus}
    drivers = driver_facts(
        root, {key: list(table["drivers"][key]) for key in ("level_zero", "opencl", "compute_runtime")}
    )
    if drivers is not None:
        facts["intel_gpu_driver"] = drivers
    return ProbeResult(OK, facts)


def drm_devices(root: str) -> list[dict[str, Any]]:
    """The Intel PCI devices behind /sys/class/drm/card*, one per device, in card order."""
    try:
        names = os.listdir(joined(root, DRM))
    except FileNotFoundError:
        return []
    cards = sorted((name for name in names if _card_number(name)), key=lambda name: int(name[4:]))
    devices: list[dict[str, Any]] = []
    seen: set[str] = set()
    for card in cards:
        device = pci_device(joined(root, DRM, card, "device"), vendors={pci_vendor_id("intel")})
        if device is None or device["address"] in seen:
            continue
        if device["class"] is not None and not device["class"].startswith(DISPLAY_CLASS):
            continue  # a DRM card that is no display controller is no GPU
        if not _pci_id(device["device_id"]):
            shown = device["device_id"][:20]
            raise InputError(
                joined(root, DRM, card, "device", "device"),
                f"{shown!r} is not a PCI device id (0x and 4 hex digits)",
            )
        seen.add(device["address"])
        devices.append({**device, "card": card})
    return devices


def unbound_devices(root: str, table: dict[str, Any]) -> list[dict[str, Any]]:
    """Intel display devices of a known GPU family on the PCI bus that no driver claims."""
    known = {device_id for family in table["family"] for device_id in family["pci_device_ids"]}
    # The device id is a GPU's to the kernel (intel.toml's families); the class, when readable,
    # agrees: read first, so that only display devices are read whole.
    return [
        {**device, "card": None}
        for device in pci_devices(joined(root, PCI), vendors={pci_vendor_id("intel")}, keep=_display)
        if device["driver"] is None and device["device_id"] in known
    ]


def _display(vendor_id: str, device_class: str | None) -> bool:
    return device_class is None or device_class.startswith(DISPLAY_CLASS)


def _card_number(name: str) -> bool:
    # card0, card1, ...: the DRM cards (renderD128 and card0-HDMI-A-1 are not).
    number = name[4:]
    return name.startswith("card") and number.isascii() and number.isdigit()


def _pci_id(text: str) -> bool:
    # 0x and four lower-case hex digits, as sysfs writes a PCI id.
    digits = text[2:]
    return text.startswith("0x") and len(digits) == 4 and all(c in "0123456789abcdef" for c in digits)


def _families(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {device_id: family for family in table["family"] for device_id in family["pci_device_ids"]}


def _describe(
    index: int, device: dict[str, Any], families: dict[str, dict[str, Any]], table: dict[str, Any]
) -> dict[str, Any]:
    device_id = device["device_id"]
    family = families.get(device_id) or {}
    name = table["models"].get(device_id) or family.get("label") or f"Intel GPU [8086:{device_id[2:]}]"
    return {
        "index": index,
        "vendor": "intel",
        "name": name,
        "arch": family.get("architecture"),
        "pci_device_id": device_id,
        "pci_bus_id": device["address"],
        "driver": device["driver"],
        "memory_mib": None,
    }
