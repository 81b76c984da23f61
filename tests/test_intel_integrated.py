"""Integrated Intel Arc graphics: advised on the XPU with PyTorch's XPU build, and named as unused
beside a CPU-only PyTorch, with the command that installs the XPU build.

The machine is the corpus's Core Ultra 9 185H (Meteor Lake-P, pci.ids 8086:7d55 'Meteor Lake-P
[Intel Arc Graphics]', Motphys/UniLab#431); only the PyTorch build differs between the tests.
"""

from __future__ import annotations

import copy

import pytest

from conftest import ROOT
from hwcheck.facts import load_facts
from hwcheck.recommendation import recommend

MACHINE = load_facts(ROOT / "tests" / "corpus" / "cases" / "healthy-meteor-lake-arc-igpu-torch27-xpu.json")


def _with_torch(version: str) -> dict:
    facts = copy.deepcopy(MACHINE)
    facts["frameworks"]["torch"] = {"version": version}
    return facts


def test_the_integrated_gpu_beside_a_cpu_only_torch_is_an_error_with_the_xpu_install():
    recommendation = recommend(_with_torch("2.7.0+cpu"), framework="torch")
    errors = [f for f in recommendation.findings if f.severity == "error"]
    assert [f.id for f in errors] == ["xpu-torch-without-xpu"]
    assert "Intel Arc Graphics" in errors[0].message
    assert "https://download.pytorch.org/whl/xpu" in (errors[0].remedy or "")
    assert recommendation.device == "cpu"


@pytest.mark.parametrize("version", ["2.7.0+xpu", "2.8.0+xpu"])
def test_the_integrated_gpu_with_the_xpu_build_is_advised_on_the_xpu(version):
    recommendation = recommend(_with_torch(version), framework="torch")
    assert not recommendation.has_errors
    # Xe-LPG has no XMX matrix engines: float32 on the XPU.
    assert (recommendation.policy, recommendation.device) == ("float32", "xpu")
