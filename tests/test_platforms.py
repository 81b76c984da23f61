"""macOS and Windows through the platform seam (hwcheck/base/platform_seam.py), on this Linux host.

Each command runs in-process with the seam set to macOS (over the recorded Apple M2 Max,
tests/fixtures/facts/apple-m2max-macos152-tf217-metal110.json) and to Windows (over the
recorded T4 machine, tests/fixtures/facts/t4-torch201-trainers.json, its os recorded as
Windows: the same GPU, driver and PyTorch as NVML reports them there). The live probes run
with the seam set too, and an audit hook asserts they open nothing under /proc or /sys.
The pipe reader Windows uses (threads) and its process-group options are exercised on real
children here; the process calls themselves run on macOS and Windows only in CI
(.github/workflows/ci.yml).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hwcheck.base import platform_seam
from hwcheck.cli import main

FACTS = Path(__file__).parent / "fixtures" / "facts"
CPUINFO = Path(__file__).parent / "fixtures" / "cpuinfo"
SYSCTL = Path(__file__).parent / "fixtures" / "sysctl"
BENCH = Path(__file__).parent / "fixtures" / "bench"
M2_MAX = FACTS / "apple-m2max-macos152-tf217-metal110.json"
LINUX_ONLY_PROBES = ("amd", "intel", "pci", "accel", "tegra", "tpu", "node")

_opened: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _opened is not None and event in ("open", "os.listdir", "os.scandir") and args:
        _opened.append(str(args[0]))


sys.addaudithook(_audit)  # cannot be removed: it records only while a test sets _opened


@pytest.fixture(params=[platform_seam.DARWIN, platform_seam.WINDOWS])
def system(request):
    """The seam set to macOS, then to Windows, and back to this host's after the test."""
    platform_seam.use(request.param)
    yield request.param
    platform_seam.use(None)


@pytest.fixture
def facts(system, tmp_path) -> Path:
    """The recorded machine for `system`: the M2 Max on macOS, the T4 on Windows."""
    if system == platform_seam.DARWIN:
        return M2_MAX
    recorded = json.loads((FACTS / "t4-torch201-trainers.json").read_text())
    recorded["os"] = {"system": "Windows", "machine": "AMD64"}
    path = tmp_path / "t4-windows.json"
    path.write_text(json.dumps(recorded))
    return path


def _run(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_the_seam_says_what_it_was_set_to_and_goes_back():
    host = platform_seam.host_system()
    platform_seam.use("win32")
    try:
        assert platform_seam.system() == "win32"
        assert platform_seam.kernel_name("Linux") == "Windows"
        assert not platform_seam.kernel_files()
        assert platform_seam.effective_ids() is None
        assert platform_seam.password_home() is None
    finally:
        platform_seam.use(None)
    assert platform_seam.system() == host
    with pytest.raises(ValueError, match="unknown system 'beos'"):
        platform_seam.use("beos")


def test_doctor_names_the_machine_and_recommends(system, facts, capsys):
    status, out = _run(capsys, "doctor", "--facts", str(facts))
    assert status == 0, out
    if system == platform_seam.DARWIN:
        assert "Apple M2 Max; macOS 15.2" in out
        assert "Recommendation: mixed_float16 on the Apple GPU (MPS)" in out
    else:
        assert "Windows" in out and "Tesla T4 (CC 7.5)" in out
        assert "Recommendation: float16 compute on the GPU" in out
    assert "Traceback" not in out


def test_fit_sizes_the_model_against_the_recorded_gpu(system, facts, capsys):
    status, out = _run(capsys, "fit", "--params", "1.5e9", "--facts", str(facts), "--json")
    assert status in (0, 1), out  # 1: does not fit, a verdict, not a failure
    verdict = json.loads(out)
    assert verdict["per_device"]["weights"] == 6_000_000_000  # 1.5e9 float32 parameters
    if system == platform_seam.DARWIN:
        # Unified memory: the GPU's share is not recorded, so the verdict is unknown, not a guess.
        assert (verdict["fits"], verdict["device_memory"]) == (None, None)
    else:
        assert (verdict["fits"], verdict["device_memory"]) == (False, 15 * 1024**3)  # the T4's 15 GiB


def test_config_writes_a_script_for_the_platforms_device(system, facts, tmp_path, capsys):
    script = tmp_path / "new" / "train.py"
    framework = "keras" if system == platform_seam.DARWIN else "torch"
    status, out = _run(capsys, "config", "--framework", framework, "--facts", str(facts), "-o", str(script))
    assert status == 0, out
    text = script.read_text()
    compile(text, str(script), "exec")
    assert ("mixed_float16" in text) if system == platform_seam.DARWIN else ("float16" in text)


def test_report_then_inventory_over_the_reports(system, facts, tmp_path, capsys):
    report = tmp_path / "reports" / "node.json"
    status, out = _run(capsys, "report", "--facts", str(facts), "-o", str(report))
    assert status == 0, out
    assert json.loads(report.read_text())["facts"]["os"]["system"] == (
        "Darwin" if system == "darwin" else "Windows"
    )
    status, out = _run(capsys, "inventory", str(report.parent))
    assert status == 0, out
    assert "1 nodes in 1 classes from 1 reports" in out
    assert "Cluster policy: mixed_float16" in out


def test_bench_parent_plans_and_renders_for_the_platform(system, capsys):
    from hwcheck.measure.render import render_bench
    from hwcheck.measure.runner import child_environment, select_variants

    variants = select_variants("float32,mixed_float16")
    device = "mps" if system == platform_seam.DARWIN else "gpu"
    env, _ = child_environment("torch", variants[0], device)
    assert env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true" and "CUDA_VISIBLE_DEVICES" not in env
    # The recorded bench document (tests/fixtures/bench/cpu-torch-mlp.json) renders the same anywhere.
    render_bench(json.loads((BENCH / "cpu-torch-mlp.json").read_text()))
    out = capsys.readouterr().out
    assert "float32" in out and "Traceback" not in out


def test_linux_only_probes_are_absent_and_open_nothing_under_proc_or_sys(system):
    global _opened
    from hwcheck.probes import runner

    _opened = []
    try:
        collected = runner.collect(timeout=5.0, names=("platform", *LINUX_ONLY_PROBES))
    finally:
        opened, _opened = _opened, None
    name = "Darwin" if system == platform_seam.DARWIN else "Windows"
    for probe in LINUX_ONLY_PROBES:
        result = collected.results[probe]
        assert result.status == "absent", (probe, result)
        assert result.reason.startswith(f"not Linux ({name}): no ")
    assert collected.facts["os"]["system"] == name
    assert "memory" not in collected.facts  # /proc/meminfo is Linux's
    assert not [path for path in opened if path.startswith(("/proc", "/sys"))], opened


def test_cpu_probe_reads_py_cpuinfo_off_linux(system, monkeypatch):
    import cpuinfo

    from hwcheck.probes import cpu

    name = (
        "pycpuinfo-darwin-haswell-core-i7-4980hq.json"
        if system == "darwin"
        else ("pycpuinfo-cpuid-sapphirerapids-class-vm-hwcheck-dev.json")
    )
    recorded = json.loads((CPUINFO / name).read_text())
    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: recorded)
    result = cpu.probe("/nonexistent/cpuinfo")  # the Linux path would fail on this file
    assert result.status == "ok", result
    assert result.facts["cpu"]["source"] == "py-cpuinfo"
    assert "avx2" in result.facts["cpu"]["flags"]


