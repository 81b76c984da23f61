"""Every child hwcheck starts dies with hwcheck, however hwcheck ends (issue 21, class 3).

hwcheck runs in its own session here; its children (a fake nvcc, bench's measuring process)
lead groups of their own and write their group id to a file. After the signal, no process of
either group may be left running: checked in /proc by process group (a zombie, dead but not
yet reaped by init, counts as gone), not by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups in /proc")

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def live_members(group: int) -> list[int]:
    """Processes of process group `group` that are not zombies."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # after "(command)": state, ppid, pgrp, ...
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def wait_for_file(path: Path, process: subprocess.Popen[str], wait: float = 120.0) -> str:
    until = time.monotonic() + wait
    while time.monotonic() < until:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        if process.poll() is not None:
            raise AssertionError(f"hwcheck ended first: {process.communicate()}")
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def gone(group: int, wait: float = 20.0) -> bool:
    until = time.monotonic() + wait
    while time.monotonic() < until:
        if not live_members(group):
            return True
        time.sleep(0.05)
    return False


def _default_signals() -> None:
    # A test run started in the background by a shell inherits SIGINT ignored, and so would
    # hwcheck (which keeps an ignored SIGINT, as under nohup): start it as a terminal would.
    for number in SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def start_hwcheck(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hwcheck", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, so we can check it is empty afterwards too
        preexec_fn=_default_signals,
    )


def end_and_check(process: subprocess.Popen[str], child_group: int, number: int) -> None:
    process.send_signal(number)
    try:
        _, errors = process.communicate(timeout=60)
        assert "Traceback" not in errors
        assert gone(child_group), f"left running in the child's group: {live_members(child_group)}"
        assert gone(process.pid), f"left running in hwcheck's group: {live_members(process.pid)}"
    finally:
        for group in (child_group, process.pid):  # a failing run must not leave them to the next test
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize("number", SIGNALS, ids=lambda n: signal.Signals(n).name)
def test_doctor_ended_by_a_signal_leaves_no_nvcc(tmp_path, number):
    marker = tmp_path / "nvcc-group"
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    # A hung nvcc that starts a grandchild too; both are in the group it leads.
    nvcc.write_text(f'#!/bin/sh\nsleep 3600 &\necho "$$" > {marker}\nwait\n')
    nvcc.chmod(0o755)
    env = {"PATH": f"{nvcc.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = start_hwcheck(["doctor", "--json", "--timeout", "600"], env, tmp_path)
    group = int(wait_for_file(marker, process))
    assert live_members(group)
    end_and_check(process, group, number)


@pytest.mark.parametrize("number", SIGNALS, ids=lambda n: signal.Signals(n).name)
def test_bench_ended_by_a_signal_leaves_no_measuring_process_nor_output(tmp_path, number):
    marker = tmp_path / "child-group"
    script = tmp_path / "slow_step.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import os
            import subprocess
            import time

            import torch


            def make_step(policy):
                subprocess.Popen(["sleep", "3600"])  # a grandchild, in the same group
                with open({str(marker)!r}, "w") as handle:
                    handle.write(f"{{os.getpgrp()}}\\n")

                def step():
                    time.sleep(3600)
                    return 0.0

                return step
            """
        )
    )
    output = tmp_path / "bench.json"
    args = ["bench", "--script", str(script), "--framework", "torch", "--device", "cpu"]
    process = start_hwcheck([*args, "--json", "-o", str(output)], {}, tmp_path)
    group = int(wait_for_file(marker, process))
    assert live_members(group)
    end_and_check(process, group, number)
    assert not output.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bench.json")] == []
