"""One process of `hwcheck doctor --verify --distributed`: torch.distributed on one device.

The first line on stdin is the job: {"rank", "world_size", "backend", "device", "init_method",
"timeout"}. The process imports torch, joins the group (NCCL or RCCL on a GPU, which it takes
by its rank; gloo on the CPU), runs one all-reduce over every process, then one send and receive
per pair of ranks (the same order in every process, so each pair meets), checks the values, and
answers. Before each stage it writes {"stage": NAME} on stdout, so that the parent can say where
a hang stopped; the last line is {"distributed": {...}}. Everything else goes to stderr.

A job with "sizes" is one rank of a launched job (measure/launcher.py: torchrun, srun, a
PyTorchJob): it joins through env:// with the launcher's variables, takes the GPU of its
"local_rank", and after the first all-reduce times one all-reduce and one all-gather per size
instead of the pairs; every rank learns every rank's times, so each can name the slowest.

HWCHECK_TEST_DISTRIBUTED_HANG=RANK:STAGE (for tests only: the hangs of tests/ are made with it)
makes that rank stop at the start of that stage, as a rank that hangs there would.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import time
import traceback
from itertools import combinations
from typing import Any

from hwcheck.measure.verify_child import bounded

ELEMENTS = 1 << 16  # floats per message: 256 KiB, past the sizes NCCL sends inline
FLOAT_BYTES = 4
HANG_VARIABLE = "HWCHECK_TEST_DISTRIBUTED_HANG"


def iterations(size: int) -> int:
    """Timed repetitions of a collective of `size` bytes: more when small, the same in every rank."""
    return max(2, min(10, (4 << 20) // max(size, 1)))


def bus_factor(operation: str, world: int) -> float:
    """nccl-tests' bus bandwidth over algorithm bandwidth: 2(n-1)/n for all-reduce, (n-1)/n for all-gather."""
    share = (world - 1) / world
    return 2 * share if operation == "all-reduce" else share


