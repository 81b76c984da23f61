"""The advice for machines taken from real captures: policy, device, loss scaling, exact findings.

The table lives in tests/profiles.py. A part of a profile the shipped rules are known to get
wrong is marked xfail(strict=True) with the reason, so the suite stays green and a rules fix
that corrects it turns the test into an XPASS failure that asks for the mark to go.
"""

from __future__ import annotations

import pytest
from profiles import BY_NAME, PROFILES, Profile

from hwcheck.facts import validate_facts
from hwcheck.recommendation import Recommendation, recommend


def advice(profile: Profile) -> Recommendation:
    """The recommendation the rules engine gives the profile's machine."""
    return recommend(profile.facts, probes=profile.probes, framework=profile.framework, prefer=profile.prefer)


def by_part(part: str) -> list:
    """Every profile as a test parameter, xfail where the rules get `part` wrong."""
    return [
        pytest.param(
            profile,
            id=profile.name,
            marks=[pytest.mark.xfail(strict=True, reason=profile.wrong[part])]
            if part in profile.wrong
            else [],
        )
        for profile in PROFILES
    ]


def finding(recommendation: Recommendation, finding_id: str):
    """The finding with `finding_id` (the test fails when it is missing)."""
    found = [f for f in recommendation.findings if f.id == finding_id]
    assert found, f"no {finding_id} among {[f.id for f in recommendation.findings]}"
    return found[0]


def test_the_table_covers_at_least_thirty_distinct_machines():
    assert len(PROFILES) >= 30
    assert len(BY_NAME) == len(PROFILES), "profile names must be unique"
    assert {p.policy for p in PROFILES} == {"mixed_float16", "mixed_bfloat16", "float32"}
    assert {p.device for p in PROFILES} == {"gpu", "cpu", "tpu", "mps", "xpu"}


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_profile_facts_are_a_valid_facts_document(profile):
    validate_facts(profile.facts, profile.name)


@pytest.mark.parametrize("profile", by_part("decision"))
def test_policy_device_and_loss_scaling(profile):
    recommendation = advice(profile)
    assert (recommendation.policy, recommendation.device) == (profile.policy, profile.device), (
        recommendation.reasons
    )
    assert recommendation.loss_scaling is profile.loss_scaling
    assert str(recommendation) == profile.policy


@pytest.mark.parametrize("profile", by_part("findings"))
def test_exact_findings(profile):
    recommendation = advice(profile)
    assert {f.id for f in recommendation.findings} == profile.findings
    error_expected = any(f.severity == "error" for f in recommendation.findings)
    assert recommendation.has_errors is error_expected


@pytest.mark.parametrize("profile", by_part("remedies"))
def test_every_finding_says_what_to_do_and_every_reason_cites_facts(profile):
    recommendation = advice(profile)
    assert recommendation.reasons and all(r.message.strip() for r in recommendation.reasons)
    for item in recommendation.findings:
        assert item.message.strip() and "{" not in item.message, item
        if item.severity != "info":
            assert item.remedy and item.remedy.strip(), f"{item.id} has no remedy"


# --- messages that matter ------------------------------------------------------------


def test_mixed_generations_warning_names_both_gpus_and_the_weakest():
    recommendation = advice(BY_NAME["tf-guide-rtx-3090-plus-rtx-2080-ti"])
    warning = finding(recommendation, "gpu-mixed-generations")
    assert warning.severity == "warning"
    assert "RTX 3090" in warning.message and "RTX 2080 Ti" in warning.message
    assert "CC 7.5" in warning.message and "CC 8.6" in warning.message
    assert "CUDA_VISIBLE_DEVICES" in warning.remedy
    assert "RTX 2080 Ti" in recommendation.reasons[0].message  # the weakest GPU decides


def test_driver_too_old_names_both_versions_and_the_driver_that_fixes_it():
    recommendation = advice(BY_NAME["t4-cloud-vm-driver-515-tf216"])
    error = finding(recommendation, "driver-too-old-for-framework")
    assert error.severity == "error"
    for version in ("TensorFlow 2.16.1", "CUDA 12.3", "515.105.01", "11.7"):
        assert version in error.message
    # rules/knowledge/nvidia.toml [cuda_drivers]: CUDA 12.3 GA shipped with Linux driver 545.23.06.
    assert "545.23.06" in error.remedy
    assert "cannot be used" in recommendation.reasons[0].message


def test_driver_too_old_remedy_names_a_tensorflow_release_the_driver_can_run():
    error = finding(advice(BY_NAME["t4-cloud-vm-driver-515-tf216"]), "driver-too-old-for-framework")
    assert "2.14" in error.remedy


