"""Compatibility lookups (hwcheck/engine/compat_*.py, knowledge) and what the rules make of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwcheck import knowledge
from hwcheck.emit.machine import precision_features
from hwcheck.engine import build_context
from hwcheck.probes import cpu as cpu_probe
from hwcheck.recommendation import recommend


@pytest.mark.parametrize(
    ("sm", "ptx", "capability", "runs"),
    [
        (["sm_80"], [], "8.6", True),  # SASS runs on a later minor of its major
        (["sm_80"], [], "9.0", False),  # ... never on another major
        (["sm_86"], [], "8.0", False),  # ... nor on an earlier minor
        (["sm_75"], ["compute_80"], "9.0", True),  # PTX is JIT-compiled for newer GPUs
        (["sm_75"], ["compute_80"], "7.0", False),
        (["sm_90"], [], "12.0", False),
        (["sm_120"], [], "12.1", True),
    ],
)
def test_architectures_run(sm, ptx, capability, runs):
    kernels = knowledge.gpu_kernels(knowledge.KernelBuild(tuple(sm), tuple(ptx)), capability)
    assert kernels is not None and kernels.runs is runs


def test_torch_variant_from_the_local_version_or_the_cuda():
    assert knowledge.torch_variant("2.6.0+cu126", None) == "cu126"
    assert knowledge.torch_variant(None, "12.8") == "cu128"
    assert knowledge.torch_variant("2.6.0+cpu", None) is None


def test_torch_fix_is_the_first_wheel_with_the_architecture():
    fix = knowledge.torch_fix("2.2.1", ["12.0"])
    assert (fix["version"], fix["variant"]) == ("2.7", "cu128")
    assert "download.pytorch.org/whl/cu128" in fix["install"]


def _facts(**parts):
    return {"schema_version": 1, "os": {"system": "Linux"}, **parts}


def test_driver_cuda_comes_from_the_table_when_nvml_gives_none():
    context = build_context(_facts(nvidia_driver={"version": "450.102.04"}))
    assert context["driver"]["cuda"] == "11.0"
    assert "table" in context["driver"]["cuda_from"]
    nvml = build_context(_facts(nvidia_driver={"version": "450.102.04", "cuda": "11.0"}))
    assert nvml["driver"]["cuda_from"] == "NVML"


def test_wsl_reads_the_windows_driver_numbering():
    tf = {"frameworks": {"tensorflow": {"version": "2.15.1", "cuda_build": True, "cuda": "12.2"}}}
    linux = build_context(_facts(**tf))["compat"]
    wsl = build_context({**_facts(**tf), "os": {"system": "Linux", "wsl": True}})["compat"]
    assert (linux["driver_platform"], wsl["driver_platform"]) == ("linux", "windows")
    # CUDA 12.2 GA ships Linux driver 535.54.03 and Windows driver 536.25.
    assert (linux["min_driver"], wsl["min_driver"]) == (
        knowledge.cuda_driver_minimum("12.2")["linux"],
        knowledge.cuda_driver_minimum("12.2")["windows"],
    )
    assert linux["min_driver"] != wsl["min_driver"]


GPU = {"gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}]}
TF_CUDA_10 = {
    "frameworks": {"tensorflow": {"version": "2.1.0", "cuda_build": True, "cuda": "10.1", "cudnn": "7"}}
}


@pytest.mark.parametrize(("driver", "error"), [("418.39", False), ("410.48", True)])
def test_cuda_10_has_no_minor_version_compatibility(driver, error):
    facts = _facts(**GPU, nvidia_driver={"version": driver}, **TF_CUDA_10)
    ids = {f.id for f in recommend(facts).findings if f.severity == "error"}
    assert ("driver-too-old-for-framework" in ids) is error


def _library(*copies):
    return {
        "version": copies[0][0],
        "source": copies[0][1],
        "found": [{"version": v, "source": s} for v, s in copies],
    }


TF_216 = {
    "frameworks": {"tensorflow": {"version": "2.16.1", "cuda_build": True, "cuda": "12.3", "cudnn": "8"}}
}


def test_a_cuda_12_copy_anywhere_is_enough_for_a_cuda_12_build():
    stale = _facts(
        **GPU,
        **TF_216,
        cuda=_library(("11.8", "pip"), ("12.4", "loader")),
        cudnn=_library(("8.9.7", "loader")),
    )
    only_11 = _facts(**GPU, **TF_216, cuda=_library(("11.8", "pip")), cudnn=_library(("8.9.7", "loader")))
    assert "cuda-major-mismatch" not in {f.id for f in recommend(stale).findings}
    assert recommend(stale).device == "gpu"
    errors = [f for f in recommend(only_11).findings if f.id == "cuda-major-mismatch"]
    assert errors and "12.3" in errors[0].message and "11.8" in errors[0].message


def test_tensorflow_cuda_falls_back_to_the_tested_build_and_says_so():
    facts = _facts(**GPU, frameworks={"tensorflow": {"version": "2.15.0", "cuda_build": True}})
    compat = build_context(facts)["compat"]
    assert compat["cuda"] == "12.2"
    assert "tested build configuration" in compat["cuda_from"]


# --------------------------------------------------------------------------- one kernel check


@pytest.mark.parametrize(
    ("framework", "version", "variant", "capability", "path", "architecture", "cited", "deviation"),
    [
        # TensorFlow wheels (sm/ptx from each wheel's build_info) and their [[kernel_deviation]] rows.
        ("tensorflow", "2.17.0", None, "8.9", "native", "sm_89", "tensorflow-2.17.0-", False),
        ("tensorflow", "2.15.0", None, "8.0", "ptx_jit", "compute_80", "tensorflow-2.15.0-", False),
        ("tensorflow", "2.20.0", None, "10.0", "ptx_jit", "compute_90", "tensorflow-2.20.0-", False),
        ("tensorflow", "2.17.0", None, "5.2", "none", "", "tensorflow-2.17.0-", False),
        ("tensorflow", "2.20.0", None, "12.0", "none", "", "#89272", True),  # its PTX JIT fails
        ("tensorflow", "2.21.0", None, "12.0", "ptx_jit", "compute_90", "tensorflow-2.21.0-", False),
        ("tensorflow", "2.3.0", None, "8.6", "none", "", "#43718", True),  # built with CUDA 10.1
        # PyTorch wheels (torch.toml [[arch_policy]]) and its [[kernel_deviation]] row for sm_35.
        ("torch", "2.7.0", "cu128", "12.0", "native", "sm_120", "runbook", False),
        ("torch", "2.0.1", "cu117", "3.7", "native", "sm_37", "release/2.0", False),
        ("torch", "2.0.1", "cu118", "12.0", "none", "", "release/2.0", False),
        ("torch", "2.0.1", "cu118", "3.5", "none", "", "issues/24205", True),
        ("torch", "1.13.1", "cu117", "3.5", "none", "", "issues/24205", True),
    ],
)
def test_one_kernel_check_answers_for_every_framework_build(
    framework, version, variant, capability, path, architecture, cited, deviation
):
    if framework == "tensorflow":
        build = knowledge.tensorflow_kernels(version)
    else:
        build = knowledge.torch_kernels(version, variant)
    kernels = knowledge.gpu_kernels(build, capability)
    assert (kernels.path, kernels.architecture, kernels.deviation) == (path, architecture, deviation)
    assert kernels.runs is (path != "none")
    assert cited in kernels.source


def test_the_kernel_check_does_not_guess_without_an_architecture_list_or_capability():
    assert knowledge.gpu_kernels(knowledge.tensorflow_kernels("2.3.0"), "7.0") is None
    assert knowledge.gpu_kernels(knowledge.torch_kernels("2.8.0a0+gitabc1234", "cu128"), "7.0") is None
    assert knowledge.gpu_kernels(knowledge.tensorflow_kernels("2.17.0"), None) is None


def test_a_deviation_covers_only_its_releases_and_capabilities():
    ptx_fails = knowledge.KernelDeviation("12.0", None, "ptx_jit_fails", "a report")
    build = knowledge.KernelBuild(("sm_80",), ("compute_90",), "a build", (ptx_fails,))
    assert knowledge.gpu_kernels(build, "10.0").path == "ptx_jit"  # below the deviation's range
    assert knowledge.gpu_kernels(build, "12.0") == knowledge.GpuKernels("none", "", "a report", True)
    assert knowledge.gpu_kernels(build, "8.6").path == "native"
    rows = knowledge.load("tensorflow")["kernel_deviation"]
    assert not knowledge.tensorflow_kernels("2.21.0").deviations
    assert len(knowledge.tensorflow_kernels("2.20.1").deviations) == 1
    assert all(row["source"] for row in rows)


def _tensorflow_gpu(version, name, capability):
    return _facts(
        gpus=[{"index": 0, "name": name, "compute_capability": capability}],
        frameworks={"tensorflow": {"version": version, "cuda_build": True, "cuda": "12.3"}},
    )


@pytest.mark.parametrize(
    ("version", "name", "capability", "listed_in"),
    [
        ("2.20.0", "NVIDIA GeForce RTX 5090", "12.0", "gpus_without_kernels"),
        ("2.17.0", "NVIDIA GeForce GTX 980", "5.2", "gpus_without_arch"),
        ("2.15.0", "NVIDIA H100 80GB HBM3", "9.0", "gpus_ptx_jit"),
        ("2.15.0", "NVIDIA A100-SXM4-80GB", "8.0", None),  # JIT from compute_80, without the warning
        ("2.17.0", "NVIDIA GeForce RTX 4090", "8.9", None),
    ],
)
def test_the_three_tensorflow_gpu_lists_come_from_the_one_kernel_check(version, name, capability, listed_in):
    tf = build_context(_tensorflow_gpu(version, name, capability))["tf"]
    lists = ("gpus_without_kernels", "gpus_without_arch", "gpus_ptx_jit")
    assert [key for key in lists if tf[key]] == ([listed_in] if listed_in else [])


# --------------------------------------------------------------------------- fast CPU bfloat16

CPUINFO = Path(__file__).parent / "fixtures" / "cpuinfo"


@pytest.mark.parametrize(
    ("dump", "fast", "flag"),
    [
        ("intel-sapphirerapids-xeon-platinum-8480plus.txt", True, "amx_bf16"),
        ("amd-zen4-epyc-9654.txt", False, ""),  # avx512_bf16 without AMX
        ("arm-graviton3-neoverse-v1.txt", False, ""),  # Arm bf16
        ("intel-haswell-xeon-e5-2680v3.txt", False, ""),
    ],
)
def test_cpu_fast_bf16_comes_from_the_cpu_features_table(dump, fast, flag):
    facts = _facts(cpu=cpu_probe.load_cpuinfo(CPUINFO / dump))
    cpu = build_context(facts)["cpu"]
    assert (cpu["fast_bf16"], cpu["bf16_flag"]) == (fast, flag)
    assert precision_features(facts, "cpu")["bfloat16"] is fast
    assert (recommend(facts, framework="tensorflow").policy == "mixed_bfloat16") is fast


def test_no_shipped_rule_tests_a_cpu_flag_for_fast_bfloat16_itself():
    rules = knowledge.rules_dir() / "policy"
    for path in rules.glob("*.toml"):
        assert "amx_bf16' in cpu.flags" not in path.read_text(encoding="utf-8"), path.name
