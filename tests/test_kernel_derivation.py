"""Which GPUs a framework build runs on, derived from its CUDA version and its build policy.

CUDA's rules (NVIDIA's architecture compatibility guides): a cubin sm_XY runs on GPUs of major X
and minor Y or higher; PTX compute_XY is JIT-compiled for any GPU of X.Y or higher; a toolkit
carries code only for the architectures it can target (rules/knowledge/nvidia.toml
[cuda_targets]). Each rule is tested at its boundary.
"""

from __future__ import annotations

import pytest

from hwcheck import knowledge
from hwcheck.base.versions import version_key
from hwcheck.engine import build_context
from hwcheck.recommendation import recommend

Build = knowledge.KernelBuild


def _path(build: knowledge.KernelBuild, capability: str) -> str | None:
    kernels = knowledge.gpu_kernels(build, capability)
    return kernels.path if kernels else None


# --------------------------------------------------------------------------- cubins


@pytest.mark.parametrize(
    ("sm", "capability", "path"),
    [
        (("sm_86",), "8.6", "native"),  # the same architecture
        (("sm_86",), "8.7", "native"),  # a cubin runs on a later minor of its major
        (("sm_87",), "8.6", "none"),  # ... a cubin one minor too high does not
        (("sm_80",), "9.0", "none"),  # ... nor on another major
        (("sm_90",), "8.9", "none"),
        (("sm_120",), "12.1", "native"),
        (("sm_100",), "12.0", "none"),  # Blackwell data centre code is another major than 12.x
    ],
)
def test_a_cubin_runs_on_its_major_at_an_equal_or_higher_minor(sm, capability, path):
    assert _path(Build(sm, ()), capability) == path


# --------------------------------------------------------------------------- PTX


@pytest.mark.parametrize(
    ("ptx", "capability", "path"),
    [
        (("compute_80",), "8.0", "ptx_jit"),
        (("compute_80",), "9.0", "ptx_jit"),  # PTX JIT-compiles forward to any newer GPU
        (("compute_80",), "12.0", "ptx_jit"),
        (("compute_80",), "7.5", "none"),  # ... never backward
        (("compute_86",), "8.0", "none"),  # ... not even one minor
    ],
)
def test_ptx_only_runs_on_its_architecture_and_every_newer_one(ptx, capability, path):
    assert _path(Build((), ptx), capability) == path


def test_a_cubin_wins_over_ptx_and_the_newest_applicable_one_is_named():
    kernels = knowledge.gpu_kernels(Build(("sm_70", "sm_80", "sm_86"), ("compute_90",)), "8.9")
    assert (kernels.path, kernels.architecture) == ("native", "sm_86")
    jit = knowledge.gpu_kernels(Build(("sm_80",), ("compute_80", "compute_90")), "10.0")
    assert (jit.path, jit.architecture) == ("ptx_jit", "compute_90")


def test_unknown_ptx_on_a_gpu_newer_than_every_cubin_is_said_to_be_unknown():
    # A listed build whose PTX no source states: a newer GPU runs it only if PTX was shipped.
    assert _path(Build(("sm_75", "sm_80"), None), "9.0") == "ptx_unknown"
    assert _path(Build(("sm_75", "sm_80"), None), "7.0") == "none"  # older than every architecture


# --------------------------------------------------------------------------- the CUDA version


@pytest.mark.parametrize(
    ("cuda", "capability", "path"),
    [
        # A toolkit older than the architecture: no cubin can be there, only PTX of older ones.
        ("12.4", "12.0", "ptx_unknown"),
        ("12.7", "12.0", "ptx_unknown"),
        ("12.8", "12.0", None),  # the first toolkit for Blackwell: a cubin may be there
        ("11.7", "9.0", "ptx_unknown"),
        ("11.8", "9.0", None),
        ("10.2", "8.6", "ptx_unknown"),
        ("11.0", "8.6", None),  # sm_80 code, which 11.0 can build, runs on 8.6
        ("11.0", "8.0", None),
        ("10.2", "8.0", "ptx_unknown"),
        # A toolkit newer than the architecture's last: nothing for it or anything older.
        ("12.0", "3.7", "none"),
        ("11.8", "3.7", None),
        ("13.0", "7.0", "none"),
        ("12.9", "7.0", None),
        ("13.0", "7.5", None),
        # Unknown: a capability the table does not list, or a CUDA without a minor version.
        ("12.8", "13.0", None),
        ("12", "12.0", None),
    ],
)
def test_a_build_without_an_architecture_list_is_bounded_by_its_cuda(cuda, capability, path):
    assert _path(Build(None, None, "a local build", (), cuda), capability) == path


