"""Each NVIDIA GPU's PCIe link, its IOMMU group and the bridges above it, read from sysfs.

The fallback beside NVML's view (probes/nvidia/node_nvml.py): the kernel's current_link_speed,
max_link_speed, current_link_width and max_link_width of the GPU's PCI device, the type of its
IOMMU group (DMA translated, or identity: passthrough), and for each bridge on its path whether
PCIe Access Control Services redirect peer-to-peer requests up to the root complex (the ACS
Control register in the extended configuration space, which only root can read).
"""

from __future__ import annotations

import os

from hwcheck.base.inputs import joined, read_head
from hwcheck.base.numbers import whole_or_none
from hwcheck.probes.sysfs import PCI_DEVICES, read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The driver's folder lists the PCI addresses it is bound to ("0000:41:00.0").
NVIDIA_DRIVER = "sys/bus/pci/drivers/nvidia"
DISPLAY_CLASS = "0x03"  # class 0x03xxxx: VGA or 3D controller
IOMMU_GROUPS = "sys/kernel/iommu_groups"
MAX_GPUS = 64
MAX_BRIDGES = 8
ATTRIBUTE_BYTES = 64
CONFIG_BYTES = 4096
EXTENDED_START = 0x100
ACS_CAPABILITY = 0x000D
ACS_CONTROL_OFFSET = 6
# ACS Control: P2P Request Redirect (bit 2) and P2P Completion Redirect (bit 3).
ACS_REDIRECT_BITS = 0x0C
MAX_CAPABILITIES = 64
# The transfer rate of each PCIe generation (PCI-SIG), as sysfs writes it.
GENERATIONS = {"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6}


def read(root: str, unread: dict[str, str]) -> dict[str, Any]:
    """{"iommu": ..., "pci_links": [...]} for the machine under `root`; what failed goes in `unread`."""
    found: dict[str, Any] = {}
    groups = joined(root, IOMMU_GROUPS)
    try:
        found["iommu"] = {"groups": len(os.listdir(groups))}
    except FileNotFoundError:
        found["iommu"] = {"groups": 0}  # no IOMMU groups: DMA remapping is off
    except OSError as error:
        unread["iommu"] = f"{groups}: {error.strerror or error}"
    folder = joined(root, PCI_DEVICES.lstrip("/"))
    bound = joined(root, NVIDIA_DRIVER)
    try:
        # The devices the NVIDIA driver claims, by address: no scan of the whole bus.
        names = sorted(name for name in os.listdir(bound) if _address(name))
    except FileNotFoundError:
        found["pci_links"] = []  # no device bound to the NVIDIA driver: no GPU to train on
        return found
    except OSError as error:
        unread["pci_links"] = f"{bound}: {error.strerror or error}"
        return found
    gpus = [name for name in names if _display(joined(folder, name))][:MAX_GPUS]
    found["pci_links"] = [_link(folder, address) for address in gpus]
    return found


def _address(name: str) -> bool:
    """A PCI address ("0000:41:00.0"), not one of the driver's own files (bind, module, ...)."""
    return name.count(":") == 2 and "." in name


def _display(device: str) -> bool:
    klass = read_attribute(joined(device, "class"), ATTRIBUTE_BYTES)
    return (klass or "").strip().startswith(DISPLAY_CLASS)


def generation(speed: str | None) -> int | None:
    """The PCIe generation of a sysfs link speed ("16.0 GT/s PCIe" -> 4); None when unknown."""
    words = (speed or "").split()
    return GENERATIONS.get(words[0]) if words else None


def _width(text: str | None) -> int | None:
    """A link width in lanes (1 to 32, ASCII digits: base/numbers); None when it is no such number."""
    value = whole_or_none((text or "").strip())
    return value if value is not None and 0 < value <= 32 else None


def _link(folder: str, address: str) -> dict[str, Any]:
    device = joined(folder, address)
    attribute = lambda name: read_attribute(joined(device, name), ATTRIBUTE_BYTES)  # noqa: E731
    link: dict[str, Any] = {
        "address": address,
        "current_gen": generation(attribute("current_link_speed")),
        "max_gen": generation(attribute("max_link_speed")),
        "current_width": _width(attribute("current_link_width")),
        "max_width": _width(attribute("max_link_width")),
    }
    group_type = read_attribute(joined(device, "iommu_group", "type"), ATTRIBUTE_BYTES)
    link["iommu_type"] = group_type.strip() if group_type else None
    link["bridges"] = [_bridge(folder, bridge) for bridge in _bridges(device)]
    return link


def _bridges(device: str) -> list[str]:
    """The PCI addresses above a device, the nearest first (from the real path of its folder)."""
    parts = os.path.realpath(device).split(os.sep)
    addresses = [part for part in parts[:-1] if part.count(":") == 2 and "." in part]
    return list(reversed(addresses))[:MAX_BRIDGES]


def _bridge(folder: str, address: str) -> dict[str, Any]:
    return {"address": address, "acs_redirect": acs_redirect(joined(folder, address, "config"))}


def acs_redirect(config: str) -> bool | None:
    """Whether the device's ACS Control redirects peer-to-peer traffic; False without an ACS
    capability; None when the extended configuration space cannot be read (not root)."""
    try:
        space = read_head(config, CONFIG_BYTES)
    except OSError:
        return None
    return acs_redirect_in(space)


def acs_redirect_in(space: bytes) -> bool | None:
    """acs_redirect over the bytes of a configuration space (None: the extended part is missing)."""
    if len(space) < EXTENDED_START + 4:
        return None
    offset, seen = EXTENDED_START, 0
    while offset and offset + 8 <= len(space) and seen < MAX_CAPABILITIES:
        header = int.from_bytes(space[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return False
        if header & 0xFFFF == ACS_CAPABILITY:
            control = int.from_bytes(
                space[offset + ACS_CONTROL_OFFSET : offset + ACS_CONTROL_OFFSET + 2], "little"
            )
            return bool(control & ACS_REDIRECT_BITS)
        following = header >> 20
        offset = following if following >= EXTENDED_START else 0
        seen += 1
    return False
