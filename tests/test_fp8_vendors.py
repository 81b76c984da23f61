"""FP8 and bfloat16 for every vendor: doctor's FP8 line on AMD GPUs, and nfd's precision labels.

The machines are replays: 8x MI300X (gfx942, ROCm 6.2, torch 2.5.1+rocm6.2), the same node
given MI250X (gfx90a: bfloat16, no FP8) and Radeon AI PRO R9700 (gfx1201: FP8 WMMA, but
Transformer Engine for ROCm refuses it, ROCm/TransformerEngine#359) boards by name and target
as AMD's GPU specifications list them, a Data Center GPU Max 1100 (bfloat16, no FP8 type in
its XMX engines) and a Gaudi 2 (FP8 training through Intel Gaudi's Transformer Engine).
"""

from __future__ import annotations

import copy
import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.tables import load
from hwcheck.recommendation import recommend

FACTS = FIXTURES / "facts"
MI300X = FACTS / "mi300x-x8-torch251-rocm62.json"
GAUDI2 = FACTS / "gaudi2-plugin1170-torch222-driver-unread.json"
MAX1100 = FACTS / "max1100-torch27-xpu.json"


def _boards(name: str, arch: str) -> dict:
    """The MI300X node with eight other AMD boards, given by name and gfx target."""
    facts = copy.deepcopy(json.loads(MI300X.read_text()))
    facts["gpus"] = [{"index": i, "vendor": "amd", "name": name, "arch": arch} for i in range(8)]
    return facts


def _labels(facts_file) -> dict[str, str]:
    result = run_hwcheck("nfd", "--facts", str(facts_file), "--output", "-")
    assert result.returncode == 0, result.stderr
    prefix = "feature.node.kubernetes.io/hwcheck-"
    return dict(
        line.removeprefix(prefix).split("=", 1)
        for line in result.stdout.splitlines()
        if line.startswith(prefix)
    )


def test_doctor_shows_the_fp8_line_on_the_mi300x():
    text = run_hwcheck("doctor", "--facts", str(MI300X), env={"COLUMNS": "80"})
    assert text.returncode == 0
    assert "fp8  FP8 training available: every AMD GPU has FP8 matrix cores" in text.stdout
    assert "Transformer Engine for ROCm" in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    fp8 = json.loads(run_hwcheck("doctor", "--json", "--facts", str(MI300X)).stdout)["recommendation"]["fp8"]
    assert fp8["available"] is True and "gfx942" in fp8["reason"]
    assert fp8["recipes"] == {}  # the NVIDIA recipes table does not describe ROCm


@pytest.mark.parametrize(
    ("name", "arch", "reason"),
    [
        (
            "AMD Instinct MI250X",
            "gfx90a",
            "FP8 matrix cores come with the Instinct MI300 series (CDNA 3) and RDNA 4",
        ),
        ("AMD Radeon AI PRO R9700", "gfx1201", "Transformer Engine for ROCm runs FP8 on gfx942, gfx950 only"),
    ],
)
def test_amd_gpus_without_fp8_training_say_why(name, arch, reason):
    fp8 = recommend(_boards(name, arch), framework="torch").fp8
    assert fp8["available"] is False and fp8["reason"].startswith(reason)
    assert fp8["recipe"] == ""


def test_fp8_on_the_mi300x_is_pytorchs_and_config_writes_transformer_engine_only():
    fp8 = recommend(json.loads(MI300X.read_text()), framework="jax").fp8
    assert fp8["available"] is False and "for PyTorch, not JAX" in fp8["reason"]
    refused = run_hwcheck(
        "config", "--facts", str(MI300X), "--framework", "torch", "--fp8", "torchao", "-o", "-"
    )
    assert refused.returncode == 2 and "Transformer Engine for ROCm" in refused.stderr


def test_every_amd_fp8_training_target_has_fp8_matrix_cores():
    rows = {row["target"]: row for row in load("amd")["gfx"]}
    table = load("amd")["fp8_training"]
    assert table["source"].startswith("https://")
    for target in table["targets"]:
        assert "float8" in rows[target]["fast"], target


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (MI300X, {"gpu.bf16": "true", "gpu.fp8": "true"}),
        (MAX1100, {"gpu.bf16": "true", "gpu.fp8": "false"}),
        (GAUDI2, {"accelerator.bf16": "true", "accelerator.fp8": "true", "accelerator.count": "1"}),
    ],
)
def test_nfd_labels_bfloat16_and_fp8_for_every_vendor(facts, expected):
    labels = _labels(facts)
    assert {name: labels.get(name) for name in expected} == expected


def test_the_mi250x_runs_bfloat16_but_not_fp8_in_the_labels(tmp_path):
    replay = tmp_path / "mi250x.json"
    replay.write_text(json.dumps(_boards("AMD Instinct MI250X", "gfx90a")))
    labels = _labels(replay)
    assert (labels["gpu.bf16"], labels["gpu.fp8"]) == ("true", "false")


def test_an_unknown_precision_writes_no_label(tmp_path):
    # A Gaudi whose product the table does not list: FP8 unknown, so no fp8 label at all.
    facts = json.loads(GAUDI2.read_text())
    facts["accelerators"]["devices"][0]["device_id"] = "0x1000"  # first-generation Gaudi
    replay = tmp_path / "gaudi.json"
    replay.write_text(json.dumps(facts))
    labels = _labels(replay)
    assert labels["accelerator.bf16"] == "true" and "accelerator.fp8" not in labels
