"""The Tensor Core shape advice says what the installed cuBLAS and cuDNN really do (issue 19, item 7):
multiples of 8 were required before cuBLAS 11 and cuDNN 7.6.3, and are only faster since."""

from __future__ import annotations

from typing import Any

import pytest

from hwcheck.recommendation import recommend


def _machine(cuda: str | None, cudnn: str | None, cublas: str | None = None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "schema_version": 1,
        "gpus": [
            {"index": 0, "vendor": "nvidia", "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}
        ],
        "nvidia_driver": {"version": "550.127.05", "cuda": "12.4"},
        "cuda": {"version": cuda, "source": "pip"},
        "cudnn": {"version": cudnn, "source": "pip"},
        "frameworks": {},
    }
    if cublas:
        facts["cublas"] = {"version": cublas, "source": "pip"}
    return facts


def _shape_findings(facts: dict[str, Any]) -> dict[str, str]:
    recommendation = recommend(facts, framework="torch")
    assert recommendation.policy == "mixed_float16"
    return {f.id: f.message for f in recommendation.findings if f.id.startswith("gpu-tensor-core-shapes")}


@pytest.mark.parametrize(
    ("cuda", "cudnn", "cublas", "required"),
    [
        ("11.0.221", "7.6.3", None, False),  # both at the boundary: any shape
        ("11.0.221", "7.6.2", None, True),  # cuDNN one patch too old
        ("10.2.89", "8.0.5", None, True),  # cuBLAS 10.2 ships with CUDA 10.2
        ("10.2.89", "8.0.5", "11.2.1", False),  # a recorded cuBLAS wins over the CUDA runtime's
        ("12.4.131", "9.1.0", None, False),
        (None, None, None, False),  # unknown versions: no claim that shapes are required
    ],
)
def test_the_shape_finding_follows_the_installed_versions(
    cuda: str | None, cudnn: str | None, cublas: str | None, required: bool
) -> None:
    findings = _shape_findings(_machine(cuda, cudnn, cublas))
    expected = "gpu-tensor-core-shapes-required" if required else "gpu-tensor-core-shapes"
    assert set(findings) == {expected}


def test_the_message_names_the_versions_present() -> None:
    message = _shape_findings(_machine("12.4.131", "9.1.0"))["gpu-tensor-core-shapes"]
    assert "cuBLAS 12.4 (CUDA 12.4.131), cuDNN 9.1.0" in message
    assert "any shape" in message and "only when" not in message
    old = _shape_findings(_machine("10.1.243", "7.6.5"))["gpu-tensor-core-shapes-required"]
    assert (
        "cuBLAS 10.1 (CUDA 10.1.243), cuDNN 7.6.5" in old
        and "only when the dimensions are multiples of 8" in old
    )


def test_unknown_versions_are_said_to_be_unknown() -> None:
    message = _shape_findings(_machine(None, None))["gpu-tensor-core-shapes"]
    assert "cuBLAS version unknown, cuDNN version unknown" in message
