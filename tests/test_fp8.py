"""recommendation.fp8: whether the GPUs the process sees run FP8 training, why, and the recipe
(issue 19, item 4). Computed by the derives of rules/policy/policy.toml over gpu.fp8 (CC >= 8.9
from rules/knowledge/nvidia.toml) and the CUDA the framework runs on."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.facts import schema_problem
from hwcheck.recommendation import recommend

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"
A10G = ROOT / "tests" / "corpus" / "cases" / "healthy-jax0433-aws-8xa10g.json"


def _h100(**torch: Any) -> dict[str, Any]:
    facts = json.loads(H100.read_text())
    facts["frameworks"]["torch"].update(torch)
    return facts


def test_an_h100_with_torch_on_cuda_13_runs_fp8_with_the_recipes() -> None:
    fp8 = recommend(json.loads(H100.read_text()), framework="torch").fp8
    assert fp8["available"] is True
    assert "compute capability 8.9 or higher" in fp8["reason"] and "CUDA 13.0" in fp8["reason"]
    for recipe in (
        "te.fp8_autocast",
        "convert_to_float8_training",
        "mixed_precision='fp8'",
        "transformer-engine",
    ):
        assert recipe in fp8["recipe"]


def test_ampere_has_no_fp8_and_says_why() -> None:
    fp8 = recommend(json.loads(A10G.read_text()), framework="jax").fp8
    recipes = fp8.pop("recipes")
    assert {recipe["available"] for recipe in recipes.values()} == {False}  # every recipe says the same
    assert fp8 == {
        "available": False,
        "reason": "FP8 Tensor Cores need compute capability 8.9 or higher (Ada, Hopper, Blackwell); "
        "NVIDIA A10G (CC 8.6) has none",
        "recipe": "",
    }


def test_jax_on_hopper_gets_the_transformer_engine_jax_recipe() -> None:
    fp8 = recommend(json.loads(H100.read_text()), framework="jax").fp8
    assert fp8["available"] is True
    assert "transformer_engine.jax" in fp8["recipe"]


def test_tensorflow_has_no_fp8_training_path() -> None:
    fp8 = recommend(json.loads(H100.read_text()), framework="tensorflow").fp8
    assert fp8["available"] is False and "not TensorFlow" in fp8["reason"]


@pytest.mark.parametrize(
    ("version", "cuda", "available"),
    [("2.1.0+cu121", "12.1", True), ("2.0.1+cu118", "11.8", False)],
)
def test_transformer_engine_needs_cuda_12_1(version: str, cuda: str, available: bool) -> None:
    facts = _h100(version=version, cuda=cuda)
    facts["cuda"] = {"version": f"{cuda}.0", "source": "pip"}
    fp8 = recommend(facts, framework="torch").fp8
    assert fp8["available"] is available, fp8
    if not available:
        assert "CUDA 12.1 or newer" in fp8["reason"] and fp8["recipe"] == ""


@pytest.mark.parametrize(("cuda", "available"), [("12.6", False), ("12.8", True)])
def test_blackwell_needs_cuda_12_8(cuda: str, available: bool) -> None:
    facts = _h100(version=f"2.7.0+cu{cuda.replace('.', '')}", cuda=cuda)
    facts["cuda"] = {"version": f"{cuda}.0", "source": "pip"}
    for gpu in facts["gpus"]:
        gpu.update(name="NVIDIA B200", compute_capability="10.0")
    fp8 = recommend(facts, framework="torch").fp8
    assert fp8["available"] is available, fp8


def test_no_gpu_no_fp8() -> None:
    facts = copy.deepcopy(json.loads(H100.read_text()))
    facts["gpus"] = []
    fp8 = recommend(facts, framework="torch").fp8
    recipes = fp8.pop("recipes")
    assert {recipe["reason"] for recipe in recipes.values()} == {"no NVIDIA GPU is visible to the process"}
    assert fp8 == {"available": False, "reason": "no NVIDIA GPU is visible to the process", "recipe": ""}


def test_the_json_report_carries_fp8_and_validates(tmp_path) -> None:
    result = run_hwcheck("doctor", "--json", "--facts", str(H100), "--framework", "torch")
    report = json.loads(result.stdout)
    assert report["recommendation"]["fp8"]["available"] is True
    assert schema_problem(report, "report") is None
    # A report written before fp8 existed stays valid.
    del report["recommendation"]["fp8"]
    assert schema_problem(report, "report") is None


def test_doctor_prints_one_fp8_line() -> None:
    result = run_hwcheck("doctor", "--facts", str(A10G), "--framework", "jax")
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("fp8 ")]
    assert len(lines) == 1 and "FP8 training not available" in lines[0]
