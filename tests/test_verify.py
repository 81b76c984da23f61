"""`hwcheck doctor --verify`: one training step observed in a child, under the user's Python.

The live tests really import torch, JAX and Keras (on TensorFlow) here and set what the child
recorded against an independent reading (importlib.metadata, the framework asked in another
process). The error texts replayed below are quoted from the public issues named beside them.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from verify_cases import APPLE, CPU, ERRORS, H100, cases, error_base, error_framework, replayed

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.measure.verify import installed_location, other_copy, verify
from hwcheck.recommendation import recommend


def installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def independent(code: str, env: dict[str, str] | None = None) -> object:
    """What a plain `python -c CODE` prints as JSON: the framework read without hwcheck."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def doctor_verify(framework: str, env: dict[str, str] | None = None) -> dict:
    result = run_hwcheck("doctor", "--verify", "--framework", framework, "--json", env=env, timeout=600)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


# --- live, on this machine ---------------------------------------------------------------


@pytest.mark.skipif(not installed("torch"), reason="torch is not installed")
def test_doctor_verify_runs_a_torch_step_and_records_what_torch_itself_reports():
    report = doctor_verify("torch")
    seen = report["facts"]["verified"]
    truth = independent(
        "import json, torch; print(json.dumps([torch.__file__, torch.version.cuda, torch.cuda.device_count(),"
        " torch.cuda.get_arch_list() if torch.cuda.is_available() else []]))"
    )
    assert seen["framework"] == "torch"
    assert seen["version"] == importlib.metadata.version("torch")
    assert [seen["file"], seen["cuda"]] == truth[:2]
    assert sum(1 for d in seen["devices"] if d["kind"] == "gpu") == truth[2]
    assert seen.get("arch_list", []) == truth[3]
    assert seen["python"] and seen["seconds"] > 0
    recommendation = report["recommendation"]
    assert seen["requested"] == {
        "framework": "torch",
        "backend": "torch",
        "device": recommendation["device"],
        "policy": recommendation["policy"],
    }
    ids = {finding["id"] for finding in recommendation["findings"]}
    assert ("verify-ok" in ids) == (seen["outcome"] == "ok")
    if seen["outcome"] == "ok":
        assert seen["device"] == recommendation["device"]
        assert seen["compute_dtype"] == {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}.get(
            recommendation["policy"], "float32"
        )


@pytest.mark.skipif(not installed("jax"), reason="JAX is not installed")
def test_doctor_verify_runs_a_jax_step_with_bfloat16_compute_and_float32_parameters():
    report = doctor_verify("jax")
    seen = report["facts"]["verified"]
    truth = independent(
        "import json, jax, jaxlib; print(json.dumps([jax.__file__, jaxlib.__version__,"
        " sorted(d.platform for d in jax.devices())]))"
    )
    assert seen["version"] == importlib.metadata.version("jax")
    assert [seen["file"], seen["jaxlib"]] == truth[:2]
    listed = sorted(d["platform"] for d in seen["devices"] if d["platform"] != "cpu" or "cpu" in truth[2])
    assert listed == truth[2]
    assert seen["outcome"] == "ok", seen["error"]
    policy = report["recommendation"]["policy"]
    assert seen["compute_dtype"] == {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}.get(
        policy, "float32"
    )


