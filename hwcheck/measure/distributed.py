"""`hwcheck doctor --verify --distributed`: one all-reduce and one peer-to-peer copy per device
pair, observed with the framework's own backend in one child process per device.

Each child (hwcheck/measure/distributed_child.py) runs under the user's interpreter and
`sys.path` (interpreter.py), in its own process group, started through base/children.py; they
meet over TCP on 127.0.0.1 and share one deadline. NCCL (RCCL on ROCm builds) runs on GPUs,
gloo on the CPU, where two processes stand in for two devices. A child that hangs is cut at the
deadline and the stage it was in is kept; what they saw becomes `facts.distributed`.
A rank's answer is checked against RANK_ANSWER (base/answers.py) before any of it is read: one
that does not fit is that rank's failure, said in one line.
"""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import threading
import time
from itertools import combinations
from typing import Any

from hwcheck.base import children
from hwcheck.base.answers import Unusable, checked
from hwcheck.measure.answer_schemas import MAX_RANKS, rank_answer_schema
from hwcheck.measure.interpreter import child_argv, interpreter
from hwcheck.measure.streams import DRAIN_SECONDS, AnswerError, Tail, parse_answer, read_lines, tail_reader
from hwcheck.measure.verify import MAX_ANSWER
from hwcheck.measure.verify_child import MAX_TEXT, bounded

DEFAULT_TIMEOUT = 120.0
CPU_PROCESSES = 2  # with no GPU, two gloo processes on the CPU
MAX_PROCESSES = MAX_RANKS
SHORT_TEXT = 256


