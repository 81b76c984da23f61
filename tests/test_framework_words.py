"""Advice in the user's framework's words, and one claim about Tensor Core shapes in doctor and in
the settings file config writes. The machines are replayed: the H100 of
tests/fixtures/facts/h100-anchor-torch211.json (shared/anchors/h100.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwcheck.cli import main
from hwcheck.recommendation import recommend

H100 = Path(__file__).parent / "fixtures" / "facts" / "h100-anchor-torch211.json"
KERAS_WORDS = ("Dense units", "LSTM units")
TORCH_WORDS = ("nn.Linear",)


def advice_text(framework: str) -> str:
    facts = json.loads(H100.read_text())
    advice = recommend(facts, framework=framework)
    return " ".join(
        [f.message + " " + (f.remedy or "") for f in advice.findings] + [r.message for r in advice.reasons]
    )


@pytest.mark.parametrize("framework", ["torch", "lightning", "hf-trainer", "accelerate", "deepspeed"])
def test_pytorch_advice_speaks_of_pytorch_layers(framework):
    text = advice_text(framework)
    assert not any(word in text for word in KERAS_WORDS)
    assert "nn.Linear in_features and out_features" in text


@pytest.mark.parametrize("framework", ["keras", "tensorflow"])
def test_keras_advice_speaks_of_keras_layers(framework):
    text = advice_text(framework)
    assert "Dense units" in text and not any(word in text for word in TORCH_WORDS)


def test_doctor_and_the_settings_file_make_the_same_tensor_core_claim(tmp_path, capsys):
    facts = json.loads(H100.read_text())
    [finding] = [f for f in recommend(facts, framework="torch").findings if f.id == "gpu-tensor-core-shapes"]
    assert (
        main(["config", "--facts", str(H100), "--framework", "torch", "-o", str(tmp_path / "train.py")]) == 0
    )
    capsys.readouterr()
    reason = json.loads((tmp_path / "train.settings.json").read_text())["batch_size"]["reason"]
    claim = "Tensor Cores run matrices of any shape from cuBLAS 11 and cuDNN 7.6.3 on"
    assert finding.message.startswith(claim) and reason.startswith(claim)
    tail = "but dimensions that are multiples of 8 run fastest: nn.Linear in_features and out_features"
    assert tail in finding.message and tail in reason
    assert "only when dimensions are multiples of 8" not in reason


def test_no_finding_says_fix_nothing_to_do(capsys):
    # The verified CPU of tests/fixtures/facts/cpu-amx-torch213-verified.json: a verify-ok finding.
    verified = Path(__file__).parent / "fixtures" / "facts" / "cpu-amx-torch213-verified.json"
    main(["doctor", "--facts", str(verified), "--framework", "torch"])
    printed = capsys.readouterr().out
    assert "[verify-ok]" in printed and "Nothing to do" not in printed