@pytest.mark.skipif(
    not (installed("keras") and installed("tensorflow-cpu") or installed("tensorflow")),
    reason="Keras on TensorFlow is not installed",
)
def test_doctor_verify_runs_a_keras_step_on_tensorflow_under_the_policy():
    report = doctor_verify("keras", env={"KERAS_BACKEND": "tensorflow"})
    seen = report["facts"]["verified"]
    assert seen["framework"] == "keras"
    assert seen["keras_backend"] == "tensorflow"
    assert seen["version"] == importlib.metadata.version("keras")
    distribution = installed_location("tensorflow")
    assert distribution is not None
    assert seen["tensorflow"] == importlib.metadata.version(distribution["distribution"])
    truth = independent(
        "import json, tensorflow as tf; print(json.dumps([tf.__file__,"
        " sorted(d.device_type for d in tf.config.list_physical_devices())]))",
        env={"TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert seen["tensorflow_file"] == truth[0]
    assert sorted(d["kind"].upper() for d in seen["devices"]) == truth[1]
    assert seen["outcome"] == "ok", seen["error"]
    assert seen["compute_dtype"] == {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}.get(
        report["recommendation"]["policy"], "float32"
    )


def test_plain_doctor_records_no_verification():
    report = json.loads(run_hwcheck("doctor", "--json", "--facts", str(CPU)).stdout)
    assert "verified" not in report["facts"]
    assert not [f for f in report["recommendation"]["findings"] if f["id"].startswith("verify-")]


def test_verify_with_a_facts_file_replays_its_recorded_verification(tmp_path):
    result = run_hwcheck("doctor", "--verify", "--facts", str(CPU))
    assert result.returncode == 2
    assert "records no verification" in result.stderr and "Traceback" not in result.stderr
    facts = json.loads(CPU.read_text())
    facts["verified"] = {
        "outcome": "ok",
        "framework": "torch",
        "version": "2.13.0",
        "device": "cpu",
        "requested": {"framework": "torch", "device": "cpu", "policy": "mixed_bfloat16"},
        "devices": [{"kind": "cpu", "name": "cpu"}],
        "seconds": 1.5,
    }
    path = tmp_path / "verified.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--verify", "--framework", "torch", "--facts", str(path))
    assert result.returncode == 0, result.stderr
    assert "Verified: torch 2.13.0 ran one training step in bfloat16 autocast on the CPU" in result.stdout


# --- replayed error texts ------------------------------------------------------------------


@pytest.mark.parametrize(("text", "rule", "source"), ERRORS, ids=[rule for _, rule, _ in ERRORS])
def test_a_known_error_text_maps_to_its_finding_and_the_advice_leaves_the_gpu(text, rule, source):
    base, framework = error_base(rule), error_framework(rule)
    before = recommend(json.loads(base.read_text()), framework=framework)
    assert before.device == "gpu"  # the tables alone advise the GPU
    after = recommend(replayed(base, framework, text), framework=framework)
    findings = {f.id: f for f in after.findings}
    assert rule in findings, (source, sorted(findings))
    assert findings[rule].severity == "error"
    assert findings[rule].remedy
    assert "verify-step-failed" not in findings  # a known text gets its own cause, not the generic one
    assert after.device == "cpu" and after.has_errors  # the observation wins


@pytest.mark.parametrize("case", cases(), ids=[case[0] for case in cases()])
def test_each_replayed_verification_raises_its_findings(case):
    _, facts, framework, expected = case
    found = {f.id for f in recommend(facts, framework=framework).findings}
    assert expected <= found, sorted(found)


def test_an_unknown_error_text_is_the_generic_failure_with_the_text():
    after = recommend(replayed(H100, "torch", "RuntimeError: something new"), framework="torch")
    finding = next(f for f in after.findings if f.id == "verify-step-failed")
    assert "RuntimeError: something new" in finding.message
    assert after.device == "cpu"


def test_a_text_in_the_warnings_or_stderr_counts_too():
    facts = replayed(
        H100,
        "torch",
        "AssertionError",
        warnings=["CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."],
    )
    ids = {f.id for f in recommend(facts, framework="torch").findings}
    assert "verify-cuda-driver-insufficient" in ids


def test_an_observation_for_another_framework_does_not_decide():
    after = recommend(replayed(H100, "torch", "RuntimeError: no kernel image is available"), framework="jax")
    assert not [f for f in after.findings if f.id.startswith("verify-")]
    assert after.device == "gpu"


def test_the_framework_seeing_no_gpu_the_probes_found_is_a_finding():
    facts = replayed(
        H100, "torch", "RuntimeError: No CUDA GPUs are available", devices=[{"kind": "cpu", "name": "cpu"}]
    )
    after = recommend(facts, framework="torch")
    ids = {f.id for f in after.findings}
    assert {"verify-framework-sees-no-gpu", "verify-step-failed"} <= ids
    assert after.device == "cpu"


def test_a_gpu_the_probes_missed_but_the_framework_sees_is_a_warning():
    facts = replayed(
        CPU,
        "torch",
        None,
        outcome="ok",
        device="cpu",
        requested={"framework": "torch", "device": "cpu", "policy": "mixed_bfloat16"},
    )
    after = recommend(facts, framework="torch")
    finding = next(f for f in after.findings if f.id == "verify-framework-sees-unprobed-gpu")
    assert finding.severity == "warning" and "GPU 0" in finding.message


def test_a_step_that_failed_on_the_apple_gpu_sends_the_advice_to_the_cpu():
    facts = replayed(
        APPLE,
        "tensorflow",
        "InvalidArgumentError: Cannot assign a device for operation",
        device="mps",
        requested={"framework": "tensorflow", "device": "mps", "policy": "mixed_float16"},
    )
    assert recommend(json.loads(APPLE.read_text()), framework="tensorflow").device == "mps"
    after = recommend(facts, framework="tensorflow")
    assert after.device == "cpu"
    finding = next(f for f in after.findings if f.id == "verify-step-failed")
    assert "on the Apple GPU failed" in finding.message


def test_a_healthy_verification_keeps_the_gpu_advice():
    facts = replayed(H100, "torch", None, outcome="ok")
    after = recommend(facts, framework="torch")
    assert after.device == "gpu" and not after.has_errors
    assert "verify-ok" in {f.id for f in after.findings}


def test_a_fallback_step_is_reported():
    facts = replayed(
        H100,
        "torch",
        "RuntimeError: CUDA error: no kernel image is available for execution",
        fallback={"device": "cpu", "policy": "mixed_bfloat16", "outcome": "ok", "seconds": 1.0},
    )
    finding = next(f for f in recommend(facts, framework="torch").findings if f.id == "verify-fallback")
    assert "one step in bfloat16 autocast on the CPU ran" in finding.message


# --- children that hang, die, or import another copy ---------------------------------------


def fake_framework(folder: Path, name: str, body: str) -> Path:
    package = folder / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(body))
    return package / "__init__.py"


