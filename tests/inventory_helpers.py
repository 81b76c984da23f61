"""Reports for the inventory tests and benchmark, built from real-machine profiles.

Each profile in fixtures/reports/profiles.json names where its values come from; its CPU is
a real /proc/cpuinfo dump parsed by the cpu probe, and its recommendation comes from the
real rules engine. Only host, time and the odd version vary between generated reports.
"""

from __future__ import annotations

import copy
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from hwcheck.probes import PROBE_NAMES
from hwcheck.probes.cpu import load_cpuinfo
from hwcheck.recommendation import recommend
from hwcheck.render.report import build_report

FIXTURES = Path(__file__).parent / "fixtures"
PROFILES_FILE = FIXTURES / "reports" / "profiles.json"
DEFAULT_TIME = "2026-05-01T12:00:00+00:00"


@cache
def profiles() -> dict[str, dict[str, Any]]:
    """The profiles by name."""
    document = json.loads(PROFILES_FILE.read_text(encoding="utf-8"))
    return {profile["name"]: profile for profile in document["profiles"]}


def profile_facts(name: str) -> dict[str, Any]:
    """A facts document for profile `name` (a fresh copy)."""
    return copy.deepcopy(_facts(name))


@cache
def _facts(name: str) -> dict[str, Any]:
    profile = profiles()[name]
    facts: dict[str, Any] = {
        "schema_version": 1,
        "os": {"system": "Linux", "release": "5.15.0-105-generic", "machine": "x86_64"},
        "python": {"version": "3.11.7", "implementation": "CPython"},
        "cpu": load_cpuinfo(FIXTURES / "cpuinfo" / profile["cpuinfo"]),
        "gpus": [],
        "tpu": {"present": False},
        "frameworks": {"tensorflow": profile["tensorflow"], "keras": {"version": "3.3.3"}},
    }
    gpu = profile.get("gpu")
    if gpu:
        described = {k: v for k, v in gpu.items() if k not in ("count", "pci_device_id")}
        # Bus ids and UUIDs are placeholders shaped like NVML's; the rest is the capture's.
        buses = [f"00000000:{0x18 + 0x10 * i:02x}:00.0" for i in range(gpu["count"])]
        facts["gpus"] = [
            {
                "index": i,
                "vendor": "nvidia",
                **described,
                "pci_bus_id": bus,
                "uuid": f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, f'{name}-{i}')}",
            }
            for i, bus in enumerate(buses)
        ]
        facts["pci"] = {
            "devices": [
                {
                    "address": bus[4:],
                    "vendor": "nvidia",
                    "vendor_id": "0x10de",
                    "device_id": gpu["pci_device_id"],
                    "driver": "nvidia",
                    "device_nodes": True,
                }
                for bus in buses
            ]
        }
    for section in ("nvidia_driver", "cuda", "cudnn"):
        if section in profile:
            facts[section] = profile[section]
    return facts


@cache
def _base_report(name: str, driver: tuple[str, str] | None) -> dict[str, Any]:
    facts = _facts(name)
    if driver and "nvidia_driver" in facts:
        facts = {**facts, "nvidia_driver": {"version": driver[0], "cuda": driver[1]}}
    probes = {
        probe: {"status": "file", "reason": f"profile {name}", "seconds": None} for probe in PROBE_NAMES
    }
    return build_report(facts, probes, recommend(facts, probes=probes, framework="tensorflow"), stamped=True)


def make_report(
    name: str,
    host: str | None,
    time: str | None = DEFAULT_TIME,
    *,
    driver: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A stamped report of profile `name` for `host` at `time` (None leaves the field out).

    `driver` (version, CUDA) replaces a GPU profile's NVIDIA driver; the recommendation
    is the engine's for the changed facts.
    """
    report = copy.deepcopy(_base_report(name, driver))
    for key, value in (("host", host), ("time", time)):
        if value is None:
            report.pop(key, None)
        else:
            report[key] = value
    return report


def write_report(directory: Path, file_name: str, report: dict[str, Any]) -> Path:
    """Write `report` as JSON to directory/file_name and return the path."""
    path = directory / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return path