def test_the_cuda_bound_says_why_and_which_toolkit_first_targets_the_gpu():
    kernels = knowledge.gpu_kernels(Build(None, None, "a local build", (), "12.4"), "12.0")
    assert (
        kernels.reason == "CUDA 12.4 cannot compile for compute capability 12.0 (first targeted by CUDA 12.8)"
    )
    assert "[cuda_targets]" in kernels.source and "a local build" in kernels.source
    gone = knowledge.gpu_kernels(Build(None, None, "", (), "13.0"), "6.1")
    assert (
        gone.reason == "CUDA 13.0 cannot compile for compute capability 6.1, nor for any older architecture"
    )


def test_a_known_ptx_list_with_the_cuda_bound_decides_without_a_cubin_list():
    # PyTorch's builder removed PTX from its wheels: a cu102 build on Ampere has nothing to run.
    assert _path(Build(None, (), "policy", (), "10.2"), "8.6") == "none"
    assert _path(Build(None, ("compute_70",), "policy", (), "10.2"), "8.6") == "ptx_jit"


def test_cuda_targets_reads_the_first_and_last_toolkit():
    assert knowledge.cuda_targets("12.8", "12.0") is True
    assert knowledge.cuda_targets("12.6", "12.0") is False
    assert knowledge.cuda_targets("11.8", "3.5") is True
    assert knowledge.cuda_targets("12.0", "3.5") is False
    assert knowledge.cuda_targets("12.9", "10.1") is True  # Thor, renumbered 11.0 by CUDA 13
    assert knowledge.cuda_targets("13.0", "10.1") is False
    assert knowledge.cuda_targets("13.0", "11.0") is True
    assert knowledge.cuda_targets(None, "8.0") is None
    assert knowledge.cuda_targets("12.4", "14.0") is None


def test_every_cuda_target_row_is_ordered_and_every_capability_has_a_family():
    rows = knowledge.load("nvidia")["cuda_targets"]["target"]
    families = {row["compute_capability"] for row in knowledge.load("nvidia")["architectures"]["capability"]}
    for row in rows:
        assert row["compute_capability"] in families
        if "last_cuda" in row:
            assert version_key(row["first_cuda"]) <= version_key(row["last_cuda"])


# --------------------------------------------------------------------------- policies agree with CUDA


def test_every_torch_policy_row_carries_only_what_its_cuda_can_target():
    for row in knowledge.load("torch")["arch_policy"]:
        for arch in row["sm"] + row.get("ptx", []):
            digits = arch.rpartition("_")[2]
            capability = f"{digits[:-1]}.{digits[-1]}"
            assert knowledge.cuda_targets(row["cuda"], capability) is not False, (row["cuda"], arch)


def test_every_tensorflow_wheel_carries_only_what_its_cuda_can_target():
    for row in knowledge.load("tensorflow")["build"]:
        for arch in row.get("sm", []) + row.get("ptx", []):
            digits = arch.rpartition("_")[2]
            assert knowledge.cuda_targets(row["cuda"], f"{digits[:-1]}.{digits[-1]}") is not False


def test_torch_policy_rows_are_sorted_and_name_their_source():
    for row in knowledge.load("torch")["arch_policy"]:
        numbers = [int(arch.removeprefix("sm_")) for arch in row["sm"]]
        assert numbers == sorted(numbers), row
        assert row["source"].strip()
    # one row per CUDA version and release: a row exists only where the list changed
    keys = [(row["cuda"], row["release_from"]) for row in knowledge.load("torch")["arch_policy"]]
    assert len(keys) == len(set(keys))


