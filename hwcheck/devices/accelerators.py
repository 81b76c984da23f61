"""The `accelerators` variables: devices hwcheck names but has no precision advice for.

Lookups in rules/knowledge/accelerators.toml (families, documented training precision,
Intel Gaudi's support matrix) happen here; rules/policy/accelerators.toml decides what to say.
"""

from __future__ import annotations

from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version
from hwcheck.devices.record import Asked, Device, Plugin, counted
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def accelerator_variables(facts: dict[str, Any]) -> dict[str, Any]:
    """The `accelerators` namespace (every key present; unknown values empty)."""
    found = section(facts, "accelerators")
    devices = [d for d in found.get("devices") or [] if isinstance(d, dict)]
    software = section(found, "software")
    table = load("accelerators")
    families = table["family"]
    known = [d for d in devices if d.get("family") in families]
    other = [d for d in devices if d.get("family") not in families]
    described = [_family_text(name, known, families[name], section(software, name)) for name in _order(known)]
    gaudi = section(software, "gaudi")
    plugins = section(gaudi, "plugins")
    mismatch, torch_mismatch, matrix_source = _gaudi_pairing(gaudi, facts, table)
    return {
        "count": len(devices),
        "names": sorted({_name(d) for d in devices}),
        "label": _counted([_name(d) for d in devices]),
        "known_label": _counted([_name(d) for d in known]),
        "families": sorted({str(d["family"]) for d in known}),
        "described": "; ".join(described),
        "other": _counted([f"{_name(d)} (PCI {d.get('vendor_id')}:{d.get('device_id')})" for d in other]),
        # Families whose plugin is installed but whose kernel driver is known not to be loaded.
        "driver_missing": _counted(
            [
                f"{families[name]['vendor']} ({families[name]['driver_module']})"
                for name in _order(known)
                if section(software, name).get("driver_loaded") is False
                and section(section(software, name), "plugins")
            ]
        ),
        "checks": ", ".join(dict.fromkeys(families[name]["check"] for name in _order(known))),
        "gaudi_plugin_mismatch": mismatch,
        "gaudi_torch_mismatch": torch_mismatch,
        "gaudi_matrix_source": matrix_source,
        # Looked for and not there: the probe lists the plugins it found (an empty map is absence).
        "gaudi_torch_plugin_absent": "plugins" in gaudi and "habana-torch-plugin" not in plugins,
        "ascend_torch_mismatch": _ascend_pairing(section(software, "ascend"), facts),
        "gaudi_driver_unknown": bool(section(gaudi, "plugins").get("habana-torch-plugin"))
        and not gaudi.get("driver"),
    }


def _order(devices: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(d["family"]) for d in devices))


def _name(device: dict[str, Any]) -> str:
    return str(device.get("name") or f"PCI device {device.get('vendor_id')}:{device.get('device_id')}")


def _counted(names: list[str]) -> str:
    return ", ".join(counted(names))


def _family_text(
    name: str, devices: list[dict[str, Any]], family: dict[str, Any], software: dict[str, Any]
) -> str:
    """One family in one clause: its devices, documented precision, plugin and driver versions."""
    mine = [_name(d) for d in devices if d.get("family") == name]
    parts = []
    if family.get("native_precision"):
        precision, source = family["native_precision"], family["native_precision_source"]
        parts.append(f"{family['vendor']} documents {precision} for training ({source})")
    plugins = section(software, "plugins")
    installed = [f"{package} {version or '(version unknown)'}" for package, version in plugins.items()]
    known = ", ".join(family["plugins"]) or "none known"
    parts.append(
        ", ".join(installed) if installed else f"no {family['vendor']} framework plugin installed ({known})"
    )
    driver = software.get("driver")
    module = family["driver_module"]
    if driver:
        parts.append(f"driver {module} {driver}")
    elif software.get("driver_loaded"):
        parts.append(f"driver {module} loaded, version unknown")
    else:
        parts.append(f"driver {module} not loaded")
    if software.get("cann"):
        parts.append(f"CANN {software['cann']}")
    return f"{_counted(mine)}: {', '.join(parts)}"


