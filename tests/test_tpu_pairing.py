"""TPU runtime pairing: torch_xla and jax pin the libtpu they were built for; another one fails to start.

The pins are read from the installed METADATA (never by importing the framework); the
METADATA lines below are the projects' own forms: jax's setup.py writes `libtpu==0.0.15.*`
for its tpu extra, torch_xla's `libtpu==0.0.8` (2.6) or `libtpu-nightly==0.1.dev20240612`
(2.4, as pytorch/xla#7784's pip error quotes it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from hwcheck.engine.compat_tpu import libtpu_matches
from hwcheck.probes import frameworks
from hwcheck.recommendation import recommend

MISMATCH = FIXTURES / "facts" / "tpu-v5e-torch-xla-libtpu-mismatch.json"


def dist(site: Path, name: str, version: str, *requires: str) -> None:
    directory = site / f"{name}-{version}.dist-info"
    directory.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    (directory / "METADATA").write_text("\n".join(lines) + "\n\nDescription.\n")


def test_the_probe_reads_the_libtpu_each_framework_pins(tmp_path: Path) -> None:
    dist(tmp_path, "torch", "2.4.0")
    dist(tmp_path, "torch_xla", "2.4.0", 'libtpu-nightly==0.1.dev20240612; extra == "tpu"', "absl-py>=1.0.0")
    dist(tmp_path, "jax", "0.6.1", "jaxlib<=0.6.1,>=0.6.1", 'libtpu==0.0.15.*; extra == "tpu"')
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    assert facts["torch"]["xla"] == "2.4.0"
    assert facts["torch"]["xla_libtpu"] == "0.1.dev20240612"
    assert facts["jax"]["libtpu_pin"] == "0.0.15.*"


def test_a_framework_that_pins_no_libtpu_records_none(tmp_path: Path) -> None:
    dist(tmp_path, "jax", "0.4.1", "numpy>=1.20")
    dist(tmp_path, "torch", "2.0.0")
    dist(tmp_path, "torch_xla", "2.0", "absl-py>=1.0.0")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    assert "libtpu_pin" not in facts["jax"]
    assert facts["torch"]["xla_libtpu"] is None


@pytest.mark.parametrize(
    "installed, pin, matches",
    [
        ("0.0.15.1", "0.0.15.*", True),
        ("0.0.15", "0.0.15.*", True),
        ("0.0.16", "0.0.15.*", False),
        ("0.0.150", "0.0.15.*", False),
        ("0.1.dev20240612+nightly", "0.1.dev20240612", True),
        ("0.0.23", "0.0.8", False),
    ],
)
def test_an_installed_libtpu_against_a_pin(installed: str, pin: str, matches: bool) -> None:
    assert libtpu_matches(installed, pin) is matches


def test_torch_xla_beside_another_libtpu_is_an_error_with_the_install_command() -> None:
    recommendation = recommend(json.loads(MISMATCH.read_text()), framework="torch")
    errors = [f for f in recommendation.findings if f.severity == "error"]
    assert [f.id for f in errors] == ["tpu-libtpu-mismatch"]
    assert "0.0.8" in errors[0].message and "0.0.23" in errors[0].message
    assert errors[0].remedy.startswith("pip install 'torch_xla[tpu]==2.6.0'")
    assert (recommendation.policy, recommendation.device) == ("float32", "cpu")


def test_jax_with_the_libtpu_it_pins_trains_on_the_tpu() -> None:
    recommendation = recommend(json.loads(MISMATCH.read_text()), framework="jax")
    assert not recommendation.has_errors
    assert (recommendation.policy, recommendation.device) == ("mixed_bfloat16", "tpu")


def test_an_unknown_libtpu_is_a_warning_that_says_what_to_run() -> None:
    facts = json.loads(MISMATCH.read_text())
    del facts["tpu"]["libtpu"]
    recommendation = recommend(facts, framework="torch")
    assert not recommendation.has_errors
    warning = next(f for f in recommendation.findings if f.id == "tpu-libtpu-mismatch")
    assert warning.severity == "warning" and "python -m pip show libtpu" in warning.remedy
