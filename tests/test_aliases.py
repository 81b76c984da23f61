"""The words people type for frameworks and precisions mean hwcheck's names, on every option and in Python."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck import recommend_policy
from hwcheck.engine.aliases import UnknownWord, resolve
from hwcheck.measure.runner import select_variants

H100 = str(FIXTURES / "facts" / "h100-anchor-torch211.json")


@pytest.mark.parametrize(
    "kind, word, name",
    [
        ("framework", "pytorch", "torch"),
        ("framework", "PyTorch", "torch"),
        ("framework", "tf", "tensorflow"),
        ("framework", "tf.keras", "tensorflow"),
        ("framework", "keras3", "keras"),
        ("framework", "flax", "jax"),
        ("framework", "jax", "jax"),
        ("script", "tensorflow", "keras-custom"),
        ("script", "keras_custom", "keras-custom"),
        ("policy", "bf16", "mixed_bfloat16"),
        ("policy", "bfloat16", "mixed_bfloat16"),
        ("policy", "mixed-bf16", "mixed_bfloat16"),
        ("policy", "fp16", "mixed_float16"),
        ("policy", "float16", "mixed_float16"),
        ("policy", "half", "mixed_float16"),
        ("policy", "fp32", "float32"),
        ("policy", "float32", "float32"),
        ("preference", "bf16", "bfloat16"),
        ("preference", "mixed_float16", "float16"),
        ("precision", "tf32", "float32+tf32"),
    ],
)
def test_a_word_means_its_canonical_name(kind: str, word: str, name: str) -> None:
    assert resolve(kind, word) == name


def test_an_unknown_word_suggests_the_closest() -> None:
    with pytest.raises(UnknownWord, match=r"did you mean pytorch \(torch\)\?"):
        resolve("framework", "pytroch")
    with pytest.raises(UnknownWord, match=r"unknown preference 'fp32'.*expected one of float16, bfloat16"):
        resolve("preference", "fp32")


def test_doctor_takes_the_words_people_type() -> None:
    plain = run_hwcheck(
        "doctor", "--facts", H100, "--framework", "torch", "--why-not", "mixed_float16", "--json"
    )
    typed = run_hwcheck("doctor", "--facts", H100, "--framework", "pytorch", "--why-not", "fp16", "--json")
    assert typed.returncode == plain.returncode == 0, typed.stderr
    assert json.loads(typed.stdout) == json.loads(plain.stdout)
    preferred = run_hwcheck("doctor", "--facts", H100, "--framework", "flax", "--prefer", "fp16", "--json")
    recommendation = json.loads(preferred.stdout)["recommendation"]
    assert (recommendation["framework"], recommendation["policy"]) == ("jax", "mixed_float16")


def test_a_misspelt_word_is_a_usage_error_with_a_suggestion() -> None:
    result = run_hwcheck("doctor", "--facts", H100, "--framework", "pytorc")
    assert result.returncode == 2
    assert "usage: hwcheck doctor" in result.stderr
    assert "did you mean pytorch (torch)?" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_lists_the_aliases() -> None:
    doctor = run_hwcheck("doctor", "--help", env={"COLUMNS": "400"}).stdout
    assert "pytorch = torch" in doctor and "flax = jax" in doctor and "tf, tf.keras" in doctor
    assert "bf16, bfloat16, mixed_bf16 = mixed_bfloat16" in doctor
    config = run_hwcheck("config", "--help", env={"COLUMNS": "400"}).stdout
    assert "tensorflow, tf, tf.keras" in config and "= keras-custom" in config
    assert "tf32 = float32+tf32" in run_hwcheck("bench", "--help", env={"COLUMNS": "400"}).stdout


def test_config_takes_the_words_people_type() -> None:
    result = run_hwcheck("config", "--facts", H100, "--framework", "pytorch", "--policy", "fp16", "-o", "-")
    assert result.returncode == 0, result.stderr
    assert "Emitted by `hwcheck config --framework torch`" in result.stdout
    assert 'POLICY = "mixed_float16"' in result.stdout


def test_bench_policies_and_python_api_take_the_words() -> None:
    chosen = [variant.name for variant in select_variants("fp32, tf32,bf16")]
    assert chosen == ["float32", "float32+tf32", "mixed_bfloat16"]
    facts = json.loads(open(H100, encoding="utf-8").read())
    recommendation = recommend_policy(facts, framework="pytorch", prefer="fp16")
    assert (recommendation.framework, recommendation.policy) == ("torch", "mixed_float16")
    assert recommendation.why_not("bf16") == recommendation.why_not("mixed_bfloat16")
    with pytest.raises(ValueError, match="did you mean"):
        recommend_policy(facts, framework="pytorh")