def test_cpu_only_tensorflow_with_gpus_gives_the_exact_reinstall_command():
    recommendation = advice(BY_NAME["rtx-3090-x2-with-tensorflow-cpu"])
    error = finding(recommendation, "tf-cpu-only-build")
    assert "tensorflow-cpu" in error.message and "RTX 3090" in error.message
    assert error.remedy == "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]==2.16.1'"


def test_driver_not_loaded_says_what_nvml_said_and_which_driver_to_install():
    error = finding(advice(BY_NAME["t4-on-pci-no-driver"]), "gpu-driver-not-loaded")
    assert "1 NVIDIA GPU" in error.message
    assert "(NVML) not found" in error.message
    assert "545.23.06" in error.remedy and "modprobe nvidia" in error.remedy


def test_container_without_gpus_names_the_container_and_the_docker_flag():
    error = finding(advice(BY_NAME["h100-host-container-without-gpus"]), "gpu-container-without-devices")
    assert "8 NVIDIA GPU" in error.message and "docker" in error.message
    assert "--gpus all" in error.remedy


def test_mig_warning_names_the_gpu_and_how_to_pick_an_instance():
    warning = finding(advice(BY_NAME["h100-mig-one-mig-device"]), "gpu-mig")
    assert "H100 80GB HBM3" in warning.message
    assert "MIG-" in warning.remedy and "nvidia-smi -L" in warning.remedy


def test_several_visible_mig_instances_are_named_with_the_one_cuda_uses():
    warning = finding(advice(BY_NAME["a100-40gb-mig-driver-510-tf214"]), "gpu-mig-several-instances")
    assert warning.message.startswith("2 MIG instances are visible")
    assert "GI 1 CI 0" in warning.message and "GI 2 CI 0" in warning.message
    assert "nvidia-smi -L lists NVIDIA A100-SXM4-40GB MIG device (GPU 0, GI 1 CI 0) first" in warning.message
    assert "CUDA_VISIBLE_DEVICES=MIG-" in warning.remedy


def test_gtx_16_warning_names_the_gpu():
    warning = finding(advice(BY_NAME["gtx-1660-ti-laptop-tf24"]), "gpu-turing-without-tensor-cores")
    assert "GTX 1660 Ti" in warning.message


def test_minor_version_compatibility_warning_names_the_versions():
    warning = finding(advice(BY_NAME["gcp-g2-l4-tf218"]), "driver-older-minor-version")
    assert "12.5" in warning.message and "550.90.07" in warning.message and "12.4" in warning.message


def test_windows_native_error_offers_wsl2():
    error = finding(advice(BY_NAME["windows-native-tf215-rtx-3080"]), "tf-windows-native-no-gpu")
    assert "2.15.0" in error.message and "WSL2" in error.remedy


def test_amx_cpu_bf16_advice_states_its_conditions():
    info = finding(advice(BY_NAME["sapphire-rapids-8480plus-tf216"]), "cpu-bf16-conditions")
    assert "TF_ENABLE_ONEDNN_OPTS" in info.remedy and "jit_compile" in info.remedy


def test_no_avx_error_names_the_cpu_and_the_crash():
    error = finding(advice(BY_NAME["opteron-6136-k10-no-avx-tf216"]), "cpu-missing-avx")
    assert "Opteron(tm) Processor 6136" in error.message and "Illegal instruction" in error.message


def test_torch_cpu_build_remedy_names_the_drivers_cuda():
    error = finding(advice(BY_NAME["torch-cpu-build-with-rtx-3090"]), "torch-cpu-only-build")
    assert "2.5.1+cpu" in error.message and "12.6" in error.remedy


def test_refused_bfloat16_preference_says_why():
    warning = finding(advice(BY_NAME["v100-prefer-bfloat16"]), "prefer-bfloat16-unsupported")
    assert "V100" in warning.message and "7.0" in warning.message and warning.remedy


def test_tf32_finding_is_right_for_pytorch():
    info = finding(advice(BY_NAME["torch-cuda-a100"]), "gpu-tf32-torch")
    assert "set_float32_matmul_precision" in info.remedy and "'highest'" in info.message


def test_install_advice_on_jetson_points_at_nvidias_jetson_wheels():
    info = finding(advice(BY_NAME["jetson-orin-nx-no-tensorflow"]), "tf-not-installed")
    assert "and-cuda" not in info.remedy and "jp" in info.remedy.lower()


def test_prefer_float16_on_hopper_keeps_float16_with_loss_scaling():
    recommendation = advice(BY_NAME["h100-prefer-float16"])
    assert recommendation.loss_scaling
    assert recommendation.why_not("mixed_bfloat16")


def test_reason_on_an_amx_cpu_with_old_tensorflow_does_not_deny_the_amx():
    reason = advice(BY_NAME["sapphire-rapids-tf211-too-old-for-amx"]).reasons[0].message
    assert "no AMX" not in reason and "2.11" in reason
