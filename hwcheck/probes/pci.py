"""Accelerators on the PCI bus, seen whether or not a driver (or NVML) can use them."""

from __future__ import annotations

import os
from functools import cache

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, plain_path, read_head
from hwcheck.base.numbers import numbered
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import PCI_DEVICES, pci_devices, pci_vendor_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# PCI base classes (PCI Code and ID Assignment Specification): 0x03 display controller
# (VGA, 3D), 0x12 processing accelerator. A GPU card's HDMI audio (0x0403) and USB-C
# (0x0c03) functions share its vendor id and are not accelerators.
ACCELERATOR_CLASSES = ("0x03", "0x12")


def probe(*, root: str | Path = PCI_DEVICES, dev: str | Path = "/dev") -> ProbeResult:
    """The "pci" facts: NVIDIA, AMD and Google accelerators with their bound drivers."""
    if not os.path.exists(root):
        return ProbeResult(ABSENT, reason=f"{root} does not exist: cannot scan the PCI bus here")
    try:
        found = pci_devices(root, vendors=vendors(), keep=_may_be_accelerator)
    except OSError as error:
        return ProbeResult(ERROR, reason=f"{root}: cannot read: {error.strerror or error}")
    try:
        accelerators = [device for device in found if _is_accelerator(device)]
    except InputError as error:  # rules/knowledge/tpu.toml broken: a broken install
        return ProbeResult(ERROR, reason=str(error))
    seen = {vendors()[device["vendor_id"]] for device in accelerators}
    nodes = {vendor: _has_device_nodes(vendor, plain_path(dev)) for vendor in seen}
    devices = [_describe(device, nodes) for device in accelerators]
    facts = {"pci": {"devices": devices}}
    if not devices:
        reason = "no NVIDIA, AMD or Google accelerator on the PCI bus"
        return ProbeResult(ABSENT, facts, reason=reason)
    return ProbeResult(OK, facts)


@cache
def vendors() -> dict[str, str]:
    """PCI vendor id -> the vendor this probe reports (rules/knowledge/vendors.toml; Google's: tpu.toml)."""
    from hwcheck.base.tables import load

    ids = {pci_vendor_id(name): name for name in ("nvidia", "amd")}
    return {**ids, str(load("tpu")["pci"]["vendor_id"]): "google"}


def _may_be_accelerator(vendor_id: str, device_class: str | None) -> bool:
    # Google's TPUs are known by device id (read only for these), every other one by its class.
    return (device_class or "").startswith(ACCELERATOR_CLASSES) or vendors().get(vendor_id) == "google"


def _is_accelerator(device: dict[str, Any]) -> bool:
    if (device["class"] or "").startswith(ACCELERATOR_CLASSES):
        return True
    if vendors()[device["vendor_id"]] != "google":
        return False
    # Google also makes virtual NICs and NVMe controllers; its TPUs are known by device id.
    from hwcheck.base.tables import load

    return device["device_id"] in load("tpu")["pci"]["devices"]


def _describe(device: dict[str, Any], nodes: dict[str, bool]) -> dict[str, Any]:
    vendor = vendors()[device["vendor_id"]]
    return {
        "address": device["address"],
        "vendor": vendor,
        "vendor_id": device["vendor_id"],
        "device_id": device["device_id"],
        "class": device["class"],
        "driver": device["driver"],
        "device_nodes": nodes[vendor],
    }


def _has_device_nodes(vendor: str, dev: str) -> bool:
    """Whether the vendor's device nodes exist: a container sees them only when given the GPU."""
    if vendor == "nvidia":
        # /dev/nvidiactl plus one /dev/nvidiaN per GPU, created by the loaded driver.
        if not os.path.exists(joined(dev, "nvidiactl")):
            return False
        try:
            return any(numbered(name, "nvidia") for name in os.listdir(dev))
        except OSError:
            return False
    if vendor == "amd":
        return os.path.exists(joined(dev, "kfd"))  # ROCm's compute interface
    from hwcheck.probes.tpu import tpu_device_nodes

    return bool(tpu_device_nodes(dev))


# The system's PCI ID database (pciutils / hwdata), where lspci reads its names from.
PCI_IDS_FILES = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids")
MAX_PCI_IDS_BYTES = 8 * 1024 * 1024  # the whole database is about 1.5 MB
MAX_NAME_CHARS = 120


def pci_names(
    wanted: dict[str, set[str]], files: tuple[str, ...] = PCI_IDS_FILES
) -> dict[tuple[str, str | None], str]:
    """Vendor and device names from the first readable pci.ids: (vendor id, None) -> vendor name,
    (vendor id, device id) -> device name, only for the ids in `wanted` (vendor id -> device ids).

    The file is read up to MAX_PCI_IDS_BYTES; names are cut at MAX_NAME_CHARS and keep
    printable ASCII only, since the file is outside hwcheck's control.
    """
    for path in files:
        try:
            text = read_head(path, MAX_PCI_IDS_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        return _parse_pci_ids(text, wanted)
    return {}


def _parse_pci_ids(text: str, wanted: dict[str, set[str]]) -> dict[tuple[str, str | None], str]:
    names: dict[tuple[str, str | None], str] = {}
    vendor: str | None = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("C "):
            break  # the device classes follow the vendors
        if not line.startswith("\t"):
            key, _, name = line.partition("  ")
            vendor = f"0x{key.strip().lower()}"
            if vendor in wanted:
                names[(vendor, None)] = _printable(name)
            else:
                vendor = None
        elif vendor is not None and not line.startswith("\t\t"):
            key, _, name = line.strip().partition("  ")
            device = f"0x{key.strip().lower()}"
            if device in wanted[vendor]:
                names[(vendor, device)] = _printable(name)
    return names


def _printable(text: str) -> str:
    return "".join(c for c in text.strip() if " " <= c <= "~")[:MAX_NAME_CHARS]
