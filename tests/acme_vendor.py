"""A made-up vendor's device plug-in, kept in the tests folder: what a new vendor writes.

Acme's probe (not written: the facts are given) records its chips under the facts' own `acme`
section; ACME_VISIBLE_DEVICES (indices) picks the ones a process sees. The knowledge table is
tests/fixtures/acme/acme.toml. Nothing in hwcheck/ names Acme: registering PLUGIN is all.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from hwcheck.devices import Asked, Device, Plugin

TABLE = Path(__file__).parent / "fixtures" / "acme" / "acme.toml"


def chips() -> dict[str, dict[str, Any]]:
    """The knowledge table's rows by PCI device id."""
    return {row["device_id"]: row for row in tomllib.loads(TABLE.read_text(encoding="utf-8"))["chip"]}


def installed(facts: dict[str, Any]) -> list[dict[str, Any]]:
    found = facts.get("acme")
    listed = found.get("devices") if isinstance(found, dict) else None
    return [device for device in listed or [] if isinstance(device, dict)]


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    physical = installed(facts)
    chosen = (facts.get("environment") or {}).get("ACME_VISIBLE_DEVICES")
    if isinstance(chosen, str):
        wanted = [int(part) for part in chosen.split(",") if part.strip().isdigit()]
        physical = [physical[number] for number in wanted if number < len(physical)]
    table = chips()
    devices = []
    for number, device in enumerate(physical):
        row = table.get(str(device.get("device_id")), {})
        devices.append(
            Device(
                vendor="acme",
                plugin="acme",
                number=number,
                name=row.get("name", "Acme accelerator"),
                label=f"{row.get('name', 'Acme accelerator')} ({row.get('architecture', '?')})",
                memory_bytes=row["memory_mib"] * 2**20 if "memory_mib" in row else None,
                architecture=row.get("architecture"),
                family=row.get("family"),
                runtime="acme",
                float16=row.get("float16"),
                bfloat16=row.get("bfloat16"),
                tf32=False,
                fp8=row.get("fp8"),
                product_id=device.get("device_id"),
            )
        )
    return devices


def variables(asked: Asked) -> dict[str, Any]:
    found = visible(asked.facts, asked.backend)
    return {"acme": {"count": len(found), "bf16": bool(found) and all(d.bfloat16 for d in found)}}


def doctor_row(facts: dict[str, Any]) -> str:
    found = visible(facts)
    if not found:
        return ""
    return f"{len(found)}x {found[0].label}, {found[0].memory_bytes // 2**30} GiB each"


PLUGIN = Plugin(name="acme", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="acme")
