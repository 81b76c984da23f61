"""Intel GPU families by PCI device id, their XMX engines, PyTorch's XPU: rules/knowledge/intel.toml."""

from __future__ import annotations

import re
from functools import cache

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Windows and the drivers' device lists say "Intel(R) Arc(TM) B580 Graphics" for "Intel Arc B580".
_NAME_NOISE = re.compile(r"\((?:R|TM|r|tm)\)|\bgraphics\b", re.IGNORECASE)


@cache
def _by_device_id() -> dict[str, dict[str, Any]]:
    return {device_id: family for family in load("intel")["family"] for device_id in family["pci_device_ids"]}


@cache
def _by_model_name() -> dict[str, dict[str, Any]]:
    families = _by_device_id()
    return {_plain(name): families[device_id] for device_id, name in load("intel")["models"].items()}


def _plain(name: str) -> str:
    return " ".join(_NAME_NOISE.sub(" ", name).lower().split())


def intel_family_by_name(name: str | None) -> dict[str, Any] | None:
    """The family of an Intel GPU named as a driver prints it ("Intel(R) Arc(TM) A770 Graphics")."""
    if not isinstance(name, str):
        return None
    row = _by_model_name().get(_plain(name))
    return dict(row) if row else None


def intel_family(pci_device_id: str | None) -> dict[str, Any] | None:
    """The family row of an Intel GPU's PCI device id ("0x56a0"); None when the table lacks it."""
    if not isinstance(pci_device_id, str):
        return None
    row = _by_device_id().get(pci_device_id.strip().lower())
    return dict(row) if row else None


def intel_torch() -> dict[str, Any]:
    """PyTorch's native XPU support: the first release with it and the install command."""
    return dict(load("intel")["torch"])


def intel_ipex() -> dict[str, Any]:
    """What intel-extension-for-pytorch adds, and how its XPU builds are versioned."""
    return dict(load("intel")["ipex"])
