"""`hwcheck doctor` on this machine and on recorded machines: output, schema, exit status."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

import host
from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.facts import schema_problem
from hwcheck.inventory.classes import class_cpu_flags

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")
V100_OLD_DRIVER = str(FIXTURES / "facts/v100-driver-too-old.json")


@pytest.fixture(scope="module")
def live_report() -> dict:
    result = run_hwcheck("doctor", "--json")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_live_report_validates_against_the_shipped_schema(live_report):
    assert schema_problem(live_report, "report") is None
    assert set(live_report) >= {"schema_version", "hwcheck_version", "facts", "probes", "recommendation"}


def test_live_report_has_every_probe_with_a_status(live_report):
    for name, probe in live_report["probes"].items():
        assert probe["status"] in ("ok", "absent", "error", "timeout"), name
        assert probe["status"] == "ok" or probe["reason"], f"{name} gives no reason"


@pytest.mark.host("proc_cpuinfo")
def test_this_machine_cpu_is_seen(live_report):
    cpu = live_report["facts"]["cpu"]
    assert cpu["arch"] == host.cpu_arch()
    reported = set(cpu["flags"])
    # The flags SPEC §2 names as the ones that change advice: each reported exactly when the kernel does.
    for flag in sorted(class_cpu_flags()):
        assert (flag in reported) == (flag in host.cpu_flags()), flag
    model = host.cpuinfo_fields().get("model name")
    if model:
        assert cpu["model"] == model


@pytest.mark.host("no_nvidia_gpu")
def test_this_machine_has_no_gpu_and_says_why(live_report):
    assert live_report["facts"].get("gpus", []) == []
    gpu = live_report["probes"]["gpu"]
    assert gpu["status"] == "absent"
    assert "NVML" in gpu["reason"]


@pytest.mark.host("nvidia_gpu")
def test_this_machine_gpus_are_the_ones_nvidia_smi_lists(live_report):
    assert live_report["probes"]["gpu"]["status"] == "ok"
    assert len(live_report["facts"]["gpus"]) == host.nvidia_smi_gpus()
    assert live_report["recommendation"]["device"] == "gpu"


@pytest.mark.host("tensorflow")
def test_this_machine_tensorflow_build_is_named(live_report):
    tensorflow = live_report["facts"]["frameworks"]["tensorflow"]
    package = tensorflow["package"]
    assert tensorflow["version"] == host.distribution_version(package)
    if package == "tensorflow-cpu":
        assert tensorflow["cuda_build"] is False


@pytest.mark.host("proc_cpuinfo", "no_nvidia_gpu", "amx")
def test_this_amx_machine_trains_bf16_on_the_cpu(live_report):
    recommendation = live_report["recommendation"]
    assert (recommendation["policy"], recommendation["device"]) == ("mixed_bfloat16", "cpu")
    assert recommendation["loss_scaling"] is False
    if recommendation["backend"] == "tensorflow":  # oneDNN on, no XLA jit: TensorFlow's conditions
        assert "cpu-bf16-conditions" in {finding["id"] for finding in recommendation["findings"]}


@pytest.mark.host("proc_cpuinfo", "no_nvidia_gpu", "no_amx")
def test_this_machine_without_amx_trains_as_its_bf16_evidence_says(live_report):
    recommendation = live_report["recommendation"]
    if live_report["facts"].get("tpu", {}).get("present"):
        pytest.skip("a TPU decides here")
    # Only a `faster` verdict in this CPU's bfloat16 class makes the advice bfloat16
    # (cpu_features.toml): the class is read here from the host's own /proc/cpuinfo flags.
    from hwcheck.knowledge.cpu import bf16_class

    family = "arm" if platform.machine().lower() in ("aarch64", "arm64") else "x86"
    evidence = bf16_class(host.cpu_flags(), arch_family=family).get("evidence") or {}
    verdict = (evidence.get(recommendation["backend"]) or {}).get("verdict")
    expected = "mixed_bfloat16" if verdict == "faster" else "float32"
    assert (recommendation["policy"], recommendation["device"]) == (expected, "cpu")
    assert recommendation["loss_scaling"] is False


# The same two decisions on recorded machines, so they are checked on every host.
CPU_ONLY = str(ROOT / "tests/emitted/facts/sapphire-rapids-vm-cpu-only.json")


def test_recorded_amx_machine_trains_bf16_on_the_cpu():
    # TensorFlow named: its bfloat16 comes with conditions (oneDNN on, no XLA jit).
    report = json.loads(
        run_hwcheck("doctor", "--json", "--facts", CPU_ONLY, "--framework", "tensorflow").stdout
    )
    recommendation = report["recommendation"]
    assert (recommendation["policy"], recommendation["device"]) == ("mixed_bfloat16", "cpu")
    assert recommendation["loss_scaling"] is False
    assert "cpu-bf16-conditions" in {finding["id"] for finding in recommendation["findings"]}


def test_recorded_epyc_without_amx_trains_float32_on_the_cpu():
    # Zen 4 has AVX-512 BF16 but no AMX: for TensorFlow bf16 matrix math is not faster than float32 there.
    dump = str(FIXTURES / "cpuinfo/amd-zen4-epyc-9654.txt")
    arguments = ("--facts", CPU_ONLY, "--cpuinfo", dump, "--framework", "tensorflow")
    report = json.loads(run_hwcheck("doctor", "--json", *arguments).stdout)
    assert "avx512_bf16" in report["facts"]["cpu"]["flags"]
    assert "amx_bf16" not in report["facts"]["cpu"]["flags"]
    recommendation = report["recommendation"]
    assert (recommendation["policy"], recommendation["device"]) == ("float32", "cpu")
    # TensorFlow on AVX-512 BF16: measured faster here, slower in TensorFlow's guide. Say so, and measure.
    message = recommendation["reasons"][0]["message"]
    assert "has AVX-512 BF16, where the evidence on bfloat16 is split" in message
    assert "2026-11-25" in message and "tensorflow.org/guide/mixed_precision" in message
    assert "runs slower than float32 on such CPUs" not in message
    assert "cpu-bf16-measure" in {finding["id"] for finding in recommendation["findings"]}


def test_text_report_shows_checks_recommendation_and_findings():
    result = run_hwcheck("doctor", "--facts", V100_OLD_DRIVER, env={"COLUMNS": "200"})
    assert result.returncode == 1
    out = result.stdout
    assert "Recommendation: float32 on the CPU" in out
    assert "driver-too-old-for-framework" in out
    assert "fix: Upgrade the NVIDIA driver" in out
    assert "Tesla V100-SXM2-16GB" in out


def test_error_finding_exits_1_and_clean_machine_exits_0():
    assert run_hwcheck("doctor", "--json", "--facts", V100_OLD_DRIVER).returncode == 1
    assert run_hwcheck("doctor", "--json", "--facts", A100).returncode == 0


def test_why_not_explains_the_other_policy():
    result = run_hwcheck("doctor", "--facts", A100, "--why-not", "mixed_float16", env={"COLUMNS": "200"})
    assert "why not mixed_float16" in result.stdout
    assert "--prefer float16" in result.stdout
    as_json = json.loads(run_hwcheck("doctor", "--json", "--facts", A100, "--why-not", "float32").stdout)
    assert as_json["why_not"]["policy"] == "float32"
    assert "TF32" in as_json["why_not"]["reasons"][0]


def test_prefer_float16_on_ampere():
    report = json.loads(run_hwcheck("doctor", "--json", "--facts", A100, "--prefer", "float16").stdout)
    assert report["recommendation"]["policy"] == "mixed_float16"
    assert report["recommendation"]["loss_scaling"] is True


@pytest.mark.parametrize("args", [["doctor", "--why-not", "float64"], ["doctor", "--bogus"], []])
def test_bad_usage_exits_2(args):
    result = run_hwcheck(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_doctor_never_imports_a_framework():
    code = (
        "import sys, io, contextlib\n"
        "from hwcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['doctor', '--json'])\n"
        "    main(['doctor'])\n"
        "heavy = sorted(m for m in ('tensorflow', 'torch', 'jax', 'keras', 'tf_keras') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""


def test_haswell_cpuinfo_dump_gives_float32():
    dump = str(FIXTURES / "cpuinfo/intel-haswell-xeon-e5-2680v3.txt")
    report = json.loads(run_hwcheck("doctor", "--json", "--cpuinfo", dump).stdout)
    assert report["facts"]["cpu"]["model"] == "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz"
    assert report["probes"]["cpu"] == {"status": "file", "reason": f"read from {dump}", "seconds": None}
    assert (report["recommendation"]["policy"], report["recommendation"]["device"]) == ("float32", "cpu")
    assert "has no bfloat16 instructions" in report["recommendation"]["reasons"][0]["message"]


def test_cpuinfo_dump_replaces_the_cpu_of_a_facts_file():
    dump = str(FIXTURES / "cpuinfo/intel-sapphirerapids-xeon-platinum-8480plus.txt")
    report = json.loads(run_hwcheck("doctor", "--json", "--facts", V100_OLD_DRIVER, "--cpuinfo", dump).stdout)
    assert report["facts"]["gpus"][0]["name"] == "Tesla V100-SXM2-16GB"
    # The GPU is unusable (driver too old), so the Sapphire Rapids CPU decides.
    assert report["recommendation"]["policy"] == "mixed_bfloat16"
    assert report["recommendation"]["device"] == "cpu"


def test_bad_cpuinfo_dump_exits_2(tmp_path):
    dump = tmp_path / "cpuinfo.txt"
    dump.write_text("hello world\n")
    result = run_hwcheck("doctor", "--cpuinfo", str(dump))
    assert result.returncode == 2
    assert result.stderr.startswith(f"hwcheck: error: {dump}: not a /proc/cpuinfo dump")


def test_framework_torch_checks_the_pytorch_build(tmp_path):
    facts = json.loads(open(A100).read())
    facts["frameworks"] = {"torch": {"version": "2.5.1+cpu", "cuda": None}}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--json", "--facts", str(path), "--framework", "torch")
    assert result.returncode == 1
    ids = {f["id"] for f in json.loads(result.stdout)["recommendation"]["findings"]}
    assert "torch-cpu-only-build" in ids and "tf-not-installed" not in ids


def test_a_gpu_given_by_name_alone_shows_the_tables_compute_capability(tmp_path):
    # A facts file may name a GPU without its compute capability: the row and the reason
    # must agree on the capability the knowledge table gives (Tesla K80: 3.7).
    facts = tmp_path / "k80.json"
    facts.write_text(json.dumps({"schema_version": 1, "gpus": [{"index": 0, "name": "Tesla K80"}]}))
    result = run_hwcheck("doctor", "--facts", str(facts), "--framework", "torch", env={"COLUMNS": "200"})
    gpu_row = next(line for line in result.stdout.splitlines() if " gpu " in line)
    assert "Tesla K80 (CC 3.7)" in gpu_row and "CC ?" not in result.stdout


CASES = ROOT / "tests/corpus/cases"  # facts replayed from public issues (sources in cases.toml)


def test_apple_mac_too_old_for_its_torch_shows_the_apple_row_and_the_error():
    facts = str(CASES / "macos13-m2max-torch210-mps-floor.json")
    result = run_hwcheck("doctor", "--facts", facts, "--framework", "torch", env={"COLUMNS": "200"})
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(
        line.split()[1:] == "apple Apple M2 Max; macOS 13.7.4; PyTorch built with MPS".split()
        for line in lines
    )
    # Each vendor its own row: the Apple GPU is on the apple row, no gpu row says NVIDIA has none.
    assert not any(line.split()[1:2] == ["gpu"] for line in lines)
    assert not any(line.split()[1:2] == ["intel"] for line in lines)
    # AMD GPUs are read from a Linux kernel interface (KFD): on macOS that row says nothing.
    assert not any(line.split()[1:2] == ["amd"] for line in lines)
    assert "Recommendation: float32 on the CPU" in result.stdout
    assert "mps-macos-too-old-for-torch" in result.stdout
    assert "runs MPS on macOS 14.0 or later; this Mac runs macOS 13.7.4" in result.stdout
    assert "pip install 'torch<2.9'" in result.stdout


def test_apple_mps_advice_names_the_device_and_why_not_bfloat16():
    facts = str(CASES / "healthy-macos-m4-torch26.json")
    args = ("doctor", "--facts", facts, "--framework", "torch", "--why-not", "mixed_bfloat16")
    result = run_hwcheck(*args, env={"COLUMNS": "200"})
    assert "Recommendation: float32 on the Apple GPU (MPS)" in result.stdout
    assert "device = torch.device('mps')" in result.stdout
    assert "why not mixed_bfloat16" in result.stdout and "needs macOS 14.0 or later" in result.stdout
    report = json.loads(run_hwcheck(*args, "--json").stdout)
    assert report["recommendation"]["device"] == "mps"
    assert "macOS 14.0" in report["why_not"]["reasons"][0]


def test_intel_arc_with_an_xpu_torch_trains_bfloat16_on_the_xpu_device():
    facts = str(CASES / "healthy-arc-a770-torch212-xpu.json")
    result = run_hwcheck("doctor", "--facts", facts, "--framework", "torch", env={"COLUMNS": "200"})
    assert result.returncode == 0
    assert any(
        line.split()[1:3] == ["intel", "Intel"] and "Intel Arc A770 (driver i915)" in line
        for line in result.stdout.splitlines()
    )
    assert "Recommendation: bfloat16 compute on the Intel GPU (XPU)" in result.stdout
    assert "torch.autocast(device_type='xpu', dtype=torch.bfloat16)" in result.stdout
    report = json.loads(run_hwcheck("doctor", "--json", "--facts", facts, "--framework", "torch").stdout)
    advice = report["recommendation"]
    assert (advice["device"], advice["policy"]) == ("xpu", "mixed_bfloat16")


def test_nvidia_machines_show_no_apple_or_intel_rows():
    result = run_hwcheck("doctor", "--facts", A100, env={"COLUMNS": "200"})
    assert not any(line.split()[1:2] in (["apple"], ["intel"]) for line in result.stdout.splitlines())


def test_the_amd_row_shows_only_where_it_found_something(tmp_path):
    # Each vendor its own row: a Linux machine without an AMD GPU or ROCm has none, nor a Mac,
    # unless the facts name an AMD GPU (an Intel Mac's Radeon, say).
    linux = [line.split()[1:2] for line in run_hwcheck("doctor", "--facts", A100).stdout.splitlines()]
    assert ["amd"] not in linux
    mac = json.loads((CASES / "macos13-m2max-torch210-mps-floor.json").read_text())
    mac["gpus"] = [*mac.get("gpus", []), {"index": 0, "vendor": "amd", "name": "AMD Radeon Pro 5500M"}]
    path = tmp_path / "mac-with-radeon.json"
    path.write_text(json.dumps(mac))
    rows = run_hwcheck("doctor", "--facts", str(path), "--framework", "torch", env={"COLUMNS": "200"})
    assert any(line.split()[1:2] == ["amd"] for line in rows.stdout.splitlines())
