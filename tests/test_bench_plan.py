"""How hwcheck bench plans its runs: the device, the TF32 variant, each child's environment and switches."""

from __future__ import annotations

import json

import pytest

from hwcheck.base.errors import InputError
from hwcheck.measure.runner import VARIANTS, Worker, child_environment, select_variants
from hwcheck.measure.target import measured_device as _target

H100 = {
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}],
    "frameworks": {"torch": {"version": "2.11.0", "cuda": "13.0"}},
}
V100 = {"gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}]}
BY_NAME = {v.name: v for v in VARIANTS}


def test_tf32_runs_only_on_a_gpu_of_compute_capability_8_or_more():
    assert _target("auto", H100, "gpu", "torch") == ("gpu", "NVIDIA H100 80GB HBM3", None)
    kind, _name, reason = _target("auto", V100, "gpu", "keras")
    assert kind == "gpu" and "below compute capability 8.0" in reason and "7.0" in reason
    assert _target("auto", H100, "cpu", "torch")[2] == "no TF32 on a CPU"


def test_auto_follows_the_recommended_device_and_gpu_needs_one():
    assert _target("auto", {"cpu": {"model": "Some CPU"}}, "cpu", "torch")[:2] == ("cpu", "Some CPU")
    assert _target("cpu", H100, "gpu", "torch")[0] == "cpu"
    with pytest.raises(InputError, match="no GPU was found"):
        _target("gpu", {"gpus": []}, "cpu", "torch")
    cpu_build = {**H100, "frameworks": {"torch": {"version": "2.13.0+cpu", "cuda": None}}}
    with pytest.raises(InputError, match="CPU-only build"):
        _target("gpu", cpu_build, "gpu", "torch")


def test_each_child_gets_its_environment_before_the_framework_loads():
    strict, _ = child_environment("torch", BY_NAME["float32"], "gpu")
    assert strict["NVIDIA_TF32_OVERRIDE"] == "0"
    tf32, _ = child_environment("torch", BY_NAME["float32+tf32"], "gpu")
    assert "NVIDIA_TF32_OVERRIDE" not in tf32
    on_cpu, notes = child_environment("torch", BY_NAME["mixed_bfloat16"], "cpu")
    assert on_cpu["CUDA_VISIBLE_DEVICES"] == "-1" and notes == []
    keras_fp16, notes = child_environment("tensorflow", BY_NAME["mixed_float16"], "cpu")
    assert keras_fp16["KERAS_BACKEND"] == "tensorflow"
    assert keras_fp16["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert "oneDNN" in notes[0]
    keras_gpu, notes = child_environment("tensorflow", BY_NAME["mixed_float16"], "gpu")
    assert "TF_ENABLE_ONEDNN_OPTS" not in keras_gpu and notes == []


def test_policies_narrow_the_variants_in_the_standard_order():
    names = [v.name for v in select_variants("mixed_float16-noscale, float32")]
    assert names == ["float32", "mixed_float16-noscale"]
    with pytest.raises(InputError, match="names no precision"):
        select_variants(" , ")


SWITCHES = """
import json, os, torch

def make_step(policy):
    record = {
        "precision": torch.get_float32_matmul_precision(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "override": os.environ.get("NVIDIA_TF32_OVERRIDE"),
    }
    with open(os.environ["SWITCHES_FILE"], "w") as handle:
        json.dump(record, handle)
    return lambda: 1.0
"""


@pytest.mark.parametrize(
    ("variant", "precision", "allowed"), [("float32", "highest", False), ("float32+tf32", "high", True)]
)
def test_the_child_sets_torchs_tf32_switches(tmp_path, variant, precision, allowed):
    # The switches are set for a GPU run; torch sets them the same way without one.
    script = tmp_path / "switches.py"
    script.write_text(SWITCHES)
    record = tmp_path / "switches.json"
    env, _ = child_environment("torch", BY_NAME[variant], "gpu")
    env["SWITCHES_FILE"] = str(record)
    job = {
        "framework": "torch",
        "workload": None,
        "script": str(script),
        "policy": "float32",
        "tf32": BY_NAME[variant].tf32,
        "loss_scaling": False,
        "warmup": 0,
        "steps": 2,
        "device": "gpu",
        "env": env,
    }
    worker = Worker(job, 120, lambda done: None)
    assert worker.loaded()
    worker.batch(job["steps"])
    result = worker.finish()
    assert result["status"] == "ok", result["reason"]
    switches = json.loads(record.read_text())
    assert switches["precision"] == precision
    assert switches["allow_tf32"] is allowed
    assert switches["override"] == (None if allowed else "0")


def test_gpu_target_takes_tf32_from_the_tables_and_the_visible_gpus():
    from conftest import FIXTURES, ROOT

    h100 = json.loads((FIXTURES / "facts/h100-anchor-torch211.json").read_text())
    v100 = json.loads((ROOT / "tests/emitted/facts/v100x8-tf216.json").read_text())
    assert _target("auto", h100, "gpu", "torch") == ("gpu", "NVIDIA H100 80GB HBM3", None)
    device, _name, reason = _target("auto", v100, "gpu", "torch")
    assert device == "gpu" and reason == "no TF32 below compute capability 8.0 (this GPU has 7.0)"
    # CUDA_VISIBLE_DEVICES=-1 hides the H100: there is no GPU to measure on.
    hidden = {**h100, "environment": {"CUDA_VISIBLE_DEVICES": "-1"}}
    assert _target("auto", hidden, "cpu", "torch")[0] == "cpu"
    with pytest.raises(InputError, match="CUDA_VISIBLE_DEVICES hides every GPU"):
        _target("gpu", hidden, "cpu", "torch")


def _corpus_facts(name: str) -> dict:
    from conftest import ROOT

    return json.loads((ROOT / "tests/corpus/cases" / f"{name}.json").read_text())


def test_apple_and_intel_gpus_are_measured_on_mps_and_xpu_with_torch():
    m4 = _corpus_facts("healthy-macos-m4-torch26")
    arc = _corpus_facts("healthy-arc-a770-torch212-xpu")
    assert _target("auto", m4, "mps", "torch") == ("mps", "Apple M4", "no TF32 on the Apple GPU (MPS)")
    assert _target("xpu", arc, "xpu", "torch") == ("xpu", "Intel Arc A770", "no TF32 on the Intel GPU (XPU)")
    # Asked for the CPU, or advised it: the CPU.
    assert _target("cpu", m4, "mps", "torch")[0] == "cpu"
    assert _target("auto", arc, "cpu", "torch")[0] == "cpu"
    # Only PyTorch drives these devices in hwcheck bench.
    with pytest.raises(InputError, match=r"mps \(Apple GPU \(MPS\)\) is measured with PyTorch only"):
        _target("mps", m4, "mps", "keras")


def test_an_absent_or_unusable_mps_or_xpu_device_is_a_clear_error():
    linux = {"os": {"system": "Linux"}, "cpu": {"model": "Some CPU"}, "gpus": []}
    with pytest.raises(
        InputError, match=r"mps asked for, but this machine \(Linux\) has no Apple GPU \(MPS\)"
    ):
        _target("mps", linux, "cpu", "torch")
    with pytest.raises(
        InputError, match=r"xpu asked for, but this machine \(Linux\) has no Intel GPU \(XPU\)"
    ):
        _target("xpu", linux, "cpu", "torch")
    m4 = _corpus_facts("healthy-macos-m4-torch26")
    m4["frameworks"]["torch"]["mps_built"] = False
    with pytest.raises(InputError, match="mps asked for, but torch 2.6.0 was built without MPS"):
        _target("mps", m4, "cpu", "torch")
    arc = _corpus_facts("healthy-arc-a770-torch212-xpu")
    arc["frameworks"]["torch"] = {"version": "2.12.0+cpu", "xpu": None}
    with pytest.raises(InputError, match=r"xpu asked for, but torch 2.12.0\+cpu has no XPU support"):
        _target("xpu", arc, "cpu", "torch")
