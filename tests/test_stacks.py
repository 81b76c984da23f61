"""Compiler stacks, kernel libraries, low-precision recipes and a model's own precision (issue 36,
items 4 to 6): torch.compile's Triton floor, a C compiler and libcuda.so, FlashAttention,
xformers, bitsandbytes and Transformer Engine against the GPUs, recommendation.fp8.recipes, and
T5-family checkpoints on GPUs without bfloat16.

The machines are replayed from facts recorded on real ones (tests/fixtures/facts, with their
sources in its README) or reconstructed from public issues (tests/corpus/cases, sources in
cases.toml); the kernel library's fat binary is a real nvcc build (tests/fixtures/fatbin).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.probes import stacks as stacks_probe
from hwcheck.recommendation import recommend

CASES = ROOT / "tests" / "corpus" / "cases"
RTX5090 = CASES / "healthy-torch-nightly-cu128-rtx5090.json"  # Hellod035/LeggedLab#26
B200 = CASES / "healthy-fp8-b200-torch280-cu128.json"  # vllm-project/vllm#26825
P100 = CASES / "torch-compile-2x-p100-sxm2-vllm.json"  # vllm-project/vllm#14547
A10G = CASES / "healthy-jax0433-aws-8xa10g.json"
H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"
V100 = FIXTURES / "facts" / "v100-torch241-trainers.json"
T4 = FIXTURES / "facts" / "t4-torch201-trainers.json"
FATBIN = FIXTURES / "fatbin" / "nvcc13-sm80-sm87-compute90.so"  # sm_80 sm_87 compute_90


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def advise(facts: dict, framework: str = "torch"):
    return recommend(facts, framework=framework)


def findings(recommendation) -> dict[str, object]:
    return {finding.id: finding for finding in recommendation.findings}


# --- recommendation.fp8.recipes ----------------------------------------------------------------


def test_mxfp8_runs_on_a_b200_and_not_on_an_rtx_5090():
    b200 = advise(load(B200)).fp8["recipes"]
    rtx = advise(load(RTX5090)).fp8["recipes"]
    assert b200["mxfp8"]["available"] is True and b200["nvfp4"]["available"] is True
    assert rtx["mxfp8"]["available"] is False
    assert "not yet supported on compute capability 12.0" in rtx["mxfp8"]["reason"]
    assert "RTX 5090 (CC 12.0)" in rtx["mxfp8"]["reason"]
    # Per-tensor FP8 runs on both.
    for recipes in (b200, rtx):
        assert recipes["fp8_delayed_scaling"]["available"] is True
        assert recipes["fp8_current_scaling"]["available"] is True
    assert all(
        row["source"].startswith("https://nvidia.github.io/TransformerEngine/") for row in rtx.values()
    )


def test_block_scaling_needs_cuda_12_9_and_nvfp4_is_partial_on_12_0():
    rtx = advise(load(RTX5090)).fp8["recipes"]  # torch on CUDA 12.8
    assert (
        rtx["fp8_block_scaling"]["available"] is False and "CUDA 12.9" in rtx["fp8_block_scaling"]["reason"]
    )
    assert rtx["nvfp4"]["available"] is False and "only in part" in rtx["nvfp4"]["reason"]


def test_hopper_runs_per_tensor_fp8_but_not_the_blackwell_recipes():
    recipes = advise(load(H100)).fp8["recipes"]
    assert recipes["fp8_delayed_scaling"]["available"] is True
    assert recipes["mxfp8"]["available"] is False and "10.0 or higher" in recipes["mxfp8"]["reason"]


def test_without_fp8_every_recipe_is_false_for_the_same_reason():
    recommendation = advise(load(A10G), "jax")
    assert recommendation.fp8["available"] is False
    for row in recommendation.fp8["recipes"].values():
        assert row == {**row, "available": False, "reason": recommendation.fp8["reason"]}


def test_an_unreadable_cuda_leaves_every_recipe_unknown():
    facts = load(B200)
    del facts["frameworks"]["torch"]["cuda"]
    facts["frameworks"]["torch"]["version"] = "2.8.0"
    recommendation = advise(facts)
    assert recommendation.fp8["available"] is None
    assert {row["available"] for row in recommendation.fp8["recipes"].values()} == {None}


def test_the_json_report_carries_the_recipes_and_validates(tmp_path):
    result = run_hwcheck("doctor", "--json", "--facts", str(B200), "--framework", "torch")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["recommendation"]["fp8"]["recipes"]["mxfp8"]["available"] is True
    from hwcheck.facts import schema_problem

    assert schema_problem(report, "report") is None


# --- torch.compile ----------------------------------------------------------------------------------


def test_a_p100_with_torch_2_gets_a_warning_naming_torch_compile():
    facts = load(P100)
    # vllm-project/vllm#8626: torch 2.3.1+cu121 on Tesla P100s.
    facts["frameworks"]["torch"] = {"version": "2.3.1+cu121", "cuda": "12.1"}
    found = findings(advise(facts))
    warning = found["torch-compile-gpu-too-old"]
    assert warning.severity == "warning"
    assert "torch.compile" in warning.message and "Tesla P100-SXM2-16GB (CC 6.0)" in warning.message
    assert "PyTorch 2.3.1+cu121 stops" in warning.message and "compute capability 7.0" in warning.message


def test_a_p100_with_an_unread_torch_version_says_what_to_run():
    warning = findings(advise(load(P100)))["torch-compile-gpu-too-old"]
    assert "import torch; print(torch.__version__)" in warning.message


def test_torch_1_has_no_torch_compile_and_newer_gpus_get_no_warning():
    facts = load(P100)
    facts["frameworks"]["torch"] = {"version": "1.13.1+cu117", "cuda": "11.7"}
    assert "torch-compile-gpu-too-old" not in findings(advise(facts))
    assert "torch-compile-gpu-too-old" not in findings(advise(load(V100)))
    assert "torch-compile-gpu-too-old" not in findings(advise(load(P100), "jax"))


def test_turing_is_told_triton_has_no_bfloat16():
    found = findings(advise(load(T4)))
    assert found["torch-compile-no-bf16"].severity == "info"
    assert "Tesla T4 (CC 7.5)" in found["torch-compile-no-bf16"].message
    assert "torch-compile-no-bf16" not in findings(advise(load(H100)))


@pytest.mark.parametrize(
    ("toolchain", "expected"),
    [
        (
            {"c_compiler": "", "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
            {"torch-compile-no-c-compiler"},
        ),
        ({"c_compiler": "/usr/bin/gcc", "libcuda": ""}, {"torch-compile-no-libcuda"}),
        ({"c_compiler": "/usr/bin/gcc", "libcuda": "/usr/lib64/libcuda.so.1"}, set()),
        ({}, set()),  # unknown: nothing said
    ],
)
def test_a_missing_compiler_or_libcuda_is_named_only_when_known(toolchain, expected):
    facts = {**load(V100), "toolchain": toolchain}
    said = {
        key
        for key in findings(advise(facts))
        if key in ("torch-compile-no-c-compiler", "torch-compile-no-libcuda")
    }
    assert said == expected


# --- kernel libraries ---------------------------------------------------------------------------------


def test_flash_attention_beside_no_supported_gpu_is_a_finding():
    found = findings(advise(load(CASES / "flash-attn260-v100s-minference.json")))
    warning = found["kernel-library-gpu-unsupported"]
    assert warning.severity == "warning"
    assert (
        "FlashAttention 2.6.0.post1" in warning.message
        and "no GPU the process sees is one" in warning.message
    )
    assert "Tesla V100S-PCIE-32GB (CC 7.0): below compute capability 8.0" in warning.message
    assert "attn_implementation='sdpa'" in (warning.remedy or "")


def test_flash_attention_on_supported_gpus_says_nothing():
    facts = {**load(H100), "kernel_libraries": {"flash-attn": {"version": "2.7.4.post1"}}}
    assert not {key for key in findings(advise(facts)) if key == "kernel-library-gpu-unsupported"}


def test_flash_attention_1_keeps_turing():
    facts = {**load(T4), "kernel_libraries": {"flash-attn": {"version": "1.0.9"}}}
    assert "kernel-library-gpu-unsupported" not in findings(advise(facts))
    facts["kernel_libraries"]["flash-attn"]["version"] = "2.5.8"
    assert "kernel-library-gpu-unsupported" in findings(advise(facts))


def _site_with(tmp_path: Path, dist: str, version: str, library: str, requires: str = "") -> Path:
    site = tmp_path / "site"
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    metadata = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
    if requires:
        metadata += f"Requires-Dist: {requires}\n"
    (info / "METADATA").write_text(metadata + "\n")
    target = site / library
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FATBIN, target)
    return site


def test_the_probe_reads_a_library_s_version_torch_pin_and_fat_binary(tmp_path):
    site = _site_with(tmp_path, "xformers", "0.0.28.post3", "xformers/_C.so", "torch ==2.5.1")
    result = stacks_probe.probe(site_dirs=[str(site)])
    entry = result.facts["kernel_libraries"]["xformers"]
    assert entry["version"] == "0.0.28.post3" and entry["requires_torch"] == "==2.5.1"
    assert entry["sm"] == ["sm_80", "sm_87"] and entry["ptx"] == ["compute_90"] and entry["complete"] is True


def test_a_library_without_kernels_for_the_gpu_and_built_for_another_torch(tmp_path):
    site = _site_with(tmp_path, "xformers", "0.0.28.post3", "xformers/_C.so", "torch ==2.5.1")
    read = stacks_probe.probe(site_dirs=[str(site)]).facts["kernel_libraries"]
    facts = {**load(T4), "kernel_libraries": read}  # torch 2.0.1 on a Tesla T4 (CC 7.5)
    found = findings(advise(facts))
    assert "carry no kernels" in found["kernel-library-gpu-unsupported"].message
    assert "sm_80 sm_87 compute_90" in found["kernel-library-gpu-unsupported"].message
    assert "torch==2.5.1" in found["xformers-torch-mismatch"].message
    assert "2.0.1+cu117" in found["xformers-torch-mismatch"].message
    # On an H100 the PTX for compute_90 runs: no kernel warning.
    on_hopper = findings(advise({**load(H100), "kernel_libraries": read}))
    assert "kernel-library-gpu-unsupported" not in on_hopper


def test_bitsandbytes_and_transformer_engine_name_their_floor():
    facts = copy.deepcopy(load(P100))
    facts["frameworks"]["torch"] = {"version": "2.3.1+cu121", "cuda": "12.1"}
    facts["kernel_libraries"] = {
        "bitsandbytes": {"version": "0.48.1"},
        "transformer-engine-cu12": {"version": "2.8.0"},
    }
    found = findings(advise(facts))
    message = found["kernel-library-gpu-unsupported"].message
    assert "bitsandbytes" not in message  # 6.0 is its floor from 0.48.0
    assert "Transformer Engine 2.8.0 runs on compute capability 8.0 or higher" in message


def test_the_compiler_is_found_as_triton_looks_for_it(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    clang = folder / "clang"
    clang.write_text("#!/bin/sh\n")
    clang.chmod(0o755)
    assert stacks_probe._compiler({"PATH": str(folder)}) == str(clang)
    assert stacks_probe._compiler({"PATH": str(tmp_path)}) == ""
    assert stacks_probe._compiler({"PATH": "", "CC": str(clang)}) == str(clang)
    # Inductor's C++ backend looks for $CXX, else g++ (clang++ on macOS): a C compiler is not one.
    cxx = {"variable": "CXX", "names": stacks_probe.CXX_COMPILERS}
    assert stacks_probe._compiler({"PATH": str(folder)}, **cxx) == ""
    gxx = folder / "g++"
    gxx.write_text("#!/bin/sh\n")
    gxx.chmod(0o755)
    assert stacks_probe._compiler({"PATH": str(folder)}, **cxx) == str(gxx)
    assert stacks_probe._compiler({"PATH": str(folder), "CXX": "/nowhere/c++"}, **cxx) == ""


def test_libcuda_is_found_in_the_loader_cache_or_ld_library_path(tmp_path):
    library = tmp_path / "libcuda.so.1"
    library.write_bytes(b"")
    assert stacks_probe._libcuda({}, {"libcuda.so.1": [str(library)]}) == str(library)
    assert stacks_probe._libcuda({"LD_LIBRARY_PATH": str(tmp_path)}, {}) == str(library)
    assert stacks_probe._libcuda({}, {}) == ""


# --- the model's own precision --------------------------------------------------------------------

T5_BASE = FIXTURES / "models" / "t5-base.json"  # google-t5/t5-base config.json


@pytest.fixture
def t5(tmp_path: Path) -> Path:
    """A model folder holding T5 base's config.json."""
    folder = tmp_path / "t5-base"
    folder.mkdir()
    shutil.copy(T5_BASE, folder / "config.json")
    return folder


