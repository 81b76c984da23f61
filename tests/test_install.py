"""`hwcheck install`: the build that runs this machine's accelerators, on replayed machines.

The GPUs are recorded ones: the Tesla P100 of tests/fixtures/nvml/tesla-p100-pcie-16gb.json
(Pascal, CC 6.0, driver 510.47.03), the RX 7900 XTX of tests/fixtures/kfd/rx7900xtx.json
(RDNA 3, gfx1100); the RTX 5090 is named alone and takes its compute capability (12.0) from
the knowledge table, as a facts file may.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from conftest import run_hwcheck
from hwcheck.recommendation.install import install_plan

P100 = {"vendor": "nvidia", "name": "Tesla P100-PCIE-16GB", "compute_capability": "6.0", "memory_mib": 16280}
RTX_5090 = {"vendor": "nvidia", "name": "NVIDIA GeForce RTX 5090"}
RX_7900_XTX = {"vendor": "amd", "name": "Radeon RX 7900 XTX", "arch": "gfx1100"}


def machine(gpu: dict | None, driver: str | None = None) -> dict:
    facts: dict = {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "x86_64"},
        "gpus": [gpu] if gpu else [],
    }
    if driver:
        facts["nvidia_driver"] = {"version": driver}
    return facts


def cuda_of(index_url: str) -> tuple[int, int]:
    digits = re.fullmatch(r"https://download\.pytorch\.org/whl/cu(\d+)(\d)", index_url)
    assert digits, index_url
    return int(digits.group(1)), int(digits.group(2))


@pytest.mark.parametrize("driver", ["510.47.03", "580.65.06"])
def test_pascal_gets_a_cu126_or_older_build_never_cu128(driver):
    plan = install_plan(machine(P100, driver), "torch")
    assert cuda_of(plan["index_url"]) <= (12, 6)
    assert "Tesla P100-PCIE-16GB (compute capability 6.0)" in plan["why"]
    if driver == "580.65.06":  # the current release's cu126 build still carries sm_60
        assert plan["pip"] == "pip install torch --index-url https://download.pytorch.org/whl/cu126"


def test_rtx_50_gets_a_cu128_or_newer_build():
    plan = install_plan(machine(RTX_5090, "580.65.06"), "torch")
    assert cuda_of(plan["index_url"]) >= (12, 8)
    assert "compute capability 12.0" in plan["why"]


def test_an_old_driver_says_which_release_it_can_still_run_and_why():
    # A driver older than CUDA 13's 580: the current release's builds for sm_120 need it.
    plan = install_plan(machine(RTX_5090, "575.57.08"), "torch")
    assert cuda_of(plan["index_url"]) >= (12, 8)
    assert plan["pip"].startswith("pip install 'torch==")
    assert "update the driver for the current release" in plan["why"]


def test_rdna_3_gets_a_rocm_index():
    plan = install_plan(machine(RX_7900_XTX), "torch")
    assert re.fullmatch(r"https://download\.pytorch\.org/whl/rocm[0-9.]+", plan["index_url"])
    assert "gfx1100" in plan["why"]


def test_no_accelerator_gets_the_cpu_build():
    plan = install_plan(machine(None), "torch")
    assert plan["pip"] == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert plan["uv"] == "uv pip install torch --index-url https://download.pytorch.org/whl/cpu"


def test_jax_takes_the_cuda_plugin_the_driver_runs():
    assert install_plan(machine(RTX_5090, "580.65.06"), "jax")["pip"] == "pip install 'jax[cuda13]'"
    assert install_plan(machine(P100, "535.104.05"), "jax")["pip"] == "pip install 'jax[cuda12]'"


def test_every_printed_command_is_quoted_words(tmp_path):
    facts = tmp_path / "rtx5090.json"
    facts.write_text(json.dumps(machine(RTX_5090, "580.65.06")))
    result = run_hwcheck("install", "torch", "--facts", str(facts))
    assert result.returncode == 0, result.stderr
    why, pip, uv = result.stdout.splitlines()
    assert why.startswith("# NVIDIA GeForce RTX 5090")
    assert shlex.split(pip)[:3] == ["pip", "install", "torch"] and shlex.join(shlex.split(pip)) == pip
    assert shlex.split(uv)[:4] == ["uv", "pip", "install", "torch"]
    plan = json.loads(run_hwcheck("install", "pytorch", "--json", "--facts", str(facts)).stdout)
    assert plan["pip"] == pip and plan["sources"]
