"""TPU runtime pairing: torch_xla and jax pin the libtpu they were built for; another one fails to start.

The pins are read from the installed METADATA (never by importing the framework); the
METADATA lines below are the projects' own forms: jax's setup.py writes `libtpu==0.0.15.*`
for its tpu extra, torch_xla's `libtpu==0.0.7.1` (2.6, pytorch/xla v2.6.0's setup.py) or
`libtpu-nightly==0.1.dev20240612` (2.4, as pytorch/xla#7784's pip error quotes it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from hwcheck.devices.tpu import libtpu_matches, libtpu_older
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
        ("0.0.23", "0.0.7.1", False),
    ],
)
def test_an_installed_libtpu_against_a_pin(installed: str, pin: str, matches: bool) -> None:
    assert libtpu_matches(installed, pin) is matches


def test_torch_xla_beside_another_libtpu_is_an_error_with_the_install_command() -> None:
    recommendation = recommend(json.loads(MISMATCH.read_text()), framework="torch")
    errors = [f for f in recommendation.findings if f.severity == "error"]
    assert [f.id for f in errors] == ["tpu-libtpu-mismatch"]
    assert "0.0.7.1" in errors[0].message and "0.0.23" in errors[0].message
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


@pytest.mark.parametrize(
    "installed, pin, older",
    [
        ("0.0.17", "0.0.23.*", True),
        ("0.0.11.1", "0.0.17", True),
        ("0.0.23", "0.0.17", False),
        ("0.0.17.1", "0.0.17", False),
        ("0.1.dev20240612", "0.0.17", False),
        ("0.0.17", "0.1.dev20240612", False),
    ],
)
def test_an_older_libtpu_is_told_apart_from_a_newer_one(installed: str, pin: str, older: bool) -> None:
    assert libtpu_older(installed, pin) is older


def test_jax_beside_an_older_libtpu_than_its_pin_is_a_warning_not_an_error() -> None:
    # Kaggle's TPU image (Kaggle/docker-python#1499): jax 0.7.2 pins 0.0.23.*, libtpu 0.0.17 runs both.
    facts = json.loads(MISMATCH.read_text())
    facts["tpu"]["libtpu"] = "0.0.17"
    recommendation = recommend(facts, framework="jax")
    assert not recommendation.has_errors
    assert (recommendation.policy, recommendation.device) == ("mixed_bfloat16", "tpu")
    warning = next(f for f in recommendation.findings if f.id == "tpu-libtpu-older")
    assert warning.severity == "warning" and "0.0.17" in warning.message
    assert "jax.devices()" in (warning.remedy or "")


def test_a_newer_libtpu_than_jax_pins_stays_an_error() -> None:
    facts = json.loads(MISMATCH.read_text())
    facts["frameworks"]["jax"]["libtpu_pin"] = "0.0.17"
    recommendation = recommend(facts, framework="jax")
    assert [f.id for f in recommendation.findings if f.severity == "error"] == ["tpu-libtpu-mismatch"]


def _tensorflow_on_a_tpu(package: str, libtpu: str | None) -> dict:
    return {
        "schema_version": 1,
        "tpu": {"present": True, "type": "v2", "libtpu": libtpu},
        "frameworks": {"tensorflow": {"version": "2.18.0", "package": package}},
    }


@pytest.mark.parametrize("libtpu", [None, "0.0.23"])
def test_pypi_tensorflow_on_a_tpu_has_no_tpu_runtime_whatever_jax_brought(libtpu: str | None) -> None:
    recommendation = recommend(_tensorflow_on_a_tpu("tensorflow", libtpu), framework="tensorflow")
    error = next(f for f in recommendation.findings if f.severity == "error")
    assert error.id == "tpu-runtime-missing"
    assert error.remedy == (
        "pip install tensorflow-tpu==2.18.0 -f https://storage.googleapis.com/libtpu-tf-releases/index.html"
    )
    assert recommendation.device == "cpu"


@pytest.mark.parametrize("package, libtpu", [("tensorflow-tpu", "2.18.0"), ("tensorflow", "2.18.0")])
def test_tensorflow_with_its_own_tpu_runtime_is_no_error(package: str, libtpu: str) -> None:
    recommendation = recommend(_tensorflow_on_a_tpu(package, libtpu), framework="tensorflow")
    assert not recommendation.has_errors
    assert recommendation.device == "tpu"


def test_the_probe_takes_the_tpu_build_installed_over_tensorflow(tmp_path: Path) -> None:
    dist(tmp_path, "tensorflow", "2.18.0")
    dist(tmp_path, "tensorflow_tpu", "2.18.0", "libtpu==2.18.0")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    assert facts["tensorflow"]["package"] == "tensorflow-tpu"
