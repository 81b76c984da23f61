"""What outside the engine reads of the devices a process sees (hwcheck.devices, engine/seen.py):
the GPUs' precisions for emitted scripts, the variable that hides them for bench, gpus.* for rules.

The machines are the recorded replays of tests/fixtures/facts (README.md there names each source);
the Tesla P100 is the one recorded in tests/fixtures/nvml/tesla-p100-pcie-16gb.json (netdata's
nvidia-smi capture), as the GPU probe reports it.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from hwcheck import devices
from hwcheck.base.errors import InputError
from hwcheck.emit.machine import precision_features
from hwcheck.engine import build_context
from hwcheck.measure.target import measured_device

P100 = {
    "gpus": [
        {
            "index": 0,
            "vendor": "nvidia",
            "name": "Tesla P100-PCIE-16GB",
            "memory_mib": 16384,
            "compute_capability": "6.0",
        }
    ]
}


def replay(name: str, **environment: str) -> dict:
    facts = json.loads((FIXTURES / "facts" / name).read_text(encoding="utf-8"))
    return (
        {**facts, "environment": {**(facts.get("environment") or {}), **environment}}
        if environment
        else facts
    )


def test_the_variable_that_hides_every_gpu_is_named():
    assert devices.hiding_variables(replay("a100-sxm4x4-tf216.json", CUDA_VISIBLE_DEVICES="")) == [
        "CUDA_VISIBLE_DEVICES"
    ]
    both = replay("a100-sxm4x4-tf216.json", CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    assert devices.hiding_variables(both, "jax") == ["CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS"]
    assert devices.hiding_variables(both, "torch") == ["CUDA_VISIBLE_DEVICES"]
    rocm = replay("mi300x-x8-torch251-rocm62.json", ROCR_VISIBLE_DEVICES="")
    assert devices.hiding_variables(rocm) == ["ROCR_VISIBLE_DEVICES"]
    # Nothing is hidden where no GPU is installed, whatever the environment says.
    assert devices.hiding_variables(replay("meteor-lake-npu-torch-cpu.json", CUDA_VISIBLE_DEVICES="")) == []


def test_bench_on_a_machine_without_gpus_does_not_blame_the_variable():
    facts = replay("meteor-lake-npu-torch-cpu.json", CUDA_VISIBLE_DEVICES="")
    with pytest.raises(InputError, match="no GPU was found on this machine"):
        measured_device("gpu", facts, "cpu", "torch")
    both = replay("a100-sxm4x4-tf216.json", CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    with pytest.raises(InputError, match="CUDA_VISIBLE_DEVICES and JAX_PLATFORMS hide every GPU"):
        measured_device("gpu", both, "cpu", "jax")


def test_the_apple_gpu_runs_bfloat16_only_where_the_framework_does():
    mac = replay("apple-m2max-macos152-tf217-metal110.json")  # macOS 15.2, tensorflow-metal 1.1.0, no PyTorch
    assert [device.bfloat16 for device in devices.visible(mac)] == [True]  # Metal: macOS 14 on
    assert [device.bfloat16 for device in devices.visible(mac, "tensorflow")] == [True]
    assert [device.bfloat16 for device in devices.visible(mac, "torch")] == [False]
    assert precision_features(mac, "mps", "mps", "tensorflow")["bfloat16"] is True
    assert precision_features(mac, "mps", "mps", "torch")["bfloat16"] is False


def test_float16_on_an_nvidia_gpu_is_its_tensor_cores():
    (pascal,) = devices.visible(P100)
    assert (pascal.architecture, pascal.float16, pascal.bfloat16) == ("6.0", False, False)
    gpus = build_context(P100)["gpus"]
    assert (gpus["count"], gpus["all_fp16"], gpus["all_bf16"]) == (1, False, False)
    (volta,) = devices.visible(replay("v100-driver-too-old.json"))
    assert (volta.float16, volta.bfloat16) == (True, False)


def test_emitted_precisions_count_the_gpus_a_verifying_framework_observed():
    # The probes found no GPU; PyTorch's verification listed the H100: the script is for it.
    facts = replay("h100-unprobed-torch-verified.json")
    assert not devices.visible(facts)
    assert precision_features(facts, "gpu", "cuda", "torch") == {"bfloat16": True, "tf32": True}
