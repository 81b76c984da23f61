"""fit's text output within 80 columns for --params and --model plans on recorded machines of
every vendor (tests/fixtures/facts/), and the runtime's context named by the device's runtime."""

from __future__ import annotations

import json

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


@pytest.mark.parametrize(
    ("machine", "runtime", "label", "meaning"),
    [
        ("mi300x-x8-torch251-rocm62.json", "rocm", "ROCm context", "the ROCm (HIP) runtime's own memory"),
        ("max1100-torch27-xpu.json", "xpu", "XPU context", "the XPU runtime's (SYCL, Level Zero) own memory"),
        ("apple-m2max-macos152-tf217-metal110.json", "mps", "Metal context", "the Metal runtime"),
    ],
)
def test_another_vendors_context_is_named_by_its_runtime_and_cudas_figure_is_said(
    capsys, machine, runtime, label, meaning
):
    plan = ("--params", "7e9", "--gpu-memory", "80", "--facts", str(FACTS / machine))
    out = fit_text(capsys, *plan)
    assert "CUDA" not in out.replace("counts CUDA's", "")  # the one mention: whose figure is counted
    assert f"\n  {label}  " in out and f"\n  {label}: {meaning}" in out
    assert "\n    no published figure for it: hwcheck counts CUDA's, 1 GB\n" in out
    document = json.loads(fit_text(capsys, *plan, "--json"))
    assert document["context"]["runtime"] == runtime and document["context"]["published"] is False
    assert document["context"]["figure"] == "cuda" and document["per_device"]["cuda_context"] == 10**9


def test_an_nvidia_gpu_gets_cudas_own_figure_and_no_gpu_says_cuda_is_assumed(capsys):
    out = fit_text(capsys, "--params", "7e9", "--facts", str(FACTS / "h100-anchor-torch211.json"))
    assert "\n  CUDA context: the CUDA runtime's own memory on each GPU\n" in out
    assert "published figure" not in out and "assumed" not in out
    cpu = ("--params", "7e9", "--gpu-memory", "80", "--facts", str(FACTS / "cpu-amx-torch213-verified.json"))
    out = fit_text(capsys, *cpu)
    assert "\n    which runtime drives the GPUs is not known: CUDA's is assumed\n" in out
    assert json.loads(fit_text(capsys, *cpu, "--json"))["context"]["runtime"] is None
