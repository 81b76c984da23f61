"""The doctor rows of the device plug-ins (each vendor's, drawn by its plug-in), and of the probes
most machines have nothing for: the architectures read from the frameworks' libraries and a
Jetson (Tegra).

A vendor's row is there where its plug-in has something to say (its devices, its runtime) or its
probe failed; the gpu row (the GPU probe's) says "no GPU" only where no plug-in sees one.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any

    from hwcheck.devices import Device


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


# The GPU probe's row: NVIDIA's, and where the GPUs of a vendor without a plug-in are listed.
GPU_ROW = "gpu"


def vendor_row(name: str, facts: dict[str, Any], status: dict[str, Any]) -> str | None:
    """The row `name` as its vendor's plug-in draws it ("" where it is not drawn); None for other rows."""
    from hwcheck import devices
    from hwcheck.devices.record import counted

    plugin = next((p for p in devices.PLUGINS if p.doctor_label == name and p.doctor_row is not None), None)
    if plugin is None or plugin.doctor_row is None:
        return None
    state = status.get("status")
    if state not in ("ok", "file", "absent"):
        return str(status.get("reason") or "")  # the probe failed: say why
    text = plugin.doctor_row(facts) if state != "absent" else ""
    if name != GPU_ROW:
        return text
    installed = devices.installed(facts)  # whatever hides them from the process
    text = "; ".join(part for part in (text, ", ".join(counted(unclaimed_gpus(facts, installed)))) if part)
    if text or any(device.kind == "gpu" for device in installed):
        return text
    if state == "absent":
        return str(status.get("reason") or "")
    return "no GPU" if "gpus" in facts else ""


def unclaimed_gpus(facts: dict[str, Any], installed: list[Device]) -> list[str]:
    """The names of the facts' GPUs whose vendor is no plug-in's nor any `installed` device's."""
    from hwcheck import devices

    claimed = {plugin.name for plugin in devices.PLUGINS} | {device.vendor for device in installed}
    return [
        str(gpu.get("name") or "GPU")
        for gpu in facts.get("gpus") or []
        if isinstance(gpu, dict) and gpu.get("vendor", "nvidia") not in claimed
    ]


def plugin_rows(facts: dict[str, Any], taken: Collection[str]) -> list[tuple[str, str]]:
    """Rows of the device plug-ins added by register that no other row (`taken`) speaks for.

    A built-in vendor's row is its probe's, drawn in the probes' order (vendor_row).
    """
    from hwcheck import devices
    from hwcheck.devices.record import counted

    rows = []
    for plugin in devices.PLUGINS:
        if plugin.name in devices.BUILT_IN or plugin.doctor_label in taken:
            continue
        if plugin.doctor_row is not None:
            text = plugin.doctor_row(facts)
        else:
            found = plugin.visible(facts, None)
            text = ", ".join(counted([device.label for device in found]))
        if text:
            rows.append((plugin.doctor_label or plugin.name, text))
    return rows
