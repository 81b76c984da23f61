"""The doctor rows of the probes most machines have nothing for: other accelerators, the
architectures read from the frameworks' libraries, a Jetson (Tegra), and vendors added as
device plug-ins (hwcheck.devices.register)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any


def _count_same(items: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return [f"{count}× {item}" if count > 1 else item for item, count in counts.items()]


def accelerators(facts: dict[str, Any]) -> str:
    """The accel row: the devices hwcheck names without advice, their plugins and drivers."""
    found = facts.get("accelerators") or {}
    software = found.get("software") or {}
    described = []
    for device in found.get("devices") or []:
        if not isinstance(device, dict):
            continue
        driver = device.get("driver")
        described.append(f"{device.get('name')} (driver {driver or 'none'})")
    versions = []
    for family in software.values():
        if not isinstance(family, dict):
            continue
        plugins = family.get("plugins") or {}
        versions += [f"{name} {version or '(version unknown)'}" for name, version in plugins.items()]
        if family.get("driver"):
            versions.append(f"driver {family['driver']}")
        if family.get("cann"):
            versions.append(f"CANN {family['cann']}")
    return ", ".join(_count_same(described)) + ("; " + ", ".join(versions) if versions else "")


def arches(facts: dict[str, Any]) -> str:
    """The arches row: each framework's architectures read from its libraries."""
    found = facts.get("compiled_arches") or {}
    parts = []
    for framework, read in found.items():
        if isinstance(read, dict):
            arches = [*(read.get("sm") or []), *(read.get("ptx") or [])]
            cut = "" if read.get("complete") else " (incomplete)"
            parts.append(f"{framework}: {' '.join(map(str, arches))}{cut}")
    return "; ".join(parts)


def tegra(facts: dict[str, Any]) -> str:
    """The tegra row: the Jetson, its compute capability, L4T release and GPU driver."""
    tegra = facts.get("tegra") or {}
    parts = [str(tegra.get("family") or tegra.get("soc") or "Jetson")]
    if tegra.get("compute_capability"):
        parts.append(f"CC {tegra['compute_capability']}")
    parts.append(f"L4T {tegra['l4t']}" if tegra.get("l4t") else "L4T release unknown")
    if tegra.get("gpu_driver"):
        parts.append(f"driver {tegra['gpu_driver']}")
    return ", ".join(parts)


def plugin_rows(facts: dict[str, Any], taken: Collection[str]) -> list[tuple[str, str]]:
    """Rows of the registered device plug-ins no other row (`taken`) speaks for (a vendor added by register).

    A plug-in is registered through hwcheck.devices, so where that was never imported there is
    none beyond the built-in ones, whose probes have rows: doctor imports nothing more for them.
    """
    import sys

    devices = sys.modules.get("hwcheck.devices")
    if devices is None:
        return []
    rows = []
    for plugin in devices.PLUGINS:
        if plugin.doctor_label in taken:
            continue
        if plugin.doctor_row is not None:
            text = plugin.doctor_row(facts)
        else:
            found = plugin.visible(facts, None)
            text = ", ".join(_count_same([device.label for device in found]))
        if text:
            rows.append((plugin.doctor_label or plugin.name, text))
    return rows


def claimed_vendors(facts: dict[str, Any], taken: Collection[str]) -> set[str]:
    """The vendors whose devices a registered plug-in's own row lists."""
    import sys

    devices = sys.modules.get("hwcheck.devices")
    if devices is None:
        return set()
    return {
        device.vendor
        for plugin in devices.PLUGINS
        if plugin.doctor_label not in taken
        for device in plugin.visible(facts, None)
    }
