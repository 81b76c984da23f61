"""Every NVIDIA board gets advice: cited rows for cloud and regional variants, and a family
placement (with a warning) for a name the table still lacks (issue 19, item 6)."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import ROOT
from hwcheck import knowledge
from hwcheck.recommendation import recommend

A10G_CASE = ROOT / "tests" / "corpus" / "cases" / "healthy-jax0433-aws-8xa10g.json"


@pytest.mark.parametrize(
    ("name", "capability", "cited"),
    [
        ("NVIDIA A10G", "8.6", "AITemplate/pull/279"),
        ("NVIDIA A800-SXM4-80GB", "8.0", "sglang/issues/25723"),
        ("NVIDIA H20", "9.0", "AutoMegaKernel/pull/3"),
        ("NVIDIA L20", "8.9", "FlowFormer-Official/issues/49"),
    ],
)
def test_cloud_and_regional_variants_are_listed_with_a_source(name: str, capability: str, cited: str) -> None:
    assert knowledge.compute_capability_for(name) == capability
    entry = knowledge.gpu_model(name)
    row = next(g for g in knowledge.load("nvidia")["gpus"]["gpu"] if g["name"] == entry["name"])
    assert cited in row["source"]


@pytest.mark.parametrize(
    ("name", "family", "capability"),
    [
        ("Tesla V100S-PCIE-32GB", "Volta", "7.0"),
        ("NVIDIA H800", "Hopper", "9.0"),
        ("NVIDIA H800 PCIe", "Hopper", "9.0"),
        ("NVIDIA B100", "Blackwell", "10.0"),
        ("NVIDIA A100X", "Ampere", "8.0"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "Ampere", "8.6"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", "Ada", "8.9"),
        ("NVIDIA GeForce RTX 5050 Laptop GPU", "Blackwell", "12.0"),
        ("NVIDIA RTX A500 Laptop GPU", "Ampere", "8.6"),
        ("NVIDIA GeForce GTX 1630", "Turing", "7.5"),
    ],
)
def test_an_unlisted_name_is_placed_by_its_family(name: str, family: str, capability: str) -> None:
    assert knowledge.gpu_model(name) is None  # never given a capability of its own
    placed = knowledge.gpu_family(name)
    assert placed is not None
    assert (placed["family"], placed["compute_capability"]) == (family, capability)
    assert placed["source"]


@pytest.mark.parametrize(
    "name",
    ["NVIDIA A100-SXM4-80GB", "Graphics Device", "AMD Instinct MI300X", "NVIDIA GeForce RTX 2050", "", "RTX"],
)
def test_listed_and_unrecognisable_names_get_no_family(name: str) -> None:
    assert knowledge.gpu_family(name) is None


def test_every_family_row_has_a_source_and_a_known_architecture() -> None:
    rows = knowledge.load("nvidia")["architectures"]["capability"]
    capabilities = {row["compute_capability"] for row in rows}
    families = knowledge.load("nvidia")["gpus"]["families"]
    assert families
    for row in families:
        assert row["source"].strip()
        assert row["compute_capability"] in capabilities, row


def _with_gpu_name(name: str) -> dict:
    facts = copy.deepcopy(json.loads(A10G_CASE.read_text()))
    for gpu in facts["gpus"]:
        gpu["name"] = name
    return facts


def test_the_a10g_host_gets_bfloat16_not_float32() -> None:
    recommendation = recommend(json.loads(A10G_CASE.read_text()), framework="jax")
    assert (recommendation.policy, recommendation.device) == ("mixed_bfloat16", "gpu")
    ids = {finding.id for finding in recommendation.findings}
    assert not ids & {"gpu-unknown-model", "gpu-family-assumed", "gpu-unlisted-model"}


def test_a_family_placed_gpu_is_advised_by_its_family_with_a_warning() -> None:
    recommendation = recommend(_with_gpu_name("Tesla V100S-PCIE-32GB"), framework="jax")
    assert recommendation.policy == "mixed_float16"
    warning = next(f for f in recommendation.findings if f.id == "gpu-family-assumed")
    assert warning.severity == "warning"
    assert "Tesla V100S-PCIE-32GB" in warning.message and "assumed Volta (CC 7.0)" in warning.message
    assert "gpu-unknown-model" not in {f.id for f in recommendation.findings}
    assert "gpu-unlisted-model" not in {f.id for f in recommendation.findings}


def test_a_family_placed_gtx_16_keeps_its_no_tensor_cores_exception() -> None:
    recommendation = recommend(_with_gpu_name("NVIDIA GeForce GTX 1630"), framework="jax")
    assert recommendation.policy == "float32"
    ids = {f.id for f in recommendation.findings}
    assert {"gpu-family-assumed", "gpu-turing-without-tensor-cores"} <= ids


def test_a_name_no_family_matches_still_falls_to_float32_with_the_unknown_warning() -> None:
    recommendation = recommend(_with_gpu_name("NVIDIA Graphics Device"), framework="jax")
    assert recommendation.policy == "float32"
    assert "gpu-unknown-model" in {f.id for f in recommendation.findings}