def _gaudi_pairing(
    gaudi: dict[str, Any], facts: dict[str, Any], table: dict[str, Any]
) -> tuple[str, str, str]:
    """Intel Gaudi's plugin against its driver (the same release, X.Y.Z) and against PyTorch (the matrix)."""
    plugin = section(gaudi, "plugins").get("habana-torch-plugin")
    if not isinstance(plugin, str):
        return "", "", ""
    release = major_minor(plugin)
    row = next((r for r in table.get("gaudi_release", ()) if r["release"] == release), None)
    driver = gaudi.get("driver")
    mismatch = ""
    if (
        isinstance(driver, str)
        and _release(driver)
        and _release(plugin)
        and _release(driver) != _release(plugin)
    ):
        mismatch = (
            f"habana-torch-plugin {plugin} is Intel Gaudi software {_release(plugin)}, "
            f"but the habanalabs driver is {driver} (software {_release(driver)})"
        )
    torch = section(section(facts, "frameworks"), "torch").get("version")
    torch_mismatch = ""
    if (
        row
        and isinstance(torch, str)
        and major_minor(torch)
        and major_minor(torch) != major_minor(row["torch"])
    ):
        torch_mismatch = (
            f"habana-torch-plugin {plugin} (Intel Gaudi software {release}) is built for "
            f"PyTorch {row['torch']}, and PyTorch {torch} is installed"
        )
    return mismatch, torch_mismatch, row["source"] if row else ""


def _ascend_pairing(ascend: dict[str, Any], facts: dict[str, Any]) -> str:
    """torch-npu X.Y.Z[.postN|rcN] is built for PyTorch X.Y.Z (Ascend/pytorch's naming convention)."""
    npu = section(ascend, "plugins").get("torch-npu")
    torch = section(section(facts, "frameworks"), "torch").get("version")
    if not isinstance(npu, str) or not isinstance(torch, str) or not _release(npu) or not _release(torch):
        return ""
    if _release(npu) == _release(torch):
        return ""
    return f"torch-npu {npu} is built for PyTorch {_release(npu)}, and PyTorch {torch} is installed"


def _release(version: str) -> str:
    """The Gaudi software release of a plugin or driver version: 1.16.0.526 and 1.16.0-526 are 1.16.0."""
    parsed = parse_version(version)
    return ".".join(str(part) for part in parsed[:3]) if parsed and len(parsed) >= 3 else ""


def variables(asked: Asked) -> dict[str, Any]:
    """The `accelerators` namespace."""
    return {"accelerators": accelerator_variables(asked.facts)}


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The named accelerators (Gaudi, Ascend, Trainium, ...) of a family the table knows."""
    table = load("accelerators")
    families = table["family"]
    found = [d for d in section(facts, "accelerators").get("devices") or [] if isinstance(d, dict)]
    known = [d for d in found if d.get("family") in families]
    return [
        Device(
            vendor=str(device["family"]),
            plugin="accelerators",
            number=number,
            name=str(device.get("name") or families[device["family"]]["vendor"]),
            label=str(device.get("name") or families[device["family"]]["vendor"]),
            memory_bytes=None,
            family=str(device["family"]),
            runtime=str(device["family"]),
            # The vendor's documented training precision (the table's native_precision and its source).
            bfloat16=True if families[device["family"]].get("native_precision") == "bfloat16" else None,
            fp8=_product(table, device).get("fp8"),
            tf32=False,
            kind="accelerator",
        )
        for number, device in enumerate(known)
    ]


def _product(table: dict[str, Any], device: dict[str, Any]) -> dict[str, Any]:
    """The table's row for the device's PCI ids (name, family, fp8 where documented), or {}."""
    vendor = str(device.get("vendor_id") or "").lower()
    product = str(device.get("device_id") or "").lower()
    row = (table.get("devices") or {}).get(vendor, {}).get(product)
    return row if isinstance(row, dict) else {}


def doctor_row(facts: dict[str, Any]) -> str:
    """The accel row: the devices hwcheck names without advice, their plugins and drivers."""
    found = section(facts, "accelerators")
    software = section(found, "software")
    described = []
    for device in found.get("devices") or []:
        if isinstance(device, dict):
            described.append(f"{device.get('name')} (driver {device.get('driver') or 'none'})")
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
    return _counted(described) + ("; " + ", ".join(versions) if versions else "")


PLUGIN = Plugin(
    name="accelerators", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="accel"
)