def main() -> int:
    """Read the job, run the collective and the pairs, answer; exit 0 unless the process dies."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # what torch prints goes to stderr: stdout carries the stages and the answer

    def say(document: dict[str, Any]) -> None:
        channel.write(json.dumps(document, default=str) + "\n")
        channel.flush()

    job = json.loads(sys.stdin.readline())
    seen: dict[str, Any] = {"rank": job["rank"], "outcome": "error", "pairs": [], "error": ""}
    hang = os.environ.get(HANG_VARIABLE, "")

    def stage(name: str) -> None:
        say({"stage": name})
        if hang == f"{job['rank']}:{name}":
            time.sleep(float(job["timeout"]) * 4)  # longer than the parent waits: a hang, cut by it

    try:
        _run(job, seen, stage)
        seen["outcome"] = "ok"
    except BaseException as error:  # noqa: B036 - a failure is an observation, whatever ended it
        if isinstance(error, KeyboardInterrupt):
            raise
        traceback.print_exc()
        seen["error"] = bounded(f"{type(error).__name__}: {error}")
    say({"distributed": seen})
    return 0


def _run(job: dict[str, Any], seen: dict[str, Any], stage: Any) -> None:
    from datetime import timedelta

    stage("import")
    import torch
    import torch.distributed as dist

    rank, world = int(job["rank"]), int(job["world_size"])
    index = int(job.get("local_rank", rank))
    device = torch.device("cpu")
    if job["device"] == "gpu":
        # srun --gpus-per-task shows each task its own GPU alone, as cuda:0, whatever its local rank.
        index %= max(1, torch.cuda.device_count())
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        seen["device_name"] = torch.cuda.get_device_name(index)
    stage("init")
    dist.init_process_group(
        job["backend"],
        init_method=job["init_method"],
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=float(job["timeout"])),
    )
    try:
        stage("all-reduce")
        started = time.perf_counter()
        values = torch.full((ELEMENTS,), float(rank + 1), device=device)
        dist.all_reduce(values)
        _synchronize(torch, device)
        expected = world * (world + 1) / 2
        if not bool(torch.all(values == expected)):
            raise RuntimeError(f"all-reduce gave {values[0].item()}, not {expected}")
        seen["all_reduce"] = {"ok": True, "seconds": round(time.perf_counter() - started, 4)}
        if job.get("sizes"):
            seen["collectives"] = _sizes(torch, dist, device, job, stage)
        for low, high in [] if job.get("sizes") else combinations(range(world), 2):
            if rank not in (low, high):
                continue
            stage(f"pair {low}-{high}")
            seen["pairs"].append(_pair(torch, dist, device, rank, low, high))
        stage("barrier")
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _sizes(torch: Any, dist: Any, device: Any, job: dict[str, Any], stage: Any) -> list[dict[str, Any]]:
    """One all-reduce and one all-gather per size, timed in every rank; the slowest rank's time counts.

    As nccl-tests counts them: an all-gather's size is what each rank receives in all.
    """
    world = int(job["world_size"])
    plan = _plan([int(size) for size in job["sizes"]], world)
    mine = []
    for operation, size in plan:
        stage(f"{operation} {size}")
        mine.append(_timed(torch, dist, device, operation, size, world))
    stage("gather times")
    place = {
        "host": bounded(socket.gethostname(), 128),
        "node": os.environ.get("GROUP_RANK") or os.environ.get("SLURM_NODEID") or "",
    }
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, {**place, "seconds": mine})
    rows = []
    for index, (operation, size) in enumerate(plan):
        times = [float(other["seconds"][index]) for other in everyone]
        slowest = max(range(world), key=lambda r: times[r])
        algbw = size / times[slowest] / 1e9 if times[slowest] > 0 else 0.0
        rows.append(
            {
                "operation": operation,
                "bytes": size,
                "iterations": iterations(size),
                "seconds": _figure(times[slowest]),
                "median_seconds": _figure(statistics.median(times)),
                "algbw_gbps": _figure(algbw),
                "busbw_gbps": _figure(algbw * bus_factor(operation, world)),
                "slowest_rank": slowest,
                "slowest_host": bounded(str(everyone[slowest]["host"]), 128),
                "slowest_node": bounded(str(everyone[slowest]["node"]), 32),
            }
        )
    return rows


def _figure(value: float) -> float:
    """A measured figure to four significant digits: what the timing can tell apart."""
    return float(f"{value:.4g}")


def _plan(sizes: list[int], world: int) -> list[tuple[str, int]]:
    """The (operation, bytes) measured in order; an all-gather's bytes are whole floats per rank."""
    plan = []
    for size in sizes:
        plan.append(("all-reduce", max(FLOAT_BYTES, size // FLOAT_BYTES * FLOAT_BYTES)))
        per_rank = max(1, size // FLOAT_BYTES // world)
        plan.append(("all-gather", per_rank * FLOAT_BYTES * world))
    return plan


def _timed(torch: Any, dist: Any, device: Any, operation: str, size: int, world: int) -> float:
    """Seconds of one `operation` of `size` bytes here: the mean of its repetitions after a warm-up."""
    if operation == "all-reduce":
        values = torch.ones(max(1, size // FLOAT_BYTES), device=device)

        def once() -> None:
            dist.all_reduce(values)
    else:
        part = torch.ones(max(1, size // FLOAT_BYTES // world), device=device)
        parts = [torch.empty_like(part) for _ in range(world)]

        def once() -> None:
            dist.all_gather(parts, part)

    once()  # the warm-up: connections and buffers set up outside the timing
    _synchronize(torch, device)
    dist.barrier()
    count = iterations(size)
    started = time.perf_counter()
    for _ in range(count):
        once()
    _synchronize(torch, device)
    return (time.perf_counter() - started) / count


def _pair(torch: Any, dist: Any, device: Any, rank: int, low: int, high: int) -> dict[str, Any]:
    """The lower rank sends, the higher receives and checks: one peer-to-peer copy of the pair."""
    started = time.perf_counter()
    if rank == low:
        dist.send(torch.full((ELEMENTS,), float(low + 1), device=device), dst=high)
    else:
        received = torch.zeros(ELEMENTS, device=device)
        dist.recv(received, src=low)
        _synchronize(torch, device)
        if not bool(torch.all(received == float(low + 1))):
            raise RuntimeError(f"rank {high} received other values than rank {low} sent")
    _synchronize(torch, device)
    return {"ranks": [low, high], "ok": True, "seconds": round(time.perf_counter() - started, 4)}


def _synchronize(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