# --------------------------------------------------------------------------- PyTorch builds


@pytest.mark.parametrize(
    ("version", "cuda", "capability", "path"),
    [
        # nightlies take their CUDA version's policy at their release
        ("2.8.0.dev20250320+cu128", "12.8", "12.0", "native"),
        ("2.7.0.dev20250310+cu124", "12.4", "12.0", "none"),  # pytorch/pytorch#167244
        # releases no row names: 2.6 takes the 12.6 list, 1.x the builder's release branches
        ("2.6.0+cu126", "12.6", "12.0", "none"),
        ("1.12.1+cu102", "10.2", "8.6", "none"),  # CompVis/latent-diffusion#102
        ("1.12.1+cu113", "11.3", "8.6", "native"),
        ("1.7.1+cu110", "11.0", "8.6", "native"),  # sm_80 runs on 8.6
        # a CUDA version without a policy row: its CUDA alone decides where it can
        ("2.14.0.dev20260101+cu133", "13.3", "7.0", "none"),
        ("2.14.0.dev20260101+cu133", "13.3", "12.0", None),
        # local builds (a source checkout, NGC, Jetson) choose their own list
        ("2.5.0a0", "12.4", "12.0", "ptx_unknown"),
        ("2.3.0a0+ebedce2.nv24.02", "12.4", "8.6", None),
        ("2.8.0a0+git1234abc", "12.1", "3.7", "none"),
    ],
)
def test_a_torch_build_is_judged_by_its_cuda_and_policy(version, cuda, capability, path):
    variant = knowledge.torch_variant(version, cuda)
    assert _path(knowledge.torch_kernels(version, variant, cuda), capability) == path


@pytest.mark.parametrize(
    ("version", "local"),
    [
        ("2.6.0", False),
        ("2.6.0+cu124", False),
        ("2.1.0+cu121.with.pypi.cudnn", False),
        ("2.8.0.dev20250320+cu128", False),
        ("2.7.0rc1", False),
        ("2.5.0a0", True),
        ("2.8.0a0+gitabc1234", True),
        ("2.6.0a0+ecf3bae40a.nv25.01", True),
        ("", False),
        (None, False),
    ],
)
def test_local_builds_are_told_from_pytorchs_own(version, local):
    assert knowledge.local_build(version) is local


def test_the_policy_row_in_force_is_the_newest_before_the_release():
    assert knowledge.torch_build("2.7.1", "cu128")["sm"][0] == "sm_75"
    assert knowledge.torch_build("2.8.0", "cu128")["sm"][0] == "sm_70"
    assert knowledge.torch_build("2.10.0", "cu128")["sm"][0] == "sm_70"
    assert knowledge.torch_build("2.11.0", "cu128")["sm"][0] == "sm_75"
    # a release before its CUDA version's first row takes that first row
    assert knowledge.torch_build("2.6.0", "cu126")["release_from"] == "2.7"
    assert knowledge.torch_build("2.7.1", "cu128")["ptx"] is None  # not settled for 2.7 cu128
    assert knowledge.torch_build("2.10.0", "cu130")["ptx"] == ["compute_120"]
    assert knowledge.torch_build("2.8.0a0+gitabc", "cu128") is None
    assert knowledge.torch_build(None, "cu128") is None
    assert knowledge.torch_build("2.8.0", "cu133") is None
    old = knowledge.torch_build("1.12.1", "cu102")
    assert old["index_url"] is None and old["install"] is None  # no published index for cu102 here


