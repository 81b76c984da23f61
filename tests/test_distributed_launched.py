"""`hwcheck doctor --verify --distributed` under a launcher: one rank of the job's own group.

Two torchrun "nodes" meet through the c10d rendezvous on 127.0.0.1 (gloo, this machine has no
GPU) and rank 0 reports one all-reduce and one all-gather per size with nccl-tests' bandwidths.
Hangs are made for real with HWCHECK_TEST_DISTRIBUTED_HANG (a test-only variable the child
honours): two ranks joined as a PyTorchJob joins them (RANK, WORLD_SIZE, MASTER_ADDR/PORT), one
stopping at a stage, and the report of each names where it stopped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.measure.distributed import check_launched
from hwcheck.measure.launcher import Launch, LaunchError, first_node, launched
from hwcheck.render.distributed import rank_line

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
LAUNCHED = FIXTURES / "facts" / "cpu-amx-torch213-distributed-launched.json"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@needs_torch
def test_two_torchrun_nodes_on_loopback_report_bandwidth_per_size():
    port = _free_port()
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    nodes = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"),
                *("--rdzv-backend", "c10d", "--rdzv-id", "hwcheck-test"),
                *("--rdzv-endpoint", f"127.0.0.1:{port}", "--max-restarts", "0"),
                *("-m", "hwcheck", "doctor", "--verify", "--distributed", "--framework", "torch"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        for _ in (0, 1)
    ]
    outputs = [node.communicate(timeout=240) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err[-1500:] for _, err in outputs]
    report = next(out for out, _ in outputs if "Collectives:" in out)
    other = next(out for out, _ in outputs if "Collectives:" not in out)
    assert "Collectives: 2 ranks with gloo (torchrun)" in report
    for size in ("1 KiB", "1 MiB", "16 MiB"):
        assert any(line.split()[:3] == ["all-reduce", *size.split()] for line in report.splitlines())
        assert any(line.split()[:3] == ["all-gather", *size.split()] for line in report.splitlines())
    assert "[distributed-collectives-ok]" in report
    assert all(len(line) <= 80 for line in report.splitlines())
    assert other.strip().endswith("the collectives ran; rank 0 prints the report.")
    assert "hwcheck rank 1/2 (torchrun)" in other and len(other.strip().splitlines()) == 1


def _job(stage: str, monkeypatch) -> list[dict]:
    """Two ranks joined through RANK/WORLD_SIZE/MASTER_*, rank 1 stopping at `stage`."""
    monkeypatch.setenv("HWCHECK_TEST_DISTRIBUTED_HANG", f"1:{stage}")
    port = _free_port()
    blocks: list[dict] = [{}, {}]

    def one(rank: int) -> None:
        launch = Launch("env", rank, 2, 0, "127.0.0.1", port)
        blocks[rank] = check_launched("torch", "cpu", launch, timeout=30)

    threads = [threading.Thread(target=one, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    return blocks


def _hang(block: dict, tmp_path) -> dict:
    """The finding doctor's report gives for `block`, replayed on the launched machine's facts."""
    facts = {**json.loads(LAUNCHED.read_text()), "distributed": block}
    replay = tmp_path / "facts.json"
    replay.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--json", "--facts", str(replay), "--framework", "torch")
    assert result.returncode == 1, result.stderr
    return {f["id"]: f for f in json.loads(result.stdout)["recommendation"]["findings"]}[
        "distributed-job-hang"
    ]


@needs_torch
@pytest.mark.parametrize(
    ("stage", "hung", "waiting"),
    [
        ("import", "the import of torch", "the rendezvous (init_process_group)"),
        ("init", "the rendezvous (init_process_group)", "the rendezvous (init_process_group)"),
        ("all-reduce", "the first collective (all-reduce)", "the first collective (all-reduce)"),
    ],
)
def test_a_rank_that_hangs_is_named_by_its_stage(tmp_path, monkeypatch, stage, hung, waiting):
    rank0, rank1 = _job(stage, monkeypatch)
    assert rank1["outcome"] == "timeout" and rank1["stage"] == stage
    assert rank_line(rank1) == f"hwcheck rank 1/2 (env://): hung in {hung}."
    assert rank0["outcome"] == "timeout"
    message = _hang(rank0, tmp_path)
    assert f"hung in {waiting}" in message["message"]
    if stage != "all-reduce":  # rank 0 waits at the rendezvous for the rank that never came
        assert "every node of the job was started" in message["remedy"]
        assert "127.0.0.1" not in message["remedy"]


def test_the_recorded_launched_run_shows_each_size_within_80_columns():
    result = run_hwcheck("doctor", "--facts", str(LAUNCHED), "--framework", "torch", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "Collectives: 2 ranks with gloo (torchrun); GB/s as nccl-tests counts" in lines
    start = lines.index("collective    size      time  algbw  busbw  slowest")
    rows = [line.split() for line in lines[start + 1 : start + 7]]
    assert [(row[0], row[1] + " " + row[2]) for row in rows] == [
        ("all-reduce", "1 KiB"),
        ("all-gather", "1 KiB"),
        ("all-reduce", "1 MiB"),
        ("all-gather", "1 MiB"),
        ("all-reduce", "16 MiB"),
        ("all-gather", "16 MiB"),
    ]
    found = run_hwcheck("doctor", "--json", "--facts", str(LAUNCHED), "--framework", "torch")
    ok = {f["id"]: f for f in json.loads(found.stdout)["recommendation"]["findings"]}[
        "distributed-collectives-ok"
    ]
    assert "one all-reduce and one all-gather at 1 KiB, 1 MiB, 16 MiB; at 16 MiB:" in ok["message"]


def test_bus_bandwidth_is_nccl_tests_formula():
    from hwcheck.measure.distributed_child import bus_factor

    assert bus_factor("all-reduce", 2) == 1.0 and bus_factor("all-gather", 2) == 0.5
    assert bus_factor("all-reduce", 8) == 1.75 and bus_factor("all-gather", 8) == 0.875
    recorded = json.loads(LAUNCHED.read_text())["distributed"]["collectives"]
    for row in recorded:
        algbw = row["bytes"] / row["seconds"] / 1e9
        assert row["algbw_gbps"] == pytest.approx(algbw, rel=1e-3)
        assert row["busbw_gbps"] == pytest.approx(algbw * bus_factor(row["operation"], 2), rel=1e-3)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        (
            {
                "RANK": "1",
                "WORLD_SIZE": "4",
                "LOCAL_RANK": "1",
                "MASTER_ADDR": "10.0.0.1",
                "MASTER_PORT": "29400",
            },
            Launch("env", 1, 4, 1, "10.0.0.1", 29400),
        ),
        (
            {
                "RANK": "0",
                "WORLD_SIZE": "2",
                "TORCHELASTIC_RUN_ID": "x",
                "MASTER_ADDR": "a",
                "MASTER_PORT": "1",
            },
            Launch("torchrun", 0, 2, 0, "a", 1),
        ),
        (
            {
                "SLURM_PROCID": "3",
                "SLURM_NTASKS": "8",
                "SLURM_LOCALID": "1",
                "SLURM_NODELIST": "gpu[07-10],x1",
            },
            Launch("slurm", 3, 8, 1, "gpu07", 29500),
        ),
        ({"RANK": "0", "WORLD_SIZE": "1"}, None),  # one process: the node's own check
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NODELIST": "n1"}, None),
        ({}, None),
    ],
)
def test_the_launchers_environment_is_read(environ, expected):
    assert launched(environ) == expected


@pytest.mark.parametrize(
    "environ",
    [
        {"RANK": "2", "WORLD_SIZE": "2"},
        {"RANK": "-1", "WORLD_SIZE": "2"},
        {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a;rm -rf /"},
        {"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "70000"},
        {"SLURM_PROCID": "0", "SLURM_NTASKS": "2"},
    ],
)
def test_a_launcher_variable_that_does_not_fit_is_refused(environ):
    with pytest.raises(LaunchError):
        launched(environ)


def test_a_bad_launcher_variable_is_one_line_and_exit_2():
    result = run_hwcheck(
        "doctor", "--verify", "--distributed", "--framework", "torch", env={"RANK": "x", "WORLD_SIZE": "2"}
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "RANK='x'" in line


def test_the_first_node_of_a_slurm_list():
    assert first_node("node[01-04,07],gpu5") == "node01"
    assert first_node("gpu5,node[1-2]") == "gpu5"
    assert first_node("single") == "single"
    assert first_node("") == ""


def test_a_rank_answer_with_a_forged_bandwidth_is_that_ranks_failure():
    from hwcheck.measure.answer_schemas import rank_answer_schema
    from hwcheck.measure.distributed import usable_answer

    row = {"operation": "all-reduce", "bytes": 1024, "seconds": 0.1, "algbw_gbps": 1.0, "busbw_gbps": 1.0}
    good = {"outcome": "ok", "collectives": [{**row, "slowest_rank": 1}]}
    assert usable_answer(good, rank_answer_schema(30))["outcome"] == "ok"
    for forged in (
        {"slowest_rank": "1"},
        {"slowest_rank": 1, "seconds": 1e9},
        {"slowest_rank": 1, "busbw_gbps": -1},
    ):
        answer = usable_answer({"outcome": "ok", "collectives": [{**row, **forged}]}, rank_answer_schema(30))
        assert answer["outcome"] == "error" and "collectives[0]" in answer["error"]


@pytest.mark.parametrize(
    "stage", ["import", "init", "all-reduce", "all-gather 16777216", "gather times", "barrier"]
)
def test_a_ranks_one_line_fits_80_columns_at_any_rank_and_stage(stage):
    seen = {"rank": 4095, "world_size": 4096, "launcher": "torchrun", "framework": "torch"}
    line = rank_line({**seen, "outcome": "timeout", "stage": stage})
    assert line.startswith("hwcheck rank 4095/4096 (torchrun): hung in the ") and len(line) <= 80
    assert rank_line({**seen, "outcome": "ok"}).endswith("rank 0 prints the report.")