def test_a_child_that_hangs_is_cut_at_its_deadline(tmp_path, monkeypatch):
    fake_framework(tmp_path, "torch", "import time\ntime.sleep(600)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    started = time.monotonic()
    seen = verify("torch", "torch", "cpu", "float32", timeout=3)
    assert time.monotonic() - started < 60  # the deadline (3 s) cut it, with room for a loaded machine
    assert seen["outcome"] == "timeout"
    assert "no answer within 3 s" in seen["error"]
    ids = {
        f.id
        for f in recommend(
            replayed(H100, "torch", seen["error"], outcome="timeout"), framework="torch"
        ).findings
    }
    assert "verify-timeout" in ids


@pytest.mark.parametrize(
    ("signal_name", "rule"), [("SIGILL", "verify-illegal-instruction"), ("SIGSEGV", "verify-step-failed")]
)
def test_a_child_that_dies_is_reported_with_its_signal(tmp_path, monkeypatch, signal_name, rule):
    # As a wheel built for instructions the CPU lacks dies at import (tensorflow/tensorflow#17411).
    fake_framework(tmp_path, "torch", f"import os, signal\nos.kill(os.getpid(), signal.{signal_name})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = verify("torch", "torch", "cpu", "float32", timeout=120)
    assert seen["outcome"] == "error"
    assert seen["signal"] == signal_name
    assert seen["error"].startswith(f"killed by {signal_name}")
    facts = replayed(
        CPU,
        "torch",
        seen["error"],
        signal=seen["signal"],
        device="cpu",
        requested={"framework": "torch", "device": "cpu", "policy": "float32"},
    )
    findings = {f.id: f for f in recommend(facts, framework="torch").findings}
    assert rule in findings and findings[rule].severity == "error"


FAKE_TORCH = """
__version__ = "0.0.fake"
"""


def test_the_verifying_child_imports_the_torch_on_the_users_pythonpath_and_doctor_flags_it(tmp_path):
    fake = fake_framework(tmp_path / "shadow", "torch", FAKE_TORCH)
    report = doctor_verify(
        "torch", env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "shadow")])}
    )
    seen = report["facts"]["verified"]
    assert seen["file"] == str(fake)
    assert seen["version"] == "0.0.fake"
    findings = {f["id"]: f for f in report["recommendation"]["findings"]}
    assert "verify-other-copy" in findings
    assert str(fake) in findings["verify-other-copy"]["message"]
    # The refused verification decides nothing: no step failure is laid at the real torch's door.
    assert "verify-step-failed" not in findings
    if installed("torch"):
        assert seen["installed"]["module"] != str(fake.parent)


def test_the_measuring_child_imports_the_users_copy_too_and_the_measurement_is_refused(tmp_path, monkeypatch):
    from hwcheck.measure.runner import Worker

    fake = fake_framework(tmp_path, "torch", FAKE_TORCH)
    monkeypatch.syspath_prepend(str(tmp_path))
    job = {
        "framework": "torch",
        "workload": "mlp",
        "script": None,
        "policy": "float32",
        "tf32": False,
        "loss_scaling": False,
        "device": "cpu",
        "env": {},
    }
    worker = Worker(job, 120, lambda done: None)
    assert not worker.loaded()  # the fake has no torch.nn
    result = worker.finish()
    assert result["framework_files"] == {"torch": str(fake)}
    if installed("torch"):
        reason = other_copy(result["framework_files"])
        assert reason is not None and str(fake) in reason and "not used" in reason