def test_config_with_t5_on_a_v100_warns_of_float16_overflow(tmp_path, t5):
    script = tmp_path / "train.py"
    result = run_hwcheck(
        "config", "--framework", "torch", "--model", str(t5), "--facts", str(V100), "-o", str(script)
    )
    assert result.returncode == 0, result.stderr
    warning, switched = [line for line in result.stderr.splitlines() if "overflow" in line]
    assert "float16" in warning and "float32" in warning
    assert "Tesla V100-SXM2-16GB (CC 7.0) has no bfloat16" in warning
    # ... and config writes float32 rather than the float16 it warns of.
    assert switched.startswith("hwcheck: warning: float32 is written instead of mixed_float16")


def test_t5_on_a_gpu_with_bfloat16_gets_no_warning(tmp_path, t5):
    result = run_hwcheck(
        "config",
        "--framework",
        "torch",
        "--model",
        str(t5),
        "--facts",
        str(H100),
        "-o",
        str(tmp_path / "t.py"),
    )
    assert result.returncode == 0 and "overflow" not in result.stderr


def test_doctor_model_records_the_model_and_replays_it(tmp_path, t5):
    result = run_hwcheck("doctor", "--json", "--model", str(t5), "--facts", str(V100), "--framework", "torch")
    report = json.loads(result.stdout)
    assert report["facts"]["model"] == {"source": str(t5), "model_type": "t5", "torch_dtype": None}
    ids = [finding["id"] for finding in report["recommendation"]["findings"]]
    assert "model-overflows-float16" in ids
    replay = tmp_path / "report.json"
    replay.write_text(result.stdout)
    again = run_hwcheck("doctor", "--json", "--facts", str(replay), "--framework", "torch")
    assert "model-overflows-float16" in again.stdout


