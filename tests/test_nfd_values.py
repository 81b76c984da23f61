"""nfd labels from any facts: never a traceback, never an empty value, ASCII digits only.

The GPUs labelled are those the advice was made for (inventory/nfd.seen_gpus): a Jetson's
integrated GPU and the GPUs `doctor --verify` observed where the probes found none included.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.inventory.nfd import label_value

FACTS = FIXTURES / "facts"


def labels(path) -> dict[str, str]:
    result = run_hwcheck("nfd", "--facts", str(path), "-o", "-")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    return dict(line.split("/hwcheck-", 1)[1].split("=", 1) for line in lines)


@pytest.mark.parametrize(
    ("fixture", "model"),
    [
        ("h100-unprobed-torch-verified.json", "NVIDIA-H100-80GB-HBM3"),  # GPUs torch listed, none probed
        ("jetson-orin-nx-jp62-torch260-cu126.json", "Orin-nvgpu"),  # the integrated GPU
    ],
)
def test_gpus_the_advice_was_made_for_are_labelled(fixture, model):
    found = labels(FACTS / fixture)
    assert found["gpu.count"] == "1" and found["gpu.product"] == model
    assert all(found.values())


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        ("580.159.04", {"cuda.driver.major": "580", "cuda.driver.minor": "159", "cuda.driver.rev": "04"}),
        ("５８０.１５９.０４", {}),  # fullwidth digits: no driver release a label may carry
        ("580.١٥٩", {}),  # Arabic-Indic digits
    ],
    ids=["ascii", "fullwidth", "arabic-indic"],
)
def test_driver_labels_take_ascii_digits_only_and_no_value_is_empty(tmp_path, driver, expected):
    facts = json.loads((FACTS / "h100-anchor-torch211.json").read_text())
    facts["nvidia_driver"]["version"] = driver
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts, ensure_ascii=False), encoding="utf-8")
    found = labels(path)
    assert {k: v for k, v in found.items() if k.startswith("cuda.driver")} == expected
    assert all(value and value.isascii() for value in found.values())


@pytest.mark.parametrize("text", ["", "---", "（）", "５８０", "\u202e", "." * 100])
def test_a_value_with_nothing_left_is_unknown_never_empty(text):
    assert label_value(text) == "unknown"


def test_a_value_keeps_what_it_can():
    assert label_value("v5litepod-８") == "v5litepod"
    assert label_value("x" * 100) == "x" * 63
