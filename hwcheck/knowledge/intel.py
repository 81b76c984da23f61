"""Intel GPU families by PCI device id, their XMX engines, PyTorch's XPU: rules/knowledge/intel.toml."""

from __future__ import annotations

import re
from functools import cache

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Windows and the drivers' device lists say "Intel(R) Arc(TM) B580 Graphics" for "Intel Arc B580",
# and "Intel(R) Arc(TM) 140V GPU (16GB)" for the Lunar Lake GPU pci.ids calls "Intel Arc 130V/140V
# (Core Ultra 200V)": marks, "Graphics", "GPU" and a part in brackets (the memory, the CPU) say
# nothing of the model, and a table name "A/B" names both.
_NAME_NOISE = re.compile(r"\((?:R|TM)\)|\bgraphics\b|\bgpu\b", re.IGNORECASE)
_BRACKETED = re.compile(r"\([^()]*\)")


@cache
def _by_device_id() -> dict[str, dict[str, Any]]:
    return {device_id: family for family in load("intel")["family"] for device_id in family["pci_device_ids"]}


@cache
def _by_model_name() -> dict[str, dict[str, Any]]:
    families = _by_device_id()
    found = {}
    for device_id, name in load("intel")["models"].items():
        found[_plain(name)] = families[device_id]
        # A table name's bracketed part goes only where a model number is left ("Intel Arc
        # 130V/140V (Core Ultra 200V)"): "Intel Arc Graphics (Meteor Lake)" is no "Intel Arc".
        words = _plain(_BRACKETED.sub(" ", name)).split()
        if not any(char.isdigit() for char in "".join(words)):
            continue
        found[" ".join(words)] = families[device_id]
        # "intel arc 130v/140v": one name for each alternative of the word that holds a "/".
        for at, word in enumerate(words):
            for choice in word.split("/") if "/" in word else ():
                found[" ".join([*words[:at], choice, *words[at + 1 :]])] = families[device_id]
    return found


def _plain(name: str) -> str:
    return " ".join(_NAME_NOISE.sub(" ", name).lower().split())


def intel_family_by_name(name: str | None) -> dict[str, Any] | None:
    """The family of an Intel GPU named as a driver prints it ("Intel(R) Arc(TM) A770 Graphics")."""
    if not isinstance(name, str):
        return None
    row = _by_model_name().get(_plain(name)) or _by_model_name().get(_plain(_BRACKETED.sub(" ", name)))
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