def test_a_model_of_another_family_says_nothing(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "torch_dtype": "bfloat16"}))
    result = run_hwcheck(
        "doctor", "--json", "--model", str(config), "--facts", str(V100), "--framework", "torch"
    )
    assert result.returncode == 0 and "model-overflows-float16" not in result.stdout


def test_a_bad_model_config_is_a_one_line_error(tmp_path):
    config = tmp_path / "config.json"
    config.write_text("[1, 2]")
    result = run_hwcheck("doctor", "--model", str(config), "--facts", str(V100))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "--model" in line and "not a model config" in line


def test_bitsandbytes_dropped_maxwell_from_its_wheels_in_0_48():
    # A GTX 980 (Maxwell, compute capability 5.2; bitsandbytes-foundation/bitsandbytes#1755 names it).
    facts = {
        "schema_version": 1,
        "gpus": [
            {"index": 0, "vendor": "nvidia", "name": "NVIDIA GeForce GTX 980", "compute_capability": "5.2"}
        ],
        "frameworks": {"torch": {"version": "2.7.1+cu126", "cuda": "12.6"}},
        "kernel_libraries": {"bitsandbytes": {"version": "0.47.0"}},
    }
    assert "kernel-library-gpu-unsupported" not in findings(advise(facts))
    facts["kernel_libraries"]["bitsandbytes"]["version"] = "0.48.1"
    message = findings(advise(facts))["kernel-library-gpu-unsupported"].message
    assert "bitsandbytes 0.48.1 runs on NVIDIA GPUs of compute capability 6.0 or higher" in message
    # A version that could not be read decides nothing.
    facts["kernel_libraries"]["bitsandbytes"]["version"] = None
    assert "kernel-library-gpu-unsupported" not in findings(advise(facts))