def test_the_torch_finding_names_the_derivation_and_the_fix():
    facts = {
        "schema_version": 1,
        "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}],
        "nvidia_driver": {"version": "570.124.06", "cuda": "12.8"},
        "frameworks": {"torch": {"version": "2.5.0a0", "cuda": "12.4"}},
    }
    warning = next(
        f for f in recommend(facts, framework="torch").findings if f.id == "torch-kernels-only-through-ptx"
    )
    assert warning.severity == "warning"
    assert "a local build for CUDA 12.4" in warning.message
    assert "first targeted by CUDA 12.8" in warning.message
    assert "cu128" in warning.remedy
    facts["frameworks"]["torch"] = {"version": "2.7.0.dev20250310+cu124", "cuda": "12.4"}
    error = next(f for f in recommend(facts, framework="torch").findings if f.id == "torch-no-kernel-image")
    assert "sm_120 is not among the architectures the cu124 wheels carry" in error.message
    assert "--index-url https://download.pytorch.org/whl/cu128" in error.remedy


def test_a_torch_version_that_is_unknown_is_certain_only_when_no_release_of_its_variant_runs():
    gpu = [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}]
    facts = {"schema_version": 1, "gpus": gpu, "frameworks": {"torch": {"cuda": "12.4"}}}
    assert build_context(facts, framework="torch")["torch"]["gpus_without_kernels"]
    facts["frameworks"]["torch"] = {"cuda": "12.8"}
    torch = build_context(facts, framework="torch")["torch"]
    assert not torch["gpus_without_kernels"] and not torch["gpus_ptx_unknown"]


# --------------------------------------------------------------------------- TensorFlow and JAX builds


def test_tensorflows_own_build_info_list_wins_over_the_table():
    own = knowledge.tensorflow_kernels("2.21.0", ["sm_80", "sm_120", "compute_120"], "12.8")
    assert _path(own, "12.0") == "native"
    assert "build_info" in own.source
    assert _path(knowledge.tensorflow_kernels("2.21.0"), "12.0") == "ptx_jit"


def test_a_tensorflow_release_newer_than_the_table_takes_the_newest_build_configuration():
    build = knowledge.tensorflow_kernels("2.22.0.dev20260501", None, "12.5.1")
    assert build.sm == ("sm_60", "sm_70", "sm_80", "sm_89")
    assert "as of 2.21" in build.source
    assert _path(build, "12.0") == "ptx_jit"


def test_a_tensorflow_release_older_than_the_table_is_bounded_by_its_cuda():
    build = knowledge.tensorflow_kernels("2.2.0", None, "10.1")
    assert build.sm is None
    assert _path(build, "7.5") is None  # CUDA 10.1 can build Turing code
    assert _path(build, "8.6") == "none"  # the documented deviation: TF 1.x to 2.3 on Ampere


@pytest.mark.parametrize(
    ("jaxlib", "cuda", "capability", "path"),
    [
        ("0.4.9", "11", "5.0", "none"),  # 0.4.4 to 0.4.20 start at sm_52
        ("0.4.9", "11", "5.2", "native"),
        ("0.4.21", "12", "5.0", "native"),  # from 0.4.21 sm_50
        ("0.4.38", "12", "12.0", "ptx_jit"),  # compute_90
        ("0.6.0", "12", "12.0", "ptx_jit"),  # compute_120
        ("0.7.2", "13", "7.0", "none"),
        ("0.3.0", "11.1", "8.6", None),  # older than every row: CUDA 11.1 can build 8.6 code
    ],
)
def test_jaxlib_builds_follow_their_bazelrc(jaxlib, cuda, capability, path):
    assert _path(knowledge.jax_kernels(jaxlib, cuda), capability) == path


def test_jaxlib_without_kernels_for_a_gpu_above_its_floor_is_an_error():
    facts = {
        "schema_version": 1,
        "gpus": [{"index": 0, "name": "NVIDIA GeForce GTX 750 Ti", "compute_capability": "5.0"}],
        "frameworks": {
            "jax": {"version": "0.4.9", "jaxlib": "0.4.9+cuda11.cudnn86", "cuda_build": True, "cuda": "11"}
        },
    }
    recommendation = recommend(facts, framework="jax")
    error = next(f for f in recommendation.findings if f.id == "jax-gpu-below-minimum")
    assert "carries no kernels" in error.message and "sm_52" in error.message
    assert recommendation.device == "cpu"
