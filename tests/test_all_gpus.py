"""gpus.*: every GPU the process will see, of any vendor, beside NVIDIA's gpu.* (engine/all_gpus.py).

The machines are the recorded replays of tests/fixtures/facts (README.md there names each source).
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from hwcheck.engine.all_gpus import variables
from hwcheck.engine.context import build_context
from hwcheck.recommendation import recommend


def replay(name: str) -> dict:
    return json.loads((FIXTURES / "facts" / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "count", "vendors", "memory", "unified", "bf16"),
    [
        ("mi300x-x8-torch251-rocm62.json", 8, ["amd"], 196608, False, True),
        ("a100-sxm4x4-tf216.json", 4, ["nvidia"], 81920, False, True),
        ("v100-driver-too-old.json", 1, ["nvidia"], 16384, False, False),
        # Metal computes in bfloat16 from macOS 14 (apple.toml); this Mac runs macOS 15.2.
        ("apple-m2max-macos152-tf217-metal110.json", 1, ["apple"], None, True, True),
        ("max1100-torch27-xpu.json", 1, ["intel"], 49152, False, True),
        ("jetson-orin-nx-jp62-torch260-cu126.json", 1, ["nvidia"], None, True, True),
        ("tpu-v5e-torch-xla-libtpu-mismatch.json", 0, [], None, False, False),
        ("meteor-lake-npu-torch-cpu.json", 0, [], None, False, False),
    ],
)
def test_every_vendors_gpus_are_counted(name, count, vendors, memory, unified, bf16):
    gpus = build_context(replay(name))["gpus"]
    assert (gpus["count"], gpus["vendors"], gpus["memory_mib_min"]) == (count, vendors, memory)
    assert (gpus["unified"], gpus["all_bf16"]) == (unified, bf16)
    assert gpus["memory_known"] is (memory is not None)


def test_the_summary_is_three_valued():
    known = {"vendor": "nvidia", "name": "a", "memory_mib": 16384, "bf16": True, "fp16": True, "fp8": False}
    unknown = {"vendor": "amd", "name": "b", "memory_mib": None, "bf16": None, "fp16": True, "fp8": None}
    lacking = {**known, "name": "c", "memory_mib": 8192, "bf16": False}
    both = variables([known, unknown])
    assert (both["all_bf16"], both["all_fp16"], both["all_fp8"]) == (None, True, False)
    summary = (both["memory_mib_min"], both["memory_known"], both["vendors"])
    assert summary == (16384, False, ["amd", "nvidia"])
    three = variables([known, unknown, lacking])
    assert (three["all_bf16"], three["memory_mib_min"], three["count"]) == (False, 8192, 3)
    assert variables([])["all_bf16"] is False


def test_a_site_rule_reads_gpus_on_an_amd_machine(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(
        '[[rule]]\nid = "site-gpus"\nwhen = "gpus.count == 8 && gpus.all_bf16 == true"\n'
        'message = "{gpus.count} GPUs from {gpus.vendors[0]}"\nseverity = "info"\n'
    )
    found = recommend(replay("mi300x-x8-torch251-rocm62.json"), rule_files=[site]).findings
    assert [finding.message for finding in found if finding.id == "site-gpus"] == ["8 GPUs from amd"]
