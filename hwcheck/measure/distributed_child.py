"""One process of `hwcheck doctor --verify --distributed`: torch.distributed on one device.

The first line on stdin is the job: {"rank", "world_size", "backend", "device", "init_method",
"timeout"}. The process imports torch, joins the group (NCCL or RCCL on a GPU, which it takes
by its rank; gloo on the CPU), runs one all-reduce over every process, then one send and receive
per pair of ranks (the same order in every process, so each pair meets), checks the values, and
answers. Before each stage it writes {"stage": NAME} on stdout, so that the parent can say where
a hang stopped; the last line is {"distributed": {...}}. Everything else goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from itertools import combinations
from typing import Any

from hwcheck.measure.verify_child import bounded

ELEMENTS = 1 << 16  # floats per message: 256 KiB, past the sizes NCCL sends inline


def main() -> int:
    """Read the job, run the collective and the pairs, answer; exit 0 unless the process dies."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # what torch prints goes to stderr: stdout carries the stages and the answer

    def say(document: dict[str, Any]) -> None:
        channel.write(json.dumps(document, default=str) + "\n")
        channel.flush()

    job = json.loads(sys.stdin.readline())
    seen: dict[str, Any] = {"rank": job["rank"], "outcome": "error", "pairs": [], "error": ""}
    try:
        _run(job, seen, say)
        seen["outcome"] = "ok"
    except BaseException as error:  # noqa: B036 - a failure is an observation, whatever ended it
        if isinstance(error, KeyboardInterrupt):
            raise
        traceback.print_exc()
        seen["error"] = bounded(f"{type(error).__name__}: {error}")
    say({"distributed": seen})
    return 0


def _run(job: dict[str, Any], seen: dict[str, Any], say: Any) -> None:
    from datetime import timedelta

    say({"stage": "import"})
    import torch
    import torch.distributed as dist

    rank, world = int(job["rank"]), int(job["world_size"])
    device = torch.device("cpu")
    if job["device"] == "gpu":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        seen["device_name"] = torch.cuda.get_device_name(rank)
    say({"stage": "init"})
    dist.init_process_group(
        job["backend"],
        init_method=job["init_method"],
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=float(job["timeout"])),
    )
    try:
        say({"stage": "all-reduce"})
        started = time.perf_counter()
        values = torch.full((ELEMENTS,), float(rank + 1), device=device)
        dist.all_reduce(values)
        _synchronize(torch, device)
        expected = world * (world + 1) / 2
        if not bool(torch.all(values == expected)):
            raise RuntimeError(f"all-reduce gave {values[0].item()}, not {expected}")
        seen["all_reduce"] = {"ok": True, "seconds": round(time.perf_counter() - started, 4)}
        for low, high in combinations(range(world), 2):
            if rank not in (low, high):
                continue
            say({"stage": f"pair {low}-{high}"})
            seen["pairs"].append(_pair(torch, dist, device, rank, low, high))
        say({"stage": "barrier"})
        dist.barrier()
    finally:
        dist.destroy_process_group()


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
