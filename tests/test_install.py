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


GTX_1080_TI = {"vendor": "nvidia", "name": "NVIDIA GeForce GTX 1080 Ti"}  # 6.1 from the knowledge table
K80 = {"vendor": "nvidia", "name": "Tesla K80", "compute_capability": "3.7"}
M40 = {"vendor": "nvidia", "name": "Tesla M40", "compute_capability": "5.2"}


@pytest.mark.parametrize("gpu", [P100, GTX_1080_TI], ids=["p100", "gtx-1080-ti"])
@pytest.mark.parametrize("driver", ["580.65.06", "595.71.05", None])
def test_pascal_with_a_recent_driver_never_gets_a_cuda_13_build(gpu, driver):
    # CUDA 13 targets nothing below Turing (7.5): nvidia.toml [cuda_targets], last_cuda 12.9.
    jax = install_plan(machine(gpu, driver), "jax")
    assert jax["pip"] == "pip install 'jax[cuda12]'"
    assert "not jax[cuda13]: its CUDA 13 build carries nothing below compute capability 7.5" in jax["why"]
    torch = install_plan(machine(gpu, driver), "torch")
    assert cuda_of(torch["index_url"]) < (13, 0)
    tensorflow = install_plan(machine(gpu, driver), "tensorflow")
    assert tensorflow["pip"] == "pip install 'tensorflow[and-cuda]'"  # 2.21 carries sm_60


def test_a_turing_gpu_still_gets_jax_cuda_13():
    turing = {"vendor": "nvidia", "name": "Tesla T4", "compute_capability": "7.5"}
    assert install_plan(machine(turing, "580.65.06"), "jax")["pip"] == "pip install 'jax[cuda13]'"


def test_a_gpu_below_every_current_build_falls_back_to_the_newest_that_carries_it_saying_why():
    # Kepler: no JAX plugin (CUDA 12 targets nothing below 5.0, JAX's cuda12 floor is 5.2).
    jax = install_plan(machine(K80, "580.65.06"), "jax")
    assert jax["pip"] is None and "jax[cuda12]: its CUDA 12 build carries nothing below" in jax["why"]
    # TensorFlow 2.21 carries sm_60 and up; 2.14 was the last with sm_35, 2.16 the last with sm_50.
    kepler = install_plan(machine(K80, "580.65.06"), "tensorflow")
    assert kepler["pip"] == "pip install 'tensorflow==2.14.*'"
    assert "2.14 is the newest whose build does" in kepler["why"] and "CUDA 11.8" in kepler["why"]
    maxwell = install_plan(machine(M40, "580.65.06"), "tensorflow")
    assert maxwell["pip"] == "pip install 'tensorflow==2.16.*'"
    assert install_plan(machine(M40, "580.65.06"), "jax")["pip"] == "pip install 'jax[cuda12]'"


def test_install_jax_on_a_pascal_machine_prints_no_cuda_13_line(tmp_path):
    facts = tmp_path / "p100.json"
    facts.write_text(json.dumps(machine(P100, "580.65.06")))
    result = run_hwcheck("install", "jax", "--facts", str(facts), env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert "cuda13]'" not in result.stdout.replace("not jax[cuda13]", "")
    assert "pip install 'jax[cuda12]'" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