def check(
    framework: str, device: str, devices: list[str], *, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """Run the check and return the `distributed` facts block.

    `devices` names the GPUs the process sees (cuda:0 first); on the CPU it is ignored.
    """
    started = time.monotonic()
    on_gpu = device == "gpu" and len(devices) > 0
    world = min(len(devices), MAX_PROCESSES) if on_gpu else CPU_PROCESSES
    names = (
        [bounded(name, SHORT_TEXT) for name in devices[:world]]
        if on_gpu
        else [f"cpu process {r}" for r in range(world)]
    )
    block: dict[str, Any] = {
        "framework": framework,
        "backend": "nccl" if on_gpu else "gloo",
        "device": "gpu" if on_gpu else "cpu",
        "world_size": world,
        "python": interpreter(),
    }
    if framework != "torch":
        block.update(
            outcome="skipped", error=f"runs with torch.distributed, and the advice is for {framework}"
        )
    elif on_gpu and world < 2:
        block.update(outcome="skipped", error="one GPU is visible: there is no pair to check")
    else:
        block.update(_run(world, block["backend"], block["device"], names, timeout))
    block["wall_seconds"] = round(time.monotonic() - started, 3)
    return block


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Rank:
    """One child: its process, the lines it answered and the last stage it named."""

    def __init__(self, rank: int, job: dict[str, Any]) -> None:
        self.rank = rank
        self.schema = rank_answer_schema(float(job["timeout"]))
        self.stage = "start"
        self.answer: dict[str, Any] | None = None
        self.errors = Tail()  # the end of stderr, in bytes
        self.ended: float | None = None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.process = children.spawn(
            child_argv("hwcheck.measure.distributed_child"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        answers = threading.Thread(
            target=read_lines,
            args=(self.process.stdout, self.lines.put),
            kwargs={"limit": MAX_ANSWER},
            daemon=True,
        )
        answers.start()
        self.readers = [answers, tail_reader(self.process.stderr, self.errors)]
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
            self.process.stdin.close()
        except OSError:
            pass  # it died at once: its status says why

    def drain(self) -> bool:
        """Take the lines that arrived; True once the child answered, closed its output or ended.

        Its end is known from the process itself after DRAIN_SECONDS, even while a process it
        started holds its output open.
        """
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                if self.answer is None and self.process.poll() is not None:
                    self.ended = self.ended or time.monotonic()
                    if time.monotonic() - self.ended >= DRAIN_SECONDS:
                        self.answer = {"outcome": "error", "error": self._died()}
                return self.answer is not None
            if line is None:
                self.answer = self.answer or {"outcome": "error", "error": self._died()}
                return True
            try:
                parsed = parse_answer(line, limit=MAX_ANSWER)
            except AnswerError:
                continue
            if isinstance(parsed, dict) and isinstance(parsed.get("stage"), str):
                self.stage = bounded(parsed["stage"], SHORT_TEXT)
            elif isinstance(parsed, dict) and "distributed" in parsed:
                self.answer = usable_answer(parsed["distributed"], self.schema)

    def _died(self) -> str:
        code = self.process.poll()
        tail = self.errors.last_line()
        return bounded(f"exited with status {code} without an answer" + (f": {tail}" if tail else ""))

    def release(self) -> None:
        children.release(self.process, 5.0)
        for reader in self.readers:
            reader.join(0.1)  # a process the child started may hold its pipes for as long as it runs


def usable_answer(answer: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """A rank's answer when it fits `schema`, else that rank's failure naming the misfit."""
    try:
        return dict(checked(answer, schema, "its answer"))
    except Unusable as error:
        return {"outcome": "error", "error": bounded(f"the rank answered unusably: {error}", MAX_TEXT)}


def _run(world: int, backend: str, device: str, names: list[str], timeout: float) -> dict[str, Any]:
    init = f"tcp://127.0.0.1:{_free_port()}"
    job = {"world_size": world, "backend": backend, "device": device, "init_method": init, "timeout": timeout}
    ranks: list[_Rank] = []
    try:
        try:
            for number in range(world):
                ranks.append(_Rank(number, {**job, "rank": number}))
        except OSError as error:
            return {
                "outcome": "error",
                "stage": "start",
                "error": f"could not start {interpreter()}: {error}",
            }
        deadline = time.monotonic() + timeout
        while not all([rank.drain() for rank in ranks]):  # a list: every rank's lines are read
            if time.monotonic() > deadline:
                return _timed_out(ranks, names, timeout)
            time.sleep(0.05)
        return _merged(ranks, names)
    finally:
        for rank in ranks:
            rank.release()


def _timed_out(ranks: list[_Rank], names: list[str], timeout: float) -> dict[str, Any]:
    waiting = [rank for rank in ranks if rank.answer is None]
    stage = waiting[0].stage if waiting else "start"
    merged = _merged(ranks, names)
    merged.update(
        outcome="timeout",
        stage=stage,
        error=f"no answer within {timeout:g} s from rank(s) "
        + ", ".join(str(rank.rank) for rank in waiting)
        + f" (in {stage})",
    )
    return merged


def _merged(ranks: list[_Rank], names: list[str]) -> dict[str, Any]:
    """One block from every rank's answer: the all-reduce, each pair as its receiver saw it."""
    answers = {rank.rank: rank.answer or {} for rank in ranks}
    failed = [(rank, answers[rank.rank]) for rank in ranks if answers[rank.rank].get("outcome") != "ok"]
    all_reduce = [answers[rank.rank].get("all_reduce") for rank in ranks]
    reduced = all(isinstance(item, dict) and item.get("ok") is True for item in all_reduce)
    seconds = max(
        (float(item.get("seconds") or 0.0) for item in all_reduce if isinstance(item, dict)), default=None
    )
    pairs = []
    for low, high in combinations(range(len(ranks)), 2):
        done = [
            p
            for p in answers[high].get("pairs") or []
            if isinstance(p, dict) and p.get("ranks") == [low, high]
        ]
        stuck = [
            rank
            for rank in (low, high)
            if ranks[rank].stage == f"pair {low}-{high}" and answers[rank].get("outcome") != "ok"
        ]
        pair: dict[str, Any] = {"ranks": [low, high], "devices": [names[low], names[high]]}
        if done:
            pair.update(ok=True, seconds=done[0].get("seconds"))
        elif stuck:
            errors = [str(answers[rank].get("error") or "") for rank in stuck]
            pair.update(
                ok=False if any(errors) else None, error=bounded(next((e for e in errors if e), ""), MAX_TEXT)
            )
        else:
            pair.update(ok=None)
        pairs.append(pair)
    block: dict[str, Any] = {
        "outcome": "ok" if not failed else "error",
        "all_reduce": {"ok": reduced, "seconds": seconds},
        "pairs": pairs,
    }
    if failed:
        rank, answer = failed[0]
        block["stage"] = rank.stage
        block["error"] = bounded(f"rank {rank.rank}: {answer.get('error') or 'no answer'}", MAX_TEXT)
    return block
