"""deploy/: the Slurm Prolog and the Kubernetes Job that run doctor before training.

The Prolog's exit status is what Slurm acts on (a non-zero Prolog drains the node and requeues
the job: Slurm's Prolog and Epilog Guide, "Failure Handling"), so it is checked against
doctor's own exit status on replayed machines: a V100 whose driver is too old for its
TensorFlow (an error), the recorded H100 (healthy), and for the gate (doctor --strict, exit
status 3) two RTX 4090 without peer-to-peer support (NCCL hangs unless P2P is disabled) and an
A100 node with TensorFlow where the job needs PyTorch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_hwcheck

PROLOG = ROOT / "deploy" / "slurm-prolog.sh"
FACTS = ROOT / "tests" / "fixtures" / "facts"


def _wrapper(folder: Path) -> Path:
    """An `hwcheck` program that runs this checkout's, as an installed one would."""
    program = folder / "hwcheck"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m hwcheck "$@"\n')
    program.chmod(0o755)
    return program


def _prolog(tmp_path: Path, arguments: str, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HWCHECK": str(_wrapper(tmp_path)),
        "HWCHECK_REPORT_DIR": str(tmp_path / "reports"),
        "HWCHECK_ARGS": arguments,
        "SLURM_JOB_ID": "4242",
        **settings,
    }
    return subprocess.run(
        ["bash", str(PROLOG)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )


def test_the_prolog_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(PROLOG)], capture_output=True).returncode == 0


@pytest.mark.parametrize(("fixture", "status"), [("v100-driver-too-old", 1), ("h100-anchor-torch211", 0)])
def test_the_prolog_fails_exactly_where_doctor_does_and_keeps_the_report(tmp_path, fixture, status):
    arguments = f"--facts {FACTS / fixture}.json"
    doctor = run_hwcheck("doctor", "--json", "--strict", *arguments.split())
    assert doctor.returncode == status
    result = _prolog(tmp_path, arguments)
    assert result.returncode == status, result.stderr
    report = tmp_path / "reports" / "doctor-4242.json"
    assert report.read_text() == doctor.stdout  # the same report doctor prints
    assert ("training cannot start" in result.stderr) == (status == 1)


@pytest.mark.parametrize(
    ("fixture", "arguments", "failing"),
    [
        ("rtx4090x2-driver525-torch201", "", "node-p2p-unsupported-class"),
        ("a100-sxm4x4-tf216", "--framework torch", "framework-not-installed"),
    ],
)
def test_the_prolog_drains_a_node_that_fails_the_gate(tmp_path, fixture, arguments, failing):
    replay = f"--facts {FACTS / fixture}.json {arguments}"
    assert run_hwcheck("doctor", *replay.split()).returncode == 0  # no error: only the gate fails it
    assert run_hwcheck("doctor", "--strict", *replay.split()).returncode == 3
    result = _prolog(tmp_path, replay)
    assert result.returncode == 1 and "failed the gate" in result.stderr
    report = json.loads((tmp_path / "reports" / "doctor-4242.json").read_text())
    assert report["gate"]["failing"] == [failing] and report["node"]["ready"] is True
    # A site that drains on errors alone turns the gate off.
    assert _prolog(tmp_path, replay, HWCHECK_STRICT="0").returncode == 0


def test_the_prolog_lets_the_job_start_when_hwcheck_cannot_run(tmp_path):
    missing = _prolog(tmp_path, "", HWCHECK=str(tmp_path / "not-installed"))
    assert missing.returncode == 0 and "exit status 127" in missing.stderr
    refused = _prolog(tmp_path, "--no-such-option")
    assert refused.returncode == 0 and "exit status 2" in refused.stderr


def test_the_prolog_never_evaluates_its_settings(tmp_path):
    marker = tmp_path / "evaluated"
    result = _prolog(
        tmp_path,
        f"--facts $(touch {marker}) `touch {marker}`",
        SLURM_JOB_ID=f"../../{marker.name}; touch {marker}",
    )
    assert not marker.exists()
    assert result.returncode == 0  # doctor refused the literal words: exit status 2, job starts
    assert not list((tmp_path / "reports").glob("*;*"))


def test_the_prolog_runs_where_its_report_cannot_be_kept(tmp_path):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    arguments = f"--facts {FACTS / 'v100-driver-too-old'}.json"
    result = _prolog(tmp_path, arguments, HWCHECK_REPORT_DIR=str(blocked / "reports"))
    assert result.returncode == 1 and "report: /dev/null" in result.stderr


def test_the_kubernetes_job_runs_doctor_before_the_trainer_on_ready_nodes():
    yaml = pytest.importorskip("yaml")
    job = yaml.safe_load((ROOT / "deploy" / "hwcheck-preflight-job.yaml").read_text())
    assert job["kind"] == "Job" and job["apiVersion"] == "batch/v1"
    pod = job["spec"]["template"]["spec"]
    # An init container that fails fails the Pod only when the Pod is never restarted in place.
    assert pod["restartPolicy"] == "Never"
    (preflight,) = pod["initContainers"]
    assert preflight["command"][:3] == ["hwcheck", "doctor", "--strict"]  # the gate: exit 1 or 3 fails
    (trainer,) = pod["containers"]
    assert preflight["image"] == trainer["image"]  # the training image's framework is checked
    assert pod["nodeSelector"] == {"feature.node.kubernetes.io/hwcheck-ready": "true"}