def test_fit_with_t5_on_a_v100_warns_too_and_not_when_the_policy_is_given():
    advised = run_hwcheck("fit", "--model", str(T5_BASE), "--facts", str(V100))
    assert advised.returncode == 0, advised.stderr
    assert "overflow float16's range" in advised.stderr
    chosen = run_hwcheck("fit", "--model", str(T5_BASE), "--facts", str(V100), "--policy", "float32")
    assert chosen.returncode == 0 and "overflow" not in chosen.stderr


def test_doctor_shows_what_the_stacks_probe_found():
    from hwcheck.render.stacks_rows import stacks

    facts = {"toolchain": {"c_compiler": "/usr/bin/gcc", "libcuda": ""}, "kernel_libraries": {}}
    assert stacks(facts) == "C compiler /usr/bin/gcc; libcuda.so not found; no kernel library " + (
        "(flash-attn, xformers, bitsandbytes, TE)"
    )
    shown = run_hwcheck("doctor", "--facts", str(CASES / "flash-attn260-v100s-minference.json"))
    assert any(
        line.split()[1:3] == ["stacks", "flash-attn"] for line in shown.stdout.splitlines() if line.split()
    )


def test_gpu_only_kernel_libraries_and_a_missing_cxx_compiler_on_a_cpu_machine_warn():
    # Recorded on the project's VM (tests/fixtures/facts/README.md): no compiler on PATH and a
    # FlashAttention beside a CPU-only torch. torch.compile on the CPU needs a C++ compiler.
    recorded = json.loads((FIXTURES / "facts" / "cpu-torch213-flash-attn-no-cxx.json").read_text())
    ids = {f.id for f in recommend(recorded, framework="torch").findings}
    assert {"torch-compile-cpu-no-cxx-compiler", "kernel-library-no-gpu"} <= ids
    # Healthy twins: a compiler found and no GPU-only library; an unknown compiler says nothing.
    healthy = {**recorded, "toolchain": {"c_compiler": "/usr/bin/gcc", "cxx_compiler": "/usr/bin/g++"}}
    healthy["kernel_libraries"] = {}
    ids = {f.id for f in recommend(healthy, framework="torch").findings}
    assert not ids & {"torch-compile-cpu-no-cxx-compiler", "kernel-library-no-gpu"}
    unknown = {k: v for k, v in recorded.items() if k not in ("toolchain", "kernel_libraries")}
    ids = {f.id for f in recommend(unknown, framework="torch").findings}
    assert "torch-compile-cpu-no-cxx-compiler" not in ids
    # The same library where training runs on a GPU is judged by the GPU, not by this rule.
    a100 = json.loads((FIXTURES / "facts" / "a100-sxm4x2-driver555-torch231.json").read_text())
    with_library = {**a100, "kernel_libraries": recorded["kernel_libraries"]}
    assert "kernel-library-no-gpu" not in {f.id for f in recommend(with_library, framework="torch").findings}
