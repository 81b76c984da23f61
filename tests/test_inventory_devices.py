"""Inventory classes nodes by their devices (hwcheck.devices.installed): any vendor's, installed
rather than left visible to the process that wrote the report.

The machines are the recorded replays of tests/fixtures/facts (README.md there names each
source). The Jetson Orin NX comes in 8 GB and 16 GB of memory (NVIDIA Jetson Orin NX Series
datasheet, https://developer.nvidia.com/embedded/jetson-modules: "Jetson Orin NX 16GB",
"Jetson Orin NX 8GB"): its facts here are given those totals, not recordings.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from hwcheck.inventory.classes import GpuGroup, hardware_class


def replay(name: str) -> dict:
    return json.loads((FIXTURES / "facts" / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "groups", "text"),
    [
        (
            "mi300x-x8-torch251-rocm62.json",
            (GpuGroup("AMD Instinct MI300X", 8, arch="gfx942"),),
            "8× AMD Instinct MI300X (gfx942)",
        ),
        ("apple-m2max-macos152-tf217-metal110.json", (GpuGroup("Apple M2 Max", 1),), "1× Apple M2 Max"),
        # The Jetson's GPU is the SoC's: NVML lists none, the NVIDIA plug-in adds it.
        ("jetson-orin-nx-jp62-torch260-cu126.json", (GpuGroup("Orin (nvgpu)", 1),), "1× Orin (nvgpu)"),
        (
            "max1100-torch27-xpu.json",
            (GpuGroup("Intel(R) Data Center GPU Max 1100", 1),),
            "1× Intel(R) Data Center GPU Max 1100",
        ),
        ("tpu-v5e-torch-xla-libtpu-mismatch.json", (), "no GPU"),
    ],
)
def test_each_vendors_gpus_class_the_node(name, groups, text):
    found = hardware_class(replay(name))
    assert (found.gpus, found.gpu_text()) == (groups, text)


def test_a_class_is_what_is_installed_whatever_hides_it():
    facts = replay("mi300x-x8-torch251-rocm62.json")
    hidden = {**facts, "environment": {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": ""}}
    assert hardware_class(hidden) == hardware_class(facts)


def test_unified_memory_tells_two_jetsons_of_one_name_apart():
    facts = replay("jetson-orin-nx-jp62-torch260-cu126.json")
    small = hardware_class({**facts, "memory": {"total_bytes": 8 * 2**30}})
    large = hardware_class({**facts, "memory": {"total_bytes": 16 * 2**30}})
    assert small != large
    assert (small.gpu_text(), large.gpu_text()) == (
        "1× Orin (nvgpu) (8 GiB unified)",
        "1× Orin (nvgpu) (16 GiB unified)",
    )
    assert large.to_dict()["gpus"] == [
        {"name": "Orin (nvgpu)", "count": 1, "mig": False, "unified_memory_gib": 16}
    ]
