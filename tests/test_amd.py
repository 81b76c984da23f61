"""AMD GPUs end to end: visibility, the override, doctor over a replayed ROCm tree, emit, bench, inventory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from amd_profiles import TORCH_ROCM62, amd
from fakes.kfd import build
from profiles import BY_NAME, cpu, machine

from conftest import ROOT, run_hwcheck
from hwcheck import knowledge
from hwcheck.base.errors import InputError
from hwcheck.engine import build_context
from hwcheck.inventory.classes import hardware_class
from hwcheck.measure.target import measured_device as _target
from hwcheck.recommendation import recommend

MI300X_X8 = machine(cpu("amd-zen4-epyc-9654"), amd("mi300x", boards=8, rocm="6.2.0"), TORCH_ROCM62)


def visible(environment: dict[str, str], backend: str = "torch") -> dict:
    facts = {**MI300X_X8, "environment": environment}
    return build_context(facts, framework=backend)["amd"]


# --- which GPUs a ROCm process sees -------------------------------------------------------


def test_every_gpu_is_visible_without_the_variables():
    seen = visible({})
    assert (seen["physical_count"], seen["count"], seen["visibility"]["variable"]) == (8, 8, "")


def test_rocr_applies_first_and_hip_picks_among_what_it_left():
    # ROCR keeps physical GPUs 4-7; HIP's index 1 is then the second of those: physical 5.
    seen = visible({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "1"})
    assert seen["count"] == 1 and seen["visibility"]["variable"] == "HIP_VISIBLE_DEVICES"


def test_rocr_takes_a_gpu_by_its_uuid():
    seen = visible({"ROCR_VISIBLE_DEVICES": "GPU-8af705259683161c"})
    assert seen["count"] == 1


def test_cuda_visible_devices_counts_when_hip_visible_devices_is_unset():
    assert visible({"CUDA_VISIBLE_DEVICES": "0,1,2"})["count"] == 3
    assert visible({"CUDA_VISIBLE_DEVICES": "0,1,2", "HIP_VISIBLE_DEVICES": "0"})["count"] == 1


def test_an_index_out_of_range_stops_the_list_there():
    seen = visible({"HIP_VISIBLE_DEVICES": "0,9,1"})
    assert seen["count"] == 1
    assert (seen["visibility"]["stopped_at"], seen["visibility"]["stop_reason"]) == (
        "9",
        "is out of range (the machine has 8 GPUs)",
    )


def test_jax_platforms_without_rocm_hides_the_gpus_from_jax_only():
    assert visible({"JAX_PLATFORMS": "cpu"}, "jax")["count"] == 0
    assert visible({"JAX_PLATFORMS": "rocm,cpu"}, "jax")["count"] == 8
    assert visible({"JAX_PLATFORMS": "cpu"}, "torch")["count"] == 8


# --- the knowledge tables ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "target"),
    [
        ("10.3.0", "gfx1030"),
        ("11.0.0", "gfx1100"),
        ("9.0.10", "gfx90a"),
        ("10.3", None),
        ("ten", None),
        ("", None),
    ],
)
def test_an_override_value_names_a_gfx_target(value, target):
    assert knowledge.override_target(value) == target


def test_rocm_releases_list_their_targets_as_amds_tables_do():
    assert knowledge.rocm_support("6.2.4", "gfx942") == "supported"
    assert knowledge.rocm_support("6.1", "gfx906") == "deprecated"
    assert knowledge.rocm_support("6.3.3", "gfx900") == "unsupported"
    assert knowledge.rocm_support("6.2", "gfx1032") == "unlisted"
    assert knowledge.rocm_support("5.6", "gfx1100") == "unlisted"  # the 7900 XTX came with 5.7
    assert knowledge.rocm_support("5.7.1", "gfx1100") == "supported"
    assert knowledge.rocm_support("4.5", "gfx90a") is None  # a release the table lacks: unknown
    assert knowledge.first_rocm_supporting("gfx942") == "6.0"


def test_every_gfx_target_names_its_source_and_every_override_is_a_target_of_its_family():
    for row in knowledge.load("amd")["gfx"]:
        assert len(row["source"]) > 20, row["target"]
        if "override" in row:
            forced = knowledge.amd_target(knowledge.override_target(row["override"]))
            assert forced and forced["family"].rstrip(".5") == row["family"].rstrip(".5"), row["target"]


def test_the_pytorch_install_command_names_the_index_of_the_installed_release():
    error = next(f for f in recommend(BY_NAME["amd-rx7900xtx-cuda-torch"].facts, framework="torch").findings)
    assert error.id == "amd-framework-not-rocm" and "2.5.1+cu124" in error.message
    assert error.remedy == (
        "Install the ROCm build: pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/rocm6.2"
    )


# --- the doctor over a replayed tree, with no facts file ----------------------------------------

DOCTOR_OVER = """
import functools, sys
import hwcheck.probes.amd.gpu as amd_gpu
amd_gpu.probe = functools.partial(amd_gpu.probe, root=sys.argv[1])
from hwcheck.cli import main
sys.exit(main(sys.argv[2:]))
"""


def doctor_over(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """hwcheck doctor probing this machine, with the AMD probe reading the tree under `root`."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    for name in (
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "HSA_OVERRIDE_GFX_VERSION",
    ):
        environment.pop(name, None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", DOCTOR_OVER, str(root), "doctor", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_doctor_sees_the_replayed_mi300x_without_a_facts_file(tmp_path):
    done = doctor_over(build(tmp_path, "mi300x"), "--json", "--framework", "torch")
    report = json.loads(done.stdout)
    (gpu,) = [gpu for gpu in report["facts"]["gpus"] if gpu["vendor"] == "amd"]
    assert (gpu["name"], gpu["arch"]) == ("AMD Instinct MI300X", "gfx942")
    assert report["probes"]["amd"]["status"] == "ok"
    assert report["facts"]["rocm"]["version"] == "6.3.3"
    # This machine's torch is a CPU build: the AMD GPU cannot be used, and doctor says so (exit 1).
    assert done.returncode == 1
    assert "amd-framework-not-rocm" in {finding["id"] for finding in report["recommendation"]["findings"]}


def test_doctor_names_the_real_device_on_the_terminal(tmp_path):
    done = doctor_over(build(tmp_path, "rx7900xtx"), "--framework", "torch")
    assert "amd          AMD Radeon RX 7900 XTX (gfx1100)" in done.stdout
    assert "cannot use AMD Radeon RX 7900 XTX (gfx1100, ROCm unknown)" in done.stdout


def test_doctor_for_the_mi300x_node_recommends_bf16_on_the_amd_gpu():
    recommendation = recommend(MI300X_X8, framework="torch")
    assert (recommendation.policy, recommendation.device, recommendation.runtime) == (
        "mixed_bfloat16",
        "gpu",
        "rocm",
    )
    assert recommendation.to_dict()["runtime"] == "rocm"
    assert "AMD Instinct MI300X (gfx942, ROCm 6.2)" in recommendation.reasons[0].message
    assert recommendation.apply[0].startswith(
        "device = torch.device('cuda')  # PyTorch on ROCm calls the AMD GPU"
    )
    assert not recommendation.tf32  # TF32 is an NVIDIA mode
    why = recommendation.why_not("mixed_float16")
    assert why and "loss scaling" in why[0]


def test_the_runtime_is_cuda_for_nvidia_and_cpu_off_the_gpu():
    assert (
        recommend(
            json.loads((ROOT / "tests/fixtures/facts/h100-anchor-torch211.json").read_text()),
            framework="torch",
        ).runtime
        == "cuda"
    )
    assert recommend(BY_NAME["amd-rx7900xtx-cuda-torch"].facts, framework="torch").runtime == "cpu"


# --- emit, bench, inventory ------------------------------------------------------------------------


def test_the_emitted_torch_script_says_it_falls_back_to_the_cpu(tmp_path):
    facts = tmp_path / "mi300x.json"
    facts.write_text(json.dumps(MI300X_X8))
    script = tmp_path / "train.py"
    emitted = run_hwcheck("config", "--framework", "torch", "--facts", str(facts), "-o", str(script))
    assert emitted.returncode == 0, emitted.stderr
    text = script.read_text()
    assert 'TARGET_RUNTIME = "rocm"' in text and "PyTorch on ROCm calls the device cuda" in text
    settings = json.loads(script.with_suffix(".settings.json").read_text())
    assert "PyTorch on ROCm calls it 'cuda'" in settings["device"]["reason"]
    ran = subprocess.run(
        [sys.executable, str(script), "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    # This machine has no GPU for the CPU build of torch: the script says so instead of falling back silently.
    assert "the advice is for an AMD GPU (ROCm): this script was written for the cuda device" in ran.stderr
    assert "start policy=mixed_bfloat16 device=cpu runtime=cpu steps=2" in ran.stdout


def test_bench_measures_an_amd_gpu_on_torch_and_says_when_there_is_none():
    assert _target("auto", MI300X_X8, "gpu", "torch") == (
        "gpu",
        "AMD Instinct MI300X",
        "no TF32 on an AMD GPU (TF32 is an NVIDIA math mode)",
    )
    with pytest.raises(InputError, match="no GPU was found on this machine .*no AMD GPU"):
        _target("gpu", {"gpus": []}, "cpu", "torch")
    hidden = {**MI300X_X8, "environment": {"ROCR_VISIBLE_DEVICES": "8"}}
    with pytest.raises(InputError, match="ROCR_VISIBLE_DEVICES hides every GPU"):
        _target("gpu", hidden, "cpu", "torch")


def test_amd_nodes_form_their_own_classes_by_model_target_and_rocm():
    node = hardware_class(MI300X_X8)
    assert node.gpu_text() == "8× AMD Instinct MI300X (gfx942)"
    assert node.rocm == "6.2.0" and "ROCm 6.2.0" in node.driver_text()
    newer = hardware_class(machine(cpu("amd-zen4-epyc-9654"), amd("mi300x", boards=8, rocm="6.3.3")))
    assert newer != node
    rx = hardware_class(BY_NAME["amd-rx7900xtx-cuda-torch"].facts)
    assert rx.gpu_text() == "1× AMD Radeon RX 7900 XTX (gfx1100)"


@pytest.mark.parametrize(
    "name, target",
    [
        ("AMD Radeon RX 6600", "gfx1032"),
        ("AMD Radeon(TM) RX 6600 XT", "gfx1032"),
        ("Radeon RX 7900 XTX", "gfx1100"),
        ("AMD Radeon PRO W7900", "gfx1100"),
        ("AMD Radeon RX 6400", None),
        ("", None),
    ],
)
def test_a_gpu_known_by_marketing_name_gets_its_gfx_target(name, target):
    # rules/knowledge/amd.toml [[gfx]] names: AMD's GPU specification table (gpu-arch-specs.rst).
    row = knowledge.amd_target_by_name(name)
    assert (row or {}).get("target") == target


def test_an_rx_6600_by_name_without_the_override_is_an_error_whatever_rocm():
    # ROCm/legacy-rocm-build#2061: an RX 6600 under a ROCm PyTorch of unstated versions.
    facts = {
        "schema_version": 1,
        "gpus": [{"index": 0, "vendor": "amd", "name": "AMD Radeon RX 6600"}],
        "environment": {},
        "frameworks": {"torch": {"rocm_build": True}},
    }
    recommendation = recommend(facts, framework="torch")
    error = next(f for f in recommendation.findings if f.id == "amd-build-unsupported-gpu")
    assert error.severity == "error" and "gfx1032" in error.message
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in (error.remedy or "")
