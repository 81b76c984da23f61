"""Deadlines that hold: programs and native code a probe runs are cut off, with what they started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from fakes.nvml import FakeNvml, recording_names

from conftest import ROOT, run_hwcheck
from hwcheck.probes import ABSENT, ERROR, OK, TIMEOUT, ProbeResult, collect, subprocesses
from hwcheck.probes.nvidia import cuda, gpu

TESTS = Path(__file__).resolve().parent
FAKE_PYNVML_DIR = TESTS / "fakes" / "nvml_child"


def write_script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def is_gone(pid: int, wait: float = 10.0) -> bool:
    """Whether `pid` has died within `wait` s (a zombie no one has reaped yet counts as dead)."""
    until = time.monotonic() + wait
    while time.monotonic() < until:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def read_pids(path: Path, wait: float = 30.0) -> list[int]:
    until = time.monotonic() + wait
    while time.monotonic() < until:
        if path.exists() and path.read_text().endswith("\n"):
            return [int(pid) for pid in path.read_text().split()]
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


# -- the runner itself --------------------------------------------------------------


def test_a_hung_program_is_killed_at_the_deadline_with_its_grandchild(tmp_path):
    pids = tmp_path / "pids"
    nvcc = write_script(
        tmp_path / "bin" / "nvcc",
        f"""\
        sleep 3600 &
        echo "$$ $!" > {pids}
        sleep 3600
        """,
    )
    started = time.monotonic()
    # A deadline long enough for a loaded machine to start the script, which writes its pids first.
    result = cuda.probe(site_dirs=[], environ={"PATH": str(nvcc.parent)}, search_paths=[], timeout=2.0)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0 * 10  # ten times the deadline: the program sleeps for an hour
    assert f"{nvcc} --version gave no answer within 2 s" in result.reason
    shell, grandchild = read_pids(pids)
    assert is_gone(shell) and is_gone(grandchild)


def test_a_program_that_floods_its_output_is_cut_off_at_the_cap(tmp_path):
    # `yes` prints without end: a reader without a cap would buffer until memory runs out.
    started = time.monotonic()
    finished = subprocesses.run(["yes", "nvcc"], timeout=30, output_cap=256 * 1024)
    assert time.monotonic() - started < 5  # stopped at the cap, not at the deadline
    assert finished.status == subprocesses.FLOODED
    assert finished.reason == "printed more than 256 KiB and was stopped"
    assert 256 * 1024 < len(finished.output) <= 256 * 1024 + subprocesses.CHUNK


def test_a_flooding_nvcc_costs_its_version_only(tmp_path):
    nvcc = write_script(tmp_path / "bin" / "nvcc", "exec yes 'Cuda compilation tools, release'\n")
    result = cuda.probe(site_dirs=[], environ={"PATH": str(nvcc.parent)}, search_paths=[], timeout=30)
    assert result.status == ABSENT
    assert f"{nvcc} --version printed more than 64 KiB and was stopped" in result.reason


def test_a_program_that_leaves_a_child_holding_its_output_returns_when_it_exits(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    finished = subprocesses.run(["sh", "-c", f'sleep 3600 & echo "$!" > {pids}; echo done'], timeout=20)
    assert time.monotonic() - started < 10  # at its exit (~0.01 s idle), not at the 20 s deadline
    assert (finished.status, finished.output) == (subprocesses.OK, "done\n")
    [grandchild] = read_pids(pids)
    assert is_gone(grandchild)


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
            subprocesses.SIGNALLED,
            "was killed by SIGSEGV",
        ),
        (
            "import sys; print('half', flush=True); sys.exit('nvml: driver mismatch')",
            subprocesses.FAILED,
            "exited with status 1: nvml: driver mismatch",
        ),
        ("print('{}')", subprocesses.OK, None),
    ],
)
def test_each_way_a_program_ends_has_its_own_status(code, status, reason):
    finished = subprocesses.run([sys.executable, "-c", code], timeout=20)
    assert (finished.status, finished.reason) == (status, reason)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the signal masks in /proc")
def test_a_child_leads_its_own_session_with_sigpipe_at_its_default_and_no_stdin():
    # As Popen(start_new_session=True) starts it: Python ignores SIGPIPE, a child must not inherit that.
    script = 'cat; echo "$$ $(cut -d" " -f6 /proc/$$/stat)"; grep SigIgn /proc/$$/status'
    finished = subprocesses.run(["sh", "-c", script], timeout=20)
    assert finished.status == subprocesses.OK, finished.reason
    ids, ignored = finished.output.splitlines()
    pid, session = ids.split()
    assert pid == session
    sigpipe = 1 << (signal.SIGPIPE - 1)
    assert not int(ignored.split()[1], 16) & sigpipe


def test_a_program_is_found_on_the_path_of_the_environment_it_is_given(tmp_path):
    program = write_script(tmp_path / "bin" / "only-here", "echo found\n")
    finished = subprocesses.run(["only-here"], timeout=20, env={"PATH": str(program.parent)})
    assert (finished.status, finished.output) == (subprocesses.OK, "found\n")


def test_a_program_that_cannot_start_is_named():
    finished = subprocesses.run(["/nonexistent/nvcc", "--version"], timeout=1)
    assert finished.status == subprocesses.NOT_STARTED
    assert finished.reason == "could not run: No such file or directory"


def test_collect_kills_a_probes_program_at_its_deadline(tmp_path):
    pids = tmp_path / "pids"
    script = write_script(tmp_path / "hang", f'sleep 3600 &\necho "$$ $!" > {pids}\nsleep 3600\n')

    def probe():
        subprocesses.run([str(script)], timeout=3600)
        raise AssertionError("unreachable: the program sleeps for an hour")

    started = time.monotonic()
    collected = collect(probes={"slow": probe}, timeout=2.0)  # time to start the script, even loaded
    assert time.monotonic() - started < 2.0 * 10
    assert collected.results["slow"].status == TIMEOUT
    assert all(is_gone(pid) for pid in read_pids(pids))


def test_a_hung_probe_costs_only_itself(tmp_path):
    # The probes share one worker until one holds it: the next ones go on in another.
    stuck = threading.Event()

    def hangs():
        stuck.wait()
        raise AssertionError("unreachable: nothing sets the event")

    def quick():
        return ProbeResult(OK, {"quick": True})

    started = time.monotonic()
    collected = collect(probes={"hangs": hangs, "first": quick, "second": quick}, timeout=1.0)
    assert time.monotonic() - started < 1.0 * 10  # the hung probe waits for ever
    statuses = {name: result.status for name, result in collected.results.items()}
    assert statuses == {"hangs": TIMEOUT, "first": OK, "second": OK}
    assert collected.facts["quick"] is True


def test_probes_that_answer_share_one_thread():
    # Threads waiting on the interpreter's lock delay each other: quick probes take turns in one.
    threads = []

    def probe():
        threads.append(threading.current_thread().name)
        return ProbeResult(OK, {})

    collected = collect(probes={name: probe for name in "abcdef"}, timeout=5.0)
    assert all(result.status == OK for result in collected.results.values())
    assert len(threads) == 6 and len(set(threads)) == 1


def test_interpreter_exit_does_not_wait_for_a_stuck_probe_thread(tmp_path):
    # One stuck thread holds a lock, the other a module's import lock (the runner imports
    # each probe module in its thread); exit must wait on neither.
    (tmp_path / "stuck_module.py").write_text("import threading\nthreading.Event().wait()\n")
    code = textwrap.dedent(
        """\
        import threading
        from hwcheck.probes import collect

        held = threading.Lock()

        def holding_a_lock():
            with held:
                threading.Event().wait()

        def importing():
            import stuck_module  # noqa: F401

        collected = collect(probes={"lock": holding_a_lock, "import": importing}, timeout=0.3)
        print(sorted(result.status for result in collected.results.values()), flush=True)
        """
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])},
        check=False,
    )
    # The deadline and an interpreter's start (~1 s idle) ten times over, well under a stuck exit's 30 s.
    assert time.monotonic() - started < 15
    assert (result.returncode, result.stdout, result.stderr) == (0, "['timeout', 'timeout']\n", "")


# -- the NVML query in its child process ----------------------------------------------


@pytest.fixture
def fake_nvml(tmp_path, monkeypatch):
    """Make the GPU probe find "NVML" and run its child against fakes/nvml_child/pynvml.py."""
    library_dir = tmp_path / "driver"
    library_dir.mkdir()
    (library_dir / "libnvidia-ml.so.1").write_bytes(b"")  # found by the loader check; never loaded
    env = {
        "LD_LIBRARY_PATH": str(library_dir),
        # The child finds hwcheck by itself; the fake pynvml and tests/fakes come from here.
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(FAKE_PYNVML_DIR), str(TESTS)]),
        "HWCHECK_FAKE_NVML_PIDS": str(tmp_path / "pids"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def use(mode: str) -> dict[str, str]:
        monkeypatch.setenv("HWCHECK_FAKE_NVML", mode)
        return {**env, "HWCHECK_FAKE_NVML": mode}

    return use


@pytest.mark.parametrize("name", recording_names())
def test_the_child_reports_the_same_facts_as_nvml_in_process(fake_nvml, name):
    fake_nvml(name)
    in_child = gpu.probe()
    in_process = gpu.probe(nvml=FakeNvml(name))
    assert in_child.status == in_process.status == OK
    assert (in_child.facts, in_child.reason) == (in_process.facts, in_process.reason)


def test_the_child_ignores_modules_in_the_working_directory(fake_nvml, tmp_path, monkeypatch):
    # `python -c` searches the working directory first: a stray json.py or hwcheck/ there must not count.
    workdir = tmp_path / "work"
    (workdir / "hwcheck").mkdir(parents=True)
    (workdir / "hwcheck" / "__init__.py").write_text("raise SystemExit('the wrong hwcheck')\n")
    (workdir / "json.py").write_text("raise SystemExit('the wrong json')\n")
    monkeypatch.chdir(workdir)
    fake_nvml("l4")
    result = gpu.probe()
    assert (result.status, result.facts) == (OK, gpu.probe(nvml=FakeNvml("l4")).facts)


def test_a_segfault_in_nvml_costs_the_gpu_probe_only(fake_nvml):
    env = fake_nvml("segfault")
    started = time.monotonic()
    # A deadline no load reaches before the query has crashed: it ends before it, at the crash.
    result = run_hwcheck("doctor", "--json", "--timeout", "25", env=env, timeout=60)
    assert time.monotonic() - started < 25
    assert "Traceback" not in result.stderr
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["probes"]["gpu"]["status"] == ERROR
    assert report["probes"]["gpu"]["reason"] == "the NVML query was killed by SIGSEGV"
    assert report["probes"]["cpu"]["status"] == OK


def test_a_hung_nvml_is_cut_off_with_what_it_started(fake_nvml, tmp_path):
    fake_nvml("hang")
    started = time.monotonic()
    result = gpu.probe(timeout=1.0)
    assert time.monotonic() - started < 1.0 * 10
    assert (result.status, result.reason) == (
        TIMEOUT,
        "the NVML query gave no answer within 1 s (a hung driver)",
    )
    assert all(is_gone(pid) for pid in read_pids(tmp_path / "pids"))


def test_doctor_returns_at_its_timeout_when_nvml_hangs(fake_nvml, tmp_path):
    env = fake_nvml("hang")
    started = time.monotonic()
    result = run_hwcheck("doctor", "--json", "--timeout", "1", env=env, timeout=30)
    elapsed = time.monotonic() - started
    # ~1.3 s idle; the NVML query hangs for ever, and run_hwcheck would give up at 30 s.
    assert elapsed < 15, f"doctor --timeout 1 took {elapsed:.2f} s"
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["probes"]["gpu"]["status"] == TIMEOUT  # doctor's deadline, before the query's own
    assert "gpus" not in report["facts"] or report["facts"]["gpus"] == []
    # Nothing of the NVML query outlives doctor.
    assert all(is_gone(pid) for pid in read_pids(tmp_path / "pids"))


def test_without_nvml_no_child_is_started(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("a process was started on a machine without NVML")

    monkeypatch.setattr(subprocesses, "Running", refuse)
    result = gpu.probe(library_paths=[str(tmp_path / "libnvidia-ml.so.1")])
    assert (result.status, result.reason) == (ABSENT, gpu.NOT_FOUND)


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", '{"status": "ok"}', '{"status": "fine", "facts": {}, "reason": null}'],
)
def test_a_child_report_of_the_wrong_shape_is_an_error(text):
    result = gpu._result_from_json(text)
    assert (result.status, result.reason) == (ERROR, "the NVML query printed no report")


# -- a real driver library whose constructor hangs or crashes at dlopen -----------------

COMPILER = shutil.which("cc") or shutil.which("gcc")
CONSTRUCTORS = {
    # A driver waiting on a device that never answers: dlopen never returns, and in CPython
    # before 3.13 it holds the GIL, so no thread of the process that called it runs again.
    "hang": "#include <unistd.h>\n"
    "static void __attribute__((constructor)) stuck(void) { for (;;) pause(); }\n",
    "segfault": "#include <signal.h>\n"
    "static void __attribute__((constructor)) crash(void) { raise(SIGSEGV); }\n",
}


@pytest.mark.skipif(COMPILER is None, reason="needs a C compiler to build a stand-in driver library")
@pytest.mark.parametrize(
    ("behaviour", "deadline", "status", "reason"),
    [
        # doctor's deadline (1 s) comes before the NVML query's own (5 s): the runner names it.
        ("hang", "1", TIMEOUT, "no answer within 1 s (a hung driver or file system call)"),
        # A deadline no load reaches before the crash: the query's own status, whatever the load.
        ("segfault", "25", ERROR, "the NVML query was killed by SIGSEGV"),
    ],
)
def test_a_driver_library_that_hangs_or_crashes_at_dlopen(tmp_path, behaviour, deadline, status, reason):
    source = tmp_path / "nvml.c"
    source.write_text(CONSTRUCTORS[behaviour])
    library_dir = tmp_path / "driver"
    library_dir.mkdir()
    subprocess.run(
        [COMPILER, "-shared", "-fPIC", "-o", str(library_dir / "libnvidia-ml.so.1"), str(source)],
        check=True,
        timeout=60,
    )
    started = time.monotonic()
    result = run_hwcheck(
        "doctor", "--json", "--timeout", deadline, env={"LD_LIBRARY_PATH": str(library_dir)}, timeout=60
    )
    # ~1.3 s idle: returned at the deadline (the hang) or before it (the crash), not after.
    assert time.monotonic() - started < (15 if behaviour == "hang" else 25)
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert (report["probes"]["gpu"]["status"], report["probes"]["gpu"]["reason"]) == (status, reason)
