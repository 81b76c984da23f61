"""Reads the PCI devices the Linux kernel lists under /sys/bus/pci/devices."""

from __future__ import annotations

import os
from itertools import islice

from hwcheck.base.inputs import plain_path, read_head
from hwcheck.base.numbers import whole_or_none
from hwcheck.probes.result import left_unread, out_of_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from pathlib import Path
    from typing import Any

PCI_DEVICES = "/sys/bus/pci/devices"
# The most PCI devices read of one bus (docs/threat-model.md's cap): a larger listing is cut there.
MAX_PCI_DEVICES = 100_000
ID_BYTES = 64  # "0x10de\n" is 7 bytes
# The deadline is looked at every this many devices: a clock read costs about a device read.
CLOCK_EVERY = 64


def pci_vendor_ids() -> dict[str, str]:
    """GPU maker ("nvidia", "amd", "intel") -> its PCI vendor id ("0x10de").

    Read from rules/knowledge/vendors.toml here, the lowest layer that needs it (the probes);
    hwcheck.knowledge asks it for the layers above.
    """
    from hwcheck.base.tables import load  # the probes that need it load their tables lazily

    return {str(vendor): str(found) for vendor, found in load("vendors")["pci_vendor_ids"].items()}


def pci_vendor_id(vendor: str) -> str:
    """The PCI vendor id ("0x10de") of a GPU maker the table names ("nvidia", "amd", "intel")."""
    return pci_vendor_ids()[vendor]


# sysfs attribute file -> key in the returned dict.
_ID_FILES = {
    "device": "device_id",
    "subsystem_vendor": "subsystem_vendor_id",
    "subsystem_device": "subsystem_device_id",
}


def pci_devices(
    root: str | Path = PCI_DEVICES,
    vendors: Collection[str] | None = None,
    *,
    keep: Callable[[str, str | None], bool] | None = None,
) -> list[dict[str, Any]]:
    """Every PCI device under `root` (or only those whose vendor id is in `vendors` and that
    `keep(vendor_id, class)` keeps), by address.

    Each device: address, vendor_id, device_id, class, subsystem_vendor_id,
    subsystem_device_id (lower-case "0x..." strings; the last three None when unreadable)
    and driver (the bound kernel driver, None when no driver claims the device). A device
    whose ids cannot be read (unplugged mid-scan) is skipped. A missing `root` (not
    Linux, no sysfs) gives []; an unreadable one raises OSError. The filters are applied
    before the other files are read: at the cap of 100,000 devices, one or two reads each.
    A probe at its share of the deadline stops here with the devices read so far (left_unread
    says how many were not: the probe is marked partial).
    """
    root = plain_path(root).rstrip("/")
    try:
        with os.scandir(root or "/") as entries:
            addresses = sorted(entry.name for entry in islice(entries, MAX_PCI_DEVICES))
    except FileNotFoundError:
        return []
    devices = []
    for number, address in enumerate(addresses):
        if number % CLOCK_EVERY == 0 and number and out_of_time():
            left_unread(f"{len(addresses) - number:,} of {len(addresses):,} PCI devices were read")
            break
        # A name listdir gives has no separator: joined as text, without spelling it again.
        device = pci_device(f"{root}/{address}", vendors, address=address, keep=keep)
        if device is not None:
            devices.append(device)
    return devices


def pci_device(
    folder: str,
    vendors: Collection[str] | None = None,
    *,
    address: str | None = None,
    keep: Callable[[str, str | None], bool] | None = None,
) -> dict[str, Any] | None:
    """One PCI device folder (as pci_devices describes it), or None when its ids cannot be read,
    its vendor is not in `vendors` or `keep(vendor_id, class)` refuses it. Without `address`, the
    folder's real name is the address (/sys/class/drm's card*/device links to the PCI device)."""
    folder = folder.rstrip("/")
    vendor_id = _read_id(f"{folder}/vendor")
    if vendor_id is None or (vendors is not None and vendor_id not in vendors):
        return None
    device_class = _read_id(f"{folder}/class")
    if keep is not None and not keep(vendor_id, device_class):
        return None
    address = address or os.path.basename(os.path.realpath(folder))
    device: dict[str, Any] = {"address": address, "vendor_id": vendor_id, "class": device_class}
    for filename, key in _ID_FILES.items():
        device[key] = _read_id(f"{folder}/{filename}")
    if device["device_id"] is None:
        return None
    device["driver"] = _driver(folder)
    return device


def _read_id(path: str) -> str | None:
    # A device can vanish (hot unplug, VF teardown) between listdir and read.
    text = read_attribute(path, ID_BYTES)
    return text.strip().lower() or None if text is not None else None


def read_attribute(path: str | Path, max_bytes: int) -> str | None:
    """At most `max_bytes` of a sysfs attribute file, as ASCII text; None when it cannot be read.

    Read by base/inputs.read_head, so a FIFO in a copied tree gives nothing instead of hanging;
    a byte outside ASCII is replaced, never decoded as something else.
    """
    try:
        return read_head(path, max_bytes).decode("ascii", errors="replace")
    except OSError:
        return None


def _driver(folder: str) -> str | None:
    try:
        return os.path.basename(os.readlink(f"{folder}/driver"))
    except OSError:  # no link: no driver bound
        return None


# The longest CPU list kept ("0-31,64-95"): a machine's is tens of characters.
CPULIST_CHARS = 256
# NUMA nodes beyond this are not a machine's (the kernel's MAX_NUMNODES is 1024).
MAX_NUMA_NODE = 1023
# The most bridges kept between a device and its host bridge.
MAX_PATH_BRIDGES = 8


def placement(device: str) -> dict[str, Any]:
    """Where a PCI device sits: its NUMA node (null when the kernel says -1 or nothing), the CPUs
    local to it, its host bridge ("pci0000:00") and the bridges from there down to it.

    `device` is the device's folder (/sys/bus/pci/devices/ADDR or a class device's `device` link);
    its real path names the tree above it, as `nvidia-smi topo -m` reads it.
    """
    numa = whole_or_none((read_attribute(f"{device}/numa_node", 16) or "").strip())
    cpus = (read_attribute(f"{device}/local_cpulist", CPULIST_CHARS) or "").strip()
    parts = os.path.realpath(device).split(os.sep)
    hosts = [index for index, part in enumerate(parts) if part.startswith("pci") and ":" in part]
    host = parts[hosts[-1]] if hosts else None
    below = parts[hosts[-1] + 1 : -1] if hosts else []
    bridges = [part for part in below if pci_address(part)][-MAX_PATH_BRIDGES:]
    return {
        "numa_node": numa if numa is not None and numa <= MAX_NUMA_NODE else None,
        "local_cpus": cpus if cpus and _cpulist(cpus) else None,
        "host_bridge": host[:32] if host else None,
        "path": bridges,
    }


def pci_address(name: str) -> bool:
    """Whether `name` is a PCI address ("0000:41:00.0")."""
    domain, _, rest = name.partition(":")
    bus, _, slot = rest.partition(":")
    device, _, function = slot.partition(".")
    hexes = (domain, bus, device)
    return all(part and len(part) <= 4 and _hex(part) for part in hexes) and function.isdigit()


def _hex(text: str) -> bool:
    return all(char in "0123456789abcdefABCDEF" for char in text)


def _cpulist(text: str) -> bool:
    return len(text) <= CPULIST_CHARS and all(char in "0123456789,-" for char in text)