def test_the_real_copy_is_not_refused():
    if not installed("torch"):
        pytest.skip("torch is not installed")
    location = installed_location("torch")
    assert location is not None
    assert other_copy({"torch": os.path.join(location["module"], "__init__.py")}) is None


def test_the_docs_console_samples_print_what_they_show(tmp_path):
    import re

    text = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    samples: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                samples.append((line[2:], []))
            elif samples and line.strip():
                samples[-1][1].append(line.rstrip())
    assert len(samples) >= 2
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    path = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    for command, shown in samples:
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        printed = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
        assert [line for line in shown if line not in printed] == [], "\n".join(printed)


@pytest.mark.skipif(
    not (installed("keras") and installed("torch")), reason="Keras and torch are not installed"
)
def test_doctor_verify_runs_a_keras_step_on_the_torch_backend():
    # Keras 3.15's torch backend loses the gradients of a model built under keras.device():
    # the step runs where the backend places it, and says where that was.
    report = doctor_verify("keras", env={"KERAS_BACKEND": "torch"})
    seen = report["facts"]["verified"]
    assert seen["keras_backend"] == "torch"
    assert seen["outcome"] == "ok", seen["error"]
    truth = independent("import json, torch; print(json.dumps(torch.cuda.is_available()))")
    assert seen["device"] == ("gpu" if truth else "cpu")


# --- GPUs the framework lists where the probes found none: the observation wins ------------

UNPROBED = FIXTURES / "facts" / "h100-unprobed-torch-verified.json"


def test_gpus_the_framework_lists_where_the_probes_found_none_get_the_gpu_advice():
    facts = json.loads(UNPROBED.read_text())
    assert not facts.get("gpus") and "nvidia_driver" not in facts
    after = recommend(facts, framework="torch")
    assert (after.policy, after.device, after.has_errors) == ("mixed_bfloat16", "gpu", False)
    finding = next(f for f in after.findings if f.id == "verify-gpus-from-framework")
    assert finding.severity == "warning" and "NVIDIA H100 80GB HBM3" in finding.message
    assert "verify-framework-sees-unprobed-gpu" not in {f.id for f in after.findings}
    # The GPUs the framework listed had CUDA_VISIBLE_DEVICES applied already: not applied twice.
    facts["environment"] = {**facts.get("environment", {}), "CUDA_VISIBLE_DEVICES": "1"}
    assert recommend(facts, framework="torch").device == "gpu"


def test_gpus_the_framework_lists_count_only_from_a_cuda_build_with_a_capability():
    rocm = json.loads(UNPROBED.read_text())
    rocm["verified"] = {**rocm["verified"], "cuda": None, "hip": "6.2"}
    unnamed = json.loads(UNPROBED.read_text())
    unnamed["verified"] = {
        **unnamed["verified"],
        "devices": [{"kind": "cpu"}, {"kind": "gpu", "name": "GPU 0"}],
    }
    other = json.loads(UNPROBED.read_text())
    for facts in (rocm, unnamed, other):
        framework = "jax" if facts is other else "torch"  # another framework's list decides nothing
        after = recommend(facts, framework=framework)
        assert after.device == "cpu", framework
        assert "verify-gpus-from-framework" not in {f.id for f in after.findings}


def test_a_cpu_step_that_lists_a_gpu_is_followed_by_a_step_of_the_gpu_advice(monkeypatch):
    # The child is replaced by the recorded H100 observation (docs/measurements/h100-2026-11-27):
    # no GPU is here. The first step runs where the probes advise (the CPU) and lists the H100.
    import hwcheck.measure.verify
    from hwcheck.commands import doctor

    recorded = json.loads(UNPROBED.read_text())["verified"]
    asked: list[tuple[str, str]] = []

    def fake_verify(framework, backend, device, policy, timeout):
        asked.append((device, policy))
        return {
            **recorded,
            "device": device,
            "requested": {**recorded["requested"], "device": device, "policy": policy},
        }

    monkeypatch.setattr(hwcheck.measure.verify, "verify", fake_verify)
    facts = {k: v for k, v in json.loads(UNPROBED.read_text()).items() if k != "verified"}
    first = recommend(facts, framework="torch")
    assert first.device == "cpu"
    arguments = SimpleNamespace(
        facts=None, cpuinfo=None, framework="torch", verify=True, verify_timeout=60.0, prefer=None, rules=[]
    )
    facts, advised = doctor._verify(arguments, facts, {}, first)
    assert [device for device, _ in asked] == ["cpu", "gpu"]
    assert (advised.device, facts["verified"]["device"]) == ("gpu", "gpu")
    assert "verify-ok" in {f.id for f in advised.findings}
