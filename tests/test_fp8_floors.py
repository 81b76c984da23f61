"""FP8 training's software floors per architecture (rules/knowledge/nvidia.toml [fp8_training]):
Transformer Engine's CUDA 12.1+ (12.8+ on Blackwell), a driver supporting it, cuBLAS 12.1.3+ on Ada."""

from __future__ import annotations

import pytest

from hwcheck import knowledge
from hwcheck.recommendation import recommend

RTX_4090 = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"}
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
B200 = {"index": 0, "name": "NVIDIA B200", "compute_capability": "10.0"}


def _fp8(gpu, torch_version, cuda, driver_cuda="12.8", cublas=None):
    facts = {
        "schema_version": 1,
        "gpus": [gpu],
        "nvidia_driver": {"version": "570.124.06", "cuda": driver_cuda},
        "frameworks": {"torch": {"version": torch_version, "cuda": cuda}},
    }
    if cublas:
        facts["cublas"] = {"version": cublas, "source": "pip"}
    return recommend(facts, framework="torch").fp8


def test_the_floors_follow_the_architecture():
    assert knowledge.fp8_floors(["8.9"]) | {"source": None} == {
        "cuda": "12.1",
        "cublas": "12.1.3",
        "source": None,
    }
    assert knowledge.fp8_floors(["9.0"])["cuda"] == "12.1" and knowledge.fp8_floors(["9.0"])["cublas"] is None
    assert knowledge.fp8_floors(["12.0"])["cuda"] == "12.8"
    assert knowledge.fp8_floors(["9.0", "10.0"])["cuda"] == "12.8"  # the highest of the machine's GPUs
    assert knowledge.fp8_floors(["8.0"]) == {"cuda": None, "cublas": None, "source": None}


@pytest.mark.parametrize(
    ("cublas", "available"),
    [("12.1.0.26", False), ("12.1.3.1", True), ("12.4.5.8", True), (None, True)],
)
def test_ada_needs_cublas_12_1_3(cublas, available):
    fp8 = _fp8(RTX_4090, "2.1.0+cu121", "12.1", cublas=cublas)
    assert fp8["available"] is available
    if not available:
        assert "cuBLAS 12.1.3 or newer" in fp8["reason"] and "12.1.0.26" in fp8["reason"]


@pytest.mark.parametrize(("cuda", "available"), [("11.8", False), ("12.1", True)])
def test_hopper_needs_cuda_12_1(cuda, available):
    fp8 = _fp8(H100, f"2.1.0+cu{cuda.replace('.', '')}", cuda)
    assert fp8["available"] is available
    if not available:
        assert "CUDA 12.1 or newer" in fp8["reason"] and "CUDA 11.8" in fp8["reason"]


@pytest.mark.parametrize(("cuda", "available"), [("12.6", False), ("12.8", True)])
def test_blackwell_needs_cuda_12_8(cuda, available):
    fp8 = _fp8(B200, f"2.7.0+cu{cuda.replace('.', '')}", cuda)
    assert fp8["available"] is available


def test_a_driver_older_than_the_floor_says_so():
    # CUDA 12.x minor version compatibility runs cu121 on a 12.0 driver, but Transformer Engine asks
    # for a driver supporting CUDA 12.1.
    fp8 = _fp8(H100, "2.1.0+cu121", "12.1", driver_cuda="12.0")
    assert fp8["available"] is False
    assert "driver supporting CUDA 12.1" in fp8["reason"] and "12.0" in fp8["reason"]
