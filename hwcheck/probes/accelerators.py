"""Accelerators hwcheck has no precision advice for, named all the same.

Every PCI processing accelerator (class 0x12) of a vendor the GPU and TPU probes do not
cover, and every device rules/knowledge/accelerators.toml lists by id (Intel Gaudi, Huawei
Ascend, AWS Trainium/Inferentia, Tenstorrent, Qualcomm Cloud AI), with its name (the table,
else the system's pci.ids), bound driver and device nodes; for each product family found,
its framework plugins' versions (installed package metadata, never imported) and its
driver's and runtime's versions from their files. An AWS Neuron device seen only as
/dev/neuronN (no PCI tree here) is named too.
"""

from __future__ import annotations

import os
import re

from hwcheck.base.inputs import joined, matching_paths, plain_path
from hwcheck.base.numbers import numbered
from hwcheck.probes.pci import pci_names, vendors
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import PCI_DEVICES, pci_devices, read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

PROCESSING_ACCELERATOR = "0x12"  # PCI base class (PCI Code and ID Assignment Specification)
VERSION_BYTES = 256
MAX_VERSION_FILES = 8
MAX_DEVICES = 256
_VERSION = r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}"


def probe(
    *, root: str | Path = PCI_DEVICES, dev: str | Path = "/dev", system: str | Path = "/"
) -> ProbeResult:
    """The "accelerators" facts: the devices hwcheck names without advice, and their software."""
    from hwcheck.base.errors import InputError
    from hwcheck.base.tables import load

    try:
        table = load("accelerators")
    except InputError as error:  # rules/knowledge/accelerators.toml broken: a broken install
        return ProbeResult(ERROR, reason=str(error))
    dev, system = plain_path(dev), plain_path(system)
    try:
        chosen = pci_devices(root, keep=lambda vendor, kind: _may_be_named(vendor, kind, table))
        found = [device for device in chosen if _is_named(device, table)][:MAX_DEVICES]
    except OSError as error:
        return ProbeResult(ERROR, reason=f"{root}: cannot read: {error.strerror or error}")
    devices = [_describe(device, table) for device in found]
    _name_from_pci_ids(devices)
    families = {device["family"] for device in devices if device.get("family")}
    if "neuron" not in families and _nodes(dev, "neuron"):
        # A container given /dev/neuron* but no PCI tree still has the devices.
        devices.append(
            {"vendor": "AWS Neuron", "name": "AWS Neuron device", "family": "neuron", "driver": None}
        )
        families.add("neuron")
    for device in devices:
        family = table["family"].get(device.get("family") or "")
        if family is not None:
            device["device_nodes"] = any(_nodes(dev, prefix) for prefix in family["device_nodes"])
    software = {name: _software(table["family"][name], system) for name in sorted(families)}
    facts = {"accelerators": {"devices": devices, "software": software}}
    if not devices:
        return ProbeResult(ABSENT, facts, reason="no accelerator beyond the GPUs and TPUs on the PCI bus")
    return ProbeResult(OK, facts)


def _may_be_named(vendor_id: str, device_class: str | None, table: dict[str, Any]) -> bool:
    """_is_named from the vendor and class alone (read first, so the rest is read only for these)."""
    if vendor_id in table["devices"]:
        return True
    return vendor_id not in vendors() and (device_class or "").startswith(PROCESSING_ACCELERATOR)


def _is_named(device: dict[str, Any], table: dict[str, Any]) -> bool:
    if device["device_id"] in table["devices"].get(device["vendor_id"], {}):
        return True
    # Any other processing accelerator, unless a GPU/TPU probe covers its vendor.
    return device["vendor_id"] not in vendors() and (device["class"] or "").startswith(PROCESSING_ACCELERATOR)


def _describe(device: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    row = table["devices"].get(device["vendor_id"], {}).get(device["device_id"])
    family = row["family"] if row else _family_of_vendor(device["vendor_id"], table)
    described: dict[str, Any] = {
        "address": device["address"],
        "vendor_id": device["vendor_id"],
        "device_id": device["device_id"],
        "class": device["class"],
        "driver": device["driver"],
        "vendor": table["family"][family]["vendor"] if family else None,
        "name": row["name"] if row else None,
    }
    if family:
        described["family"] = family
    return described


def _family_of_vendor(vendor_id: str, table: dict[str, Any]) -> str | None:
    # A processing accelerator of a listed vendor with an id the table lacks (a newer chip).
    # Huawei's class-0x12 devices include its HiSilicon compression engines: no family there.
    if vendor_id == "0x19e5":
        return None
    return next((name for name, row in table["family"].items() if row["vendor_id"] == vendor_id), None)


def _name_from_pci_ids(devices: list[dict[str, Any]]) -> None:
    """Fill in what the table left unnamed from the system's pci.ids; else the bare ids."""
    wanted: dict[str, set[str]] = {}
    for device in devices:
        if device.get("vendor") is None or device.get("name") is None:
            wanted.setdefault(device["vendor_id"], set()).add(device["device_id"])
    names = pci_names(wanted) if wanted else {}
    for device in devices:
        if device.get("vendor") is None:
            device["vendor"] = names.get((device["vendor_id"], None)) or f"PCI vendor {device['vendor_id']}"
        if device.get("name") is None:
            named = names.get((device["vendor_id"], device["device_id"]))
            device["name"] = (
                f"{device['vendor']} {named}" if named else f"{device['vendor']} device {device['device_id']}"
            )


def _nodes(dev: str, prefix: str) -> bool:
    """Whether /dev holds a node named `prefix` + a number ("neuron" -> /dev/neuron0)."""
    folder, _, stem = joined(dev, prefix).rpartition("/")
    try:
        return any(numbered(name, stem) for name in os.listdir(folder)) if stem else bool(os.listdir(folder))
    except OSError:
        return False


def _software(family: dict[str, Any], system: str) -> dict[str, Any]:
    """A family's plugin versions (package metadata), driver version and runtime versions."""
    from hwcheck.probes.site_packages import distributions

    installed = {dist.name: dist.version for dist in reversed(distributions())}
    plugins = {name: installed[name] for name in family["plugins"] if name in installed}
    software: dict[str, Any] = {"plugins": plugins}
    module = family["driver_module"]
    # A loaded module that declares MODULE_VERSION shows it in /sys/module/NAME/version.
    text = read_attribute(joined(system, "sys", "module", module, "version"), VERSION_BYTES)
    version = text.strip() if text else ""
    software["driver"] = version if re.fullmatch(_VERSION, version) else None
    software["driver_loaded"] = os.path.isdir(joined(system, "sys", "module", module))
    for entry in family.get("version_files", ()):
        if software.get(entry["what"]):
            continue
        value = _version_field(system, entry["glob"], entry["field"])
        software[entry["what"]] = value or software.get(entry["what"])
    return software


def _version_field(system: str, pattern: str, field: str) -> str | None:
    """The `field=VALUE` line of the first file matching `pattern` under `system`, bounded."""
    for path in matching_paths(system, pattern, limit=MAX_VERSION_FILES):
        text = read_attribute(path, 4096) or ""
        match = re.search(rf"(?m)^{re.escape(field)}\s*=\s*({_VERSION})\s*$", text)
        if match:
            return match.group(1)
    return None
