"""The release that added each API the advice uses (rules/knowledge/frameworks.toml [[feature]])."""

from __future__ import annotations

import pytest

from hwcheck import knowledge
from hwcheck.base.versions import parse_version
from hwcheck.engine.native import api_gaps
from hwcheck.probes.frameworks import TRAINER_PACKAGES
from hwcheck.recommendation import recommend

T4 = [{"index": 0, "name": "Tesla T4", "compute_capability": "7.5"}]
A100 = [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}]
H100 = [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]


def _gaps(gpus, frameworks, framework, driver="580.65.06"):
    facts = {
        "schema_version": 1,
        "gpus": gpus,
        "nvidia_driver": {"version": driver, "cuda": "13.0"},
        "frameworks": frameworks,
    }
    recommendation = recommend(facts, framework=framework)
    found = [f for f in recommendation.findings if f.id == "framework-api-too-old"]
    return recommendation, (found[0] if found else None)


def test_every_feature_row_names_a_release_and_cites_its_source():
    rows = knowledge.load("frameworks")["feature"]
    assert len(rows) >= 8
    for row in rows:
        assert parse_version(row["since"]), row
        # The frameworks, and the trainers by their facts keys (hwcheck/probes/frameworks.py).
        assert row["package"] in ("torch", "keras", "tensorflow", "jax", *TRAINER_PACKAGES)
        assert row["source"].strip() and row["api"].strip() and row["instead"].strip()


@pytest.mark.parametrize(
    ("version", "gap"),
    [("2.2.1", True), ("2.3.0", False), ("2.3.0+cu121", False), ("2.1.0+cu118", True), ("2.4.0", False)],
)
def test_grad_scaler_boundary_is_torch_2_3(version, gap):
    _, found = _gaps(T4, {"torch": {"version": version, "cuda": "11.8"}}, "torch")
    assert (found is not None) is gap
    if gap:
        assert "torch.amp.GradScaler('cuda') needs PyTorch 2.3" in found.message
        assert "torch.cuda.amp.GradScaler()" in found.message
        assert "pip install -U 'torch>=2.3'" in found.remedy


def test_bfloat16_autocast_and_matmul_precision_need_1_10_and_1_12():
    recommendation, found = _gaps(A100, {"torch": {"version": "1.9.0+cu111", "cuda": "11.1"}}, "torch")
    assert recommendation.policy == "mixed_bfloat16"
    assert "PyTorch 1.10 or newer (here 1.9.0+cu111)" in found.message
    assert "torch.set_float32_matmul_precision('high') needs PyTorch 1.12" in found.message
    assert "pip install -U 'torch>=1.12'" in found.remedy  # one upgrade covers both
    _, none = _gaps(A100, {"torch": {"version": "1.12.0+cu113", "cuda": "11.3"}}, "torch")
    assert none is None


def test_fp8_dtypes_need_torch_2_1_when_fp8_is_offered():
    # A source build of 2.0 against CUDA 12.1 on an H100: FP8 hardware and CUDA, no FP8 dtype.
    recommendation, found = _gaps(H100, {"torch": {"version": "2.0.0a0+gitc263bd4", "cuda": "12.1"}}, "torch")
    assert recommendation.fp8["available"]
    assert "torch.float8_e4m3fn" in found.message and "2.1" in found.message


def test_keras_3_loss_scaling_api_on_a_keras_2_install():
    frameworks = {
        "tensorflow": {"version": "2.15.0", "cuda_build": True, "cuda": "12.2"},
        "keras": {"version": "2.15.0"},
    }
    _, found = _gaps(T4, frameworks, "keras")
    assert "keras.optimizers.LossScaleOptimizer" in found.message
    assert "get_scaled_loss" in found.message


def test_tensorflow_before_2_4_lacks_the_non_experimental_api():
    frameworks = {"tensorflow": {"version": "2.3.1", "cuda_build": True, "cuda": "10.1"}}
    _, found = _gaps(T4, frameworks, "tensorflow", driver="418.39")
    assert "tf.keras.mixed_precision.experimental.set_policy" in found.message
    _, none = _gaps(
        T4, {"tensorflow": {"version": "2.4.0", "cuda_build": True, "cuda": "11.0"}}, "tensorflow"
    )
    assert none is None


def test_a_jax_older_than_its_cuda_plugin_gets_the_jaxlib_wheel_instead():
    gaps = api_gaps(
        {"framework": "jax", "backend": "jax", "device": "gpu", "compute_dtype": "bfloat16", "fp8": False},
        {"jax": "0.4.21"},
    )
    assert len(gaps["missing_apis"]) == 1 and "jax[cuda12]" in gaps["missing_apis"][0]
    assert "cuda12.cudnn89" in gaps["missing_apis"][0]
    assert api_gaps({"framework": "jax", "device": "gpu"}, {"jax": "0.4.22"})["missing_apis"] == []


def test_features_of_other_frameworks_or_decisions_never_apply():
    torch_cpu_float32 = {
        "framework": "torch",
        "backend": "torch",
        "device": "cpu",
        "compute_dtype": "float32",
    }
    assert api_gaps(torch_cpu_float32, {"torch": "1.5.0"}) == {"missing_apis": [], "api_upgrade": ""}
    unknown_version = {"framework": "torch", "backend": "torch", "device": "gpu", "loss_scaling": True}
    assert api_gaps(unknown_version, {"torch": None})["missing_apis"] == []


def test_hwcheck_config_warns_that_its_script_needs_a_newer_framework(tmp_path):
    import json

    from profiles import BY_NAME

    from conftest import run_hwcheck

    facts = tmp_path / "t4-torch21.json"
    facts.write_text(json.dumps(BY_NAME["t4-torch21-cu118-fp16-api-too-old"].facts), encoding="utf-8")
    result = run_hwcheck("config", "--framework", "torch", "--facts", str(facts), "-o", "-")
    assert result.returncode == 0 and "torch.amp.GradScaler(" in result.stdout
    assert "hwcheck: warning: the script fails on the installed framework:" in result.stderr
    assert "torch.amp.GradScaler('cuda') needs PyTorch 2.3" in result.stderr
    assert "pip install -U 'torch>=2.3'" in result.stderr
    # Written for float32, the script uses no GradScaler: no warning.
    plain = run_hwcheck(
        "config", "--framework", "torch", "--facts", str(facts), "-o", "-", "--policy", "float32"
    )
    assert plain.returncode == 0 and "fails on the installed framework" not in plain.stderr