@pytest.mark.skipif(sys.platform == "win32", reason="the recorded sysctl is replayed by a shell script")
def test_apple_probe_runs_sysctl_when_the_seam_says_macos(tmp_path):
    fake = tmp_path / "sysctl"
    fake.write_text(f"#!/bin/sh\ncat '{SYSCTL / 'apple-m1-mac-mini.txt'}'\n")
    fake.chmod(0o755)
    from hwcheck.probes.apple import gpu

    platform_seam.use("darwin")
    try:
        result = gpu.probe(sysctl=str(fake), mac_ver=lambda: "14.4.1")
    finally:
        platform_seam.use(None)
    assert result.status == "ok", result
    assert result.facts["gpus"][0]["name"].startswith("Apple M1")
    platform_seam.use("win32")
    try:
        absent = gpu.probe(sysctl=str(fake))
    finally:
        platform_seam.use(None)
    assert absent.status == "absent" and "not macOS (Windows)" in absent.reason


def test_nvml_is_looked_for_where_windows_installs_it(monkeypatch):
    from hwcheck.probes.nvidia import gpu

    monkeypatch.setenv("WINDIR", r"D:\Win")
    platform_seam.use("win32")
    try:
        paths = gpu.nvml_library_paths()
    finally:
        platform_seam.use(None)
    assert paths[0].endswith("nvml.dll") and paths[0].startswith(r"D:\Win")


def test_windows_group_options_and_kill_paths():
    assert platform_seam.new_group_options("win32") == {"creationflags": 0x200}
    assert platform_seam.new_group_options("linux") == {"start_new_session": True}
    calls: list[str] = []

    class Recorder:  # records which call the seam makes; Popen's own are Windows-only here
        pid = 1

        def kill(self):
            calls.append("kill")

        def send_signal(self, number):
            calls.append(f"signal {number}")

    platform_seam.kill_group(Recorder(), name="win32")
    platform_seam.kill_group(Recorder(), gently=True, name="win32")
    assert calls == ["kill", "signal 1"]  # CTRL_BREAK_EVENT is 1 (WinCon.h)


def test_reader_threads_read_a_real_child_to_its_end_and_to_its_cap():
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 200000); sys.stderr.write('done')"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    stop, out, err = platform_seam.read_in_threads(
        (child.stdout, child.stderr), deadline, 10**6, lambda: child.poll() is not None
    )
    child.wait()
    assert (stop, len(out), err) == (None, 200000, b"done")
    child = subprocess.Popen(
        [sys.executable, "-c", "print('y' * 300000)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stop, out, _ = platform_seam.read_in_threads((child.stdout, child.stderr), deadline, 1000, lambda: False)
    child.kill()
    child.wait()
    assert stop == "cap" and len(out) > 1000


def test_a_probe_child_is_read_the_windows_way_under_its_deadline(monkeypatch):
    from hwcheck.probes import subprocesses

    monkeypatch.setattr(platform_seam, "selectable_pipes", lambda name=None: False)
    finished = subprocesses.run([sys.executable, "-c", "print('hello')"], 30)
    assert (finished.status, finished.output.strip()) == ("ok", "hello")
    started = time.monotonic()
    hung = subprocesses.run([sys.executable, "-c", "import time; time.sleep(60)"], 0.5)
    assert hung.status == "timed-out" and time.monotonic() - started < 30


def test_redirected_output_on_windows_is_written_as_utf8():
    import io

    redirected = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    with pytest.raises(UnicodeEncodeError):
        redirected.write("≡")  # what doctor's first check row starts with
    platform_seam.utf8_when_redirected((redirected,), name="win32")
    redirected.write("≡  platform     Windows")
    redirected.flush()
    assert redirected.buffer.getvalue().decode("utf-8") == "≡  platform     Windows"
    untouched = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    platform_seam.utf8_when_redirected((untouched,), name="linux")
    assert untouched.encoding == "cp1252"
