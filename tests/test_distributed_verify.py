"""`hwcheck doctor --verify --distributed` (issue 36 item 7): one all-reduce and one peer-to-peer
copy per device pair, observed with the framework's backend in one process per device.

This machine has no GPU: the check runs for real with gloo in two CPU processes (torch is
installed here). A hang is observed for real too, with a deadline shorter than torch's import,
and the block it records is replayed to check the finding.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.measure.distributed import check

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
V100 = FIXTURES / "facts" / "v100-torch241-trainers.json"


@needs_torch
def test_on_this_cpu_two_gloo_processes_run_the_all_reduce_and_it_is_recorded():
    result = run_hwcheck("doctor", "--verify", "--distributed", "--framework", "torch", "--json", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    seen = report["facts"]["distributed"]
    assert seen["backend"] == "gloo" and seen["device"] == "cpu" and seen["world_size"] == 2
    assert seen["outcome"] == "ok" and seen["all_reduce"]["ok"] is True
    assert [pair["ranks"] for pair in seen["pairs"]] == [[0, 1]] and seen["pairs"][0]["ok"] is True
    found = {f["id"]: f for f in report["recommendation"]["findings"]}
    assert "with gloo on the CPU" in found["distributed-ok"]["message"]
    from hwcheck.facts import schema_problem

    assert schema_problem(report, "report") is None


@needs_torch
def test_a_process_that_does_not_answer_in_time_is_a_hang_naming_its_stage(tmp_path):
    seen = check("torch", "cpu", [], timeout=0.3)  # torch's import alone takes longer
    assert seen["outcome"] == "timeout" and seen["stage"] in ("start", "import")
    assert seen["pairs"] == [{"ranks": [0, 1], "devices": ["cpu process 0", "cpu process 1"], "ok": None}]
    facts = {**json.loads(V100.read_text()), "distributed": seen}
    replay = tmp_path / "facts.json"
    replay.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--json", "--facts", str(replay), "--framework", "torch")
    assert result.returncode == 1
    found = {f["id"]: f for f in json.loads(result.stdout)["recommendation"]["findings"]}
    hang = found["distributed-hang"]
    assert hang["severity"] == "error" and "cpu process 0 and cpu process 1" in hang["message"]


def test_a_failed_gpu_pair_is_named_with_the_remedy(tmp_path):
    pair = {
        "ranks": [0, 1],
        "devices": ["cuda:0 (NVIDIA GeForce RTX 4090)", "cuda:1 (NVIDIA GeForce RTX 4090)"],
    }
    seen = {
        "framework": "torch",
        "backend": "nccl",
        "device": "gpu",
        "world_size": 2,
        "outcome": "error",
        "stage": "pair 0-1",
        "error": "rank 1: DistBackendError: NCCL error",
        "all_reduce": {"ok": True, "seconds": 0.01},
        "pairs": [{**pair, "ok": False, "error": "DistBackendError: NCCL error"}],
    }
    replay = tmp_path / "facts.json"
    replay.write_text(json.dumps({**json.loads(V100.read_text()), "distributed": seen}))
    result = run_hwcheck("doctor", "--json", "--facts", str(replay), "--framework", "torch")
    found = {f["id"]: f for f in json.loads(result.stdout)["recommendation"]["findings"]}
    failed = found["distributed-failed"]
    assert "cuda:0 (NVIDIA GeForce RTX 4090) and cuda:1 (NVIDIA GeForce RTX 4090)" in failed["message"]
    assert "NCCL_P2P_DISABLE=1" in failed["remedy"]


def test_another_framework_is_skipped_and_one_gpu_has_no_pair():
    assert check("jax", "gpu", ["cuda:0 (A100)", "cuda:1 (A100)"])["outcome"] == "skipped"
    assert check("torch", "gpu", ["cuda:0 (A100)"])["outcome"] == "skipped"


def test_distributed_without_verify_is_a_one_line_error():
    result = run_hwcheck("doctor", "--distributed", "--facts", str(V100))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "--distributed" in line and "--verify" in line


DEADLINE = FIXTURES / "facts" / "cpu-amx-torch213-distributed-deadline.json"
NO_INTERFACE = FIXTURES / "facts" / "cpu-amx-torch213-distributed-gloo-no-interface.json"
SKIPPED = FIXTURES / "facts" / "cpu-amx-torch213-jax0102-distributed-skipped.json"


def _findings(facts, framework: str = "torch") -> dict:
    result = run_hwcheck("doctor", "--json", "--facts", str(facts), "--framework", framework)
    return {f["id"]: f for f in json.loads(result.stdout)["recommendation"]["findings"]}


def test_a_hang_in_the_import_is_named_so_and_blames_no_network():
    hang = _findings(DEADLINE)["distributed-hang"]
    assert "hung in the import of torch, before any process met another" in hang["message"]
    assert "were not checked" in hang["message"]
    assert "--verify-timeout" in hang["remedy"] and "import torch" in hang["remedy"]
    assert "loopback" not in hang["remedy"] and "firewall" not in hang["remedy"]


@pytest.mark.parametrize(
    ("stage", "backend", "named", "remedy"),
    [
        ("init", "gloo", "hung in the rendezvous (init_process_group)", "GLOO_SOCKET_IFNAME"),
        ("init", "nccl", "hung in the rendezvous (init_process_group)", "NCCL_SOCKET_IFNAME"),
        ("all-reduce", "nccl", "hung in the first collective (all-reduce)", "NCCL_P2P_DISABLE=1"),
        ("pair 0-1", "nccl", "hung in the peer-to-peer copy of ranks 0-1", "NCCL_P2P_DISABLE=1"),
    ],
)
def test_each_stage_of_a_hang_is_named_with_its_own_remedy(tmp_path, stage, backend, named, remedy):
    facts = json.loads(DEADLINE.read_text())
    facts["distributed"].update(stage=stage, backend=backend)
    replay = tmp_path / "facts.json"
    replay.write_text(json.dumps(facts))
    hang = _findings(replay)["distributed-hang"]
    assert named in hang["message"] and remedy in hang["remedy"]
    assert "import torch" not in hang["remedy"]


def test_a_failure_names_the_rendezvous():
    failed = _findings(NO_INTERFACE)["distributed-failed"]
    assert failed["message"].startswith("Distributed check failed in the rendezvous (init_process_group)")


def test_a_skipped_check_says_in_the_text_what_was_not_checked():
    assert check("keras", "cpu", [])["outcome"] == "skipped"
    skipped = _findings(SKIPPED, "jax")["distributed-skipped"]
    assert "the advice is for jax" in skipped["message"]
    text = run_hwcheck("doctor", "--facts", str(SKIPPED), "--framework", "jax", env={"COLUMNS": "80"})
    assert text.returncode == 0
    assert "Skipped by --verify --distributed" in text.stdout
    assert "no all-reduce and no copy between the" in text.stdout
