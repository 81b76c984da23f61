"""A TensorFlow release whose official wheels need more than AVX: rules/knowledge/tensorflow.toml.

TensorFlow 2.4.0's x86-64 wheels were built with AVX2 by mistake (tensorflow/tensorflow#45744,
the release team); 2.4.1 went back to AVX alone. The CPU below is the Xeon E5-2670 of that issue.
"""

from __future__ import annotations

from typing import Any

import pytest

from hwcheck import knowledge
from hwcheck.recommendation import recommend

RULE = "cpu-missing-tensorflow-release-instructions"


def _machine(version: str, flags: list[str], package: str = "tensorflow") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "cpu": {
            "arch": "x86_64",
            "vendor": "GenuineIntel",
            "model": "Intel(R) Xeon(R) CPU E5-2670 0",
            "flags": flags,
        },
        "frameworks": {"tensorflow": {"version": version, "package": package}},
    }


def _ids(facts: dict[str, Any], severity: str) -> list[str]:
    return [f.id for f in recommend(facts, framework="tensorflow").findings if f.severity == severity]


def test_the_table_names_the_release_and_its_fix():
    row = knowledge.tensorflow_cpu_release("2.4.0")
    assert row is not None and row["requires"] == ["avx", "avx2"] and row["fixed_in"] == "2.4.1"
    assert knowledge.tensorflow_cpu_release("2.4.1") is None
    assert knowledge.tensorflow_cpu_release(None) is None


def test_tensorflow_240_on_a_cpu_without_avx2_is_an_error_with_the_release_that_fixes_it():
    findings = recommend(_machine("2.4.0", ["avx", "sse4_2"]), framework="tensorflow").findings
    error = next(f for f in findings if f.id == RULE)
    assert error.severity == "error" and "avx2" in error.message
    assert error.remedy.startswith("pip install tensorflow==2.4.1 ")
    assert "cpu-missing-avx2" not in [f.id for f in findings]  # no 'TensorFlow runs' beside it


@pytest.mark.parametrize(
    "version, flags, package",
    [
        ("2.4.1", ["avx"], "tensorflow"),
        ("2.3.1", ["avx"], "tensorflow"),
        ("2.4.0", ["avx", "avx2", "fma"], "tensorflow"),
        ("2.4.0", ["avx"], "intel-tensorflow"),
    ],
)
def test_other_releases_cpus_and_builds_raise_nothing(version, flags, package):
    assert RULE not in _ids(_machine(version, flags, package), "error")


def test_unread_cpu_flags_claim_nothing():
    facts = _machine("2.4.0", [])
    del facts["cpu"]["flags"]
    assert RULE not in _ids(facts, "error") + _ids(facts, "warning")
