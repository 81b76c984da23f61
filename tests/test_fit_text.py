"""fit's text output within 80 columns for --params and --model plans on recorded machines of
every vendor (tests/fixtures/facts/), and the runtime's context named by the device's runtime."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from hwcheck.cli import main

FACTS = FIXTURES / "facts"
MODELS = FIXTURES / "models"
# Recorded machines (tests/fixtures/facts/README.md says where each was recorded): NVIDIA one and
# several GPUs, a MIG-less data centre pair behind a cgroup, AMD, Intel, Apple, a Jetson, a CPU.
MACHINES = (
    "h100-anchor-torch211.json",
    "a100-sxm4x2-driver555-torch231.json",
    "rtx3090x2-driver560-no-p2p-cgroup-half-cpu.json",
    "mi300x-x8-torch251-rocm62.json",
    "max1100-torch27-xpu.json",
    "apple-m2max-macos152-tf217-metal110.json",
    "jetson-orin-nx-jp62-torch260-cu126.json",
    "cpu-amx-torch213-verified.json",
)
PLANS = (
    ("--params", "7e9"),
    ("--params", "70e9", "--gpus", "64", "--gpus-per-node", "8", "--zero", "3", "--offload",
     "--offload-params"),
    ("--params", "1e12", "--gpu-memory", "24"),  # nothing single makes it fit
    ("--model", str(MODELS / "llama-2-7b.json"), "--seq-len", "4096", "--batch", "4"),
    ("--model", str(MODELS / "mixtral-8x7b.json"), "--gpus", "8", "--zero", "3", "--seq-len", "1024"),
    ("--model", str(MODELS / "t5-small.json"), "--checkpointing", "--gpu-memory", "24", "--solve", "batch"),
    ("--model", str(MODELS / "gpt2.json"), "--gpus", "8", "--zero", "2", "--accounting", "deepspeed"),
    ("--model", str(MODELS / "llama-2-7b.json"), "--gpus", "8", "--zero", "2", "--offload",
     "--host-memory", "64"),
)  # fmt: skip


def fit_text(capsys, *args: str) -> str:
    """fit's text output for `args`, run in this process."""
    status = main(["fit", *args])
    out, err = capsys.readouterr()
    assert status in (0, 1), err
    return out


@pytest.mark.parametrize("machine", MACHINES)
def test_every_line_of_fit_is_within_80_columns(capsys, machine):
    for plan in PLANS:
        out = fit_text(capsys, *plan, "--facts", str(FACTS / machine))
        assert out.startswith("model: ") and "fits: " in out
        long = [line for line in out.splitlines() if len(line) > 80]
        assert long == [], (plan, long)
