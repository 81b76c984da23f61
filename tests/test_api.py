"""hwcheck.recommend_policy checks the facts it is given before the rules read them."""

from __future__ import annotations

import json

import pytest

import hwcheck
from conftest import FIXTURES
from hwcheck.base.errors import FactsError, InputError

A100 = json.loads((FIXTURES / "facts/a100-sxm4x4-tf216.json").read_text())


@pytest.mark.parametrize(
    ("facts", "problem"),
    [
        ([A100], "expected a facts dict, not list"),
        ({"gpus": []}, '"schema_version" is a required property'),
        ({**A100, "schema_version": 2}, "schema_version 2 is not supported"),
        ({**A100, "gpus": [{"index": 0}]}, 'gpus[0]: "name" is a required property'),
        ({**A100, "gpus": "NVIDIA A100"}, 'gpus: "NVIDIA A100" is not of type "array"'),
        ({**A100, "cpu": {"flags": "avx2"}}, 'cpu.flags: "avx2" is not of type "array"'),
    ],
)
def test_invalid_facts_raise_a_value_error_naming_the_problem(facts, problem):
    with pytest.raises(FactsError) as raised:
        hwcheck.recommend_policy(facts)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, InputError)
    assert str(raised.value).startswith("facts: ") and problem in str(raised.value)


def test_valid_facts_are_recommended_for():
    assert hwcheck.recommend_policy(A100).policy == "mixed_bfloat16"


def test_why_not_prints_one_reason_a_line():
    recommendation = hwcheck.recommend_policy(A100, framework="keras")
    reasons = recommendation.why_not("float32")
    assert reasons and isinstance(reasons, list)
    assert str(reasons) == "\n".join(reasons)
    assert not str(reasons).startswith("[")
    assert str(recommendation.why_not("mixed_bfloat16")) == ""
