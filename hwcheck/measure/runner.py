"""The parent: plans the precision variants, runs each in a fresh child process, builds the block."""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from hwcheck.base import children
from hwcheck.base.answers import problem
from hwcheck.base.errors import InputError
from hwcheck.base.records import NamedTuple
from hwcheck.engine.aliases import UnknownWord, resolve
from hwcheck.facts.stats import relative_spread, speedup, summarize
from hwcheck.measure.answer_schemas import CHILD_RESULT
from hwcheck.measure.streams import (
    ENDED,
    TIMED_OUT,
    AnswerError,
    Tail,
    next_line,
    parse_answer,
    read_lines,
    signal_name,
    tail_reader,
)

BENCH_SCHEMA_VERSION = 1
FRAMEWORKS = ("torch", "keras", "tensorflow", "jax")
KERAS_BACKENDS = ("tensorflow", "jax", "torch")
DEFAULT_STEPS, DEFAULT_WARMUP = 20, 3
QUICK_STEPS, QUICK_WARMUP = 8, 2
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 86400.0
MAX_STEPS = 100_000
# How a precision's reason starts when the budget's deadline ended a wait (doctor --measure reads it).
BUDGET_RAN_OUT = "the --budget ran out"
# After its result, how long a child gets to exit, then to end on SIGTERM before SIGKILL.
EXIT_GRACE = 2.0
# Seconds past a budget's deadline a child may take to hand over the result it has ready.
FINISH_GRACE = 2.0

# Called with (variant name, steps done, steps in all) as a child reports progress.
Progress = Callable[[str, int, int], None]


class Variant(NamedTuple):
    """One precision to measure: a policy plus the TF32 and loss-scaling switches."""

    name: str
    policy: str
    tf32: bool
    loss_scaling: bool


VARIANTS = (
    Variant("float32", "float32", False, False),
    Variant("float32+tf32", "float32", True, False),
    Variant("mixed_bfloat16", "mixed_bfloat16", False, False),
    Variant("mixed_float16", "mixed_float16", False, True),
    Variant("mixed_float16-noscale", "mixed_float16", False, False),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)


def select_variants(policies: str | None) -> list[Variant]:
    """The variants --policies names (comma-separated), in the standard order; all when None."""
    if policies is None:
        return list(VARIANTS)
    try:
        wanted = [resolve("precision", p, VARIANT_NAMES) for p in policies.split(",") if p.strip()]
    except UnknownWord as error:
        raise InputError("--policies", str(error)) from None
    if not wanted:
        raise InputError("--policies", "names no precision")
    return [v for v in VARIANTS if v.name in wanted]


def default_framework() -> str:
    """torch when it is installed, else keras."""
    return "torch" if _installed("torch") else "keras"


def keras_backend(framework: str) -> str | None:
    """The backend a Keras run computes on: KERAS_BACKEND's, TensorFlow for --framework tensorflow."""
    if framework == "tensorflow":
        return "tensorflow"
    if framework == "keras":
        return os.environ.get("KERAS_BACKEND", "tensorflow")
    return None


def engine_framework(framework: str) -> str:
    """The framework the rules engine advises for (Keras takes its backend's)."""
    return keras_backend(framework) or framework


def canonical_framework(framework: str) -> str:
    """The framework a word names ("pytorch" is torch); InputError suggesting the closest otherwise."""
    try:
        return resolve("framework", framework, FRAMEWORKS)
    except UnknownWord as error:
        raise InputError("--framework", str(error)) from None


def check_framework(framework: str, *, chosen: bool = True) -> None:
    """Raise InputError, with the install command, when the framework (or Keras's backend) is missing.

    `chosen` False: no framework was asked for and none is installed, so every one is offered.
    """
    if framework not in FRAMEWORKS:
        raise InputError(
            "--framework", f"unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}"
        )
    backend = keras_backend(framework)
    if backend is not None and backend not in KERAS_BACKENDS:
        raise InputError(
            "KERAS_BACKEND", f"unknown backend {backend!r}; expected one of {', '.join(KERAS_BACKENDS)}"
        )
    needed = {"keras": ["keras"], "tensorflow": ["keras"]}.get(framework, [framework])
    needed += [backend] if backend else []
    missing = [name for name in needed if not _installed(name)]
    if missing and not chosen and not any(_installed(name) for name in ("torch", "jax")):
        raise InputError(
            "hwcheck bench",
            "no framework to measure with is installed; install one, then run hwcheck bench again: "
            f"{install_command('torch')}, or {install_command('keras')} tensorflow, "
            f"or {install_command('jax')}",
        )
    if missing:
        commands = " && ".join(install_command(name) for name in missing)
        raise InputError(
            "--framework", f"{framework} needs {' and '.join(missing)}, which is not installed: {commands}"
        )


def install_command(name: str) -> str:
    """The command that installs a framework's package (rules/knowledge/frameworks.toml's runtimes)."""
    from hwcheck import knowledge

    commands = {row["name"]: row["install"] for row in knowledge.load("frameworks")["runtime"]}
    return commands.get(name, f"pip install {name}")


def child_environment(framework: str, variant: Variant, device: str) -> tuple[dict[str, str], list[str]]:
    """The environment a variant's child sets before importing the framework, and notes about it."""
    env: dict[str, str] = {}
    notes: list[str] = []
    backend = keras_backend(framework)
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = "-1"  # the run measures the CPU even on a machine with GPUs
        env["JAX_PLATFORMS"] = "cpu"
    else:
        # The precisions' processes share the device: TensorFlow and JAX would each take most
        # of its memory at start-up, leaving none for the next.
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    if variant.policy == "float32" and not variant.tf32:
        env["NVIDIA_TF32_OVERRIDE"] = "0"
    if "tensorflow" in (backend, framework):
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
        if device == "cpu" and variant.policy == "mixed_float16":
            env["TF_ENABLE_ONEDNN_OPTS"] = "0"
            notes.append(
                "ran with TF_ENABLE_ONEDNN_OPTS=0: oneDNN's float16 kernels take seconds per step on a "
                "CPU (about 450x float32); the timeout caps it all the same"
            )
    return env, notes


class Worker:
    """One variant's measuring process (`python -m hwcheck.measure.child`), kept alive between batches.

    The variants' workers take turns in rounds, so a change in the machine under the run (a
    neighbour, a clock) falls on every precision alike. Each exchange has its own deadline
    (`timeout`); a worker that dies, hangs or cannot be read is failed with the reason, and
    asks for nothing more. A contract error in a user script raises InputError. A `deadline`
    (time.monotonic(), the end of a --budget) cuts every wait there too, loading and warm-up
    included, so the budget counts a framework's import; the timed batches are the planner's to
    fit (rounds.plan_rounds), and the final result, which the child has ready, gets FINISH_GRACE.
    """

    def __init__(
        self,
        job: dict[str, Any],
        timeout: float,
        on_progress: Callable[[int], None],
        deadline: float | None = None,
    ) -> None:
        from hwcheck.measure.interpreter import child_argv

        self.job, self.timeout, self.on_progress, self.deadline = job, timeout, on_progress, deadline
        self.failure: dict[str, Any] | None = None
        self.ending = False
        self.done = self.unreadable = 0
        # Its own group, killed with what it started at a deadline and whenever hwcheck ends.
        self.process = children.spawn(
            # The user's interpreter and sys.path order: it measures the framework doctor describes.
            child_argv("hwcheck.measure.child"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        # Only the end of stderr is kept, in bytes: a script may write gigabytes there, on one line.
        self.errors = Tail()
        reader = threading.Thread(target=read_lines, args=(self.process.stdout, self.lines.put), daemon=True)
        reader.start()
        self.readers = [reader, tail_reader(self.process.stderr, self.errors)]
        self._send(job)

    @property
    def pid(self) -> int:
        """The measuring process's id."""
        return self.process.pid

    def loaded(self) -> bool:
        """Wait until the child has built its step; False when it failed (see `failure`)."""
        answer = self._receive("loaded", "while loading", budgeted=True)
        return answer is not None and answer == "ok"

    def batch(self, steps: int, *, warmup: bool = False) -> list[float] | None:
        """Run `steps` steps; their times in ms, or None once the variant has failed."""
        if self.failure is not None or not self._send({"steps": steps, "warmup": warmup}):
            return None
        answer = self._receive("batch", f"at step {self.done + 1}", budgeted=warmup)
        if not isinstance(answer, dict):
            return None
        if answer.get("status") != "ok":
            return None  # the child says why in its result
        times = answer.get("times_ms")
        return [float(t) for t in times if isinstance(t, int | float)] if isinstance(times, list) else None

    def end(self) -> None:
        """Ask the child for its result (once): workers ended together hand over and exit side by side."""
        if self.failure is None and not self.ending:
            self.ending = self._send({"done": True})
            if self.ending:
                self._close_stdin()

    def finish(self) -> dict[str, Any]:
        """End the child and return its whole result, or a failed one saying why."""
        try:
            self.end()
            if self.failure is None and self.ending:
                answer = self._receive("result", "while finishing", budgeted=True, grace=FINISH_GRACE)
                if self.failure is None:
                    # The result is in: a child that does not exit (a thread or an atexit
                    # handler of the script that hangs, SIGTERM ignored) is ended, its group too;
                    # a framework's slow exit is not waited for past the budget.
                    children.stop(self.process, max(0.1, self._seconds_left(EXIT_GRACE)))
                    unusable = problem(answer, CHILD_RESULT, "its result")
                    if unusable is None:
                        return dict(answer)
                    self.failure = _failed(f"the measuring process answered unusably: {unusable}")
            return self.failure or _failed("no result from the measuring process")
        finally:
            self.close()

    def close(self) -> None:
        """Kill the child and its group if it still runs; idempotent."""
        children.release(self.process, 5.0)
        # Not waited for long: a process the child started outside its group may hold the pipes
        # open for as long as it runs, and the readers are daemons that end with it.
        for reader in self.readers:
            reader.join(0.1)

    def _send(self, message: dict[str, Any]) -> bool:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            self.failure = self.failure or self._died("no result")
            return False

    def _close_stdin(self) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass

    def _seconds_left(self, seconds: float, grace: float = 0.0) -> float:
        """`seconds`, cut at the budget's deadline (plus `grace`) when there is one."""
        if self.deadline is None:
            return seconds
        return min(seconds, max(0.0, self.deadline + grace - time.monotonic()))

    def _receive(self, key: str, where: str, *, budgeted: bool = False, grace: float = 0.0) -> Any:
        """The value of the next message holding `key`; None with `failure` set when none comes.

        `budgeted`: the wait ends at the budget's deadline (plus `grace`) too.
        """
        wait = self._seconds_left(self.timeout, grace) if budgeted else self.timeout
        budgeted = wait < self.timeout
        deadline = time.monotonic() + wait
        while True:
            line = next_line(self.lines, self.process, deadline)
            if line is ENDED:
                # It ended, yet its output is still open: a process it started holds it.
                self.failure = self._died("no result")
                self.close()
                return None
            if line is TIMED_OUT:
                if budgeted:
                    self.failure = _failed(f"{BUDGET_RAN_OUT} {where}")
                else:
                    self.failure = _failed(f"timed out after {self.timeout:g} s, {where}")
                self.close()
                return None
            if line is None:
                self.failure = self._died("unreadable output" if self.unreadable else "no result")
                return None
            assert isinstance(line, bytes)
            try:
                parsed = parse_answer(line)
            except AnswerError:
                self.unreadable += 1
                continue
            if not isinstance(parsed, dict):
                self.unreadable += 1
            elif "progress" in parsed:
                # The child runs the user's code, which may print a line of its own: counts
                # are taken only when they are whole numbers.
                self.done = _count(parsed["progress"], self.done)
                self.on_progress(self.done)
            elif "contract" in parsed:
                self.close()
                raise InputError(
                    self.job.get("script") or "--script", str(parsed["contract"]).split(": ", 1)[-1]
                )
            elif key in parsed:
                return parsed[key]

    def _died(self, what: str) -> dict[str, Any]:
        """Why the child ended without answering: its signal or exit status, else `what`."""
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            self.close()
        code = self.process.returncode
        if code and code < 0:
            name = signal_name(-code)
            hint = " (out of memory?)" if name == "SIGKILL" else ""
            return _failed(f"killed by {name}{hint}{_last(self.errors)}")
        if code:
            return _failed(f"exited with status {code}{_last(self.errors)}")
        return _failed(f"{what} from the measuring process{_last(self.errors)}")


def result_entry(variant: Variant, raw: dict[str, Any], float32_median: float | None) -> dict[str, Any]:
    """A results[] entry of the bench block from a child's raw result."""
    times = raw.get("times_ms") or []
    losses = raw.get("losses") or []
    summary = {k: round(v, 4) for k, v in summarize(times).items()} if times else None
    noise = round(relative_spread(summary), 4) if summary else None
    ratio = None
    if summary and summary["median"] > 0 and float32_median and raw.get("status") == "ok":
        ratio = round(speedup(float32_median, summary["median"]), 3)
    finite = raw.get("finite")
    return {
        "variant": variant.name,
        "policy": variant.policy,
        "tf32": variant.tf32,
        "loss_scaling": variant.loss_scaling,
        "status": raw.get("status", "failed"),
        "reason": raw.get("reason"),
        "ms_per_step": summary,
        "steps": len(times),
        "rounds_ms": [round(float(v), 4) for v in raw.get("rounds_ms") or []],
        "noise": noise,
        "speedup": ratio,
        "peak_memory_mib": _rounded(raw.get("peak_memory_mib")),
        "loss": None
        if not losses
        else {
            "first": _finite_or_none(losses[0]),
            "last": _finite_or_none(losses[-1]),
            "finite": bool(finite),
            "decreased": bool(raw.get("decreased")),
        },
        "notes": list(raw.get("notes") or []),
    }


def _count(value: Any, otherwise: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else otherwise


def _last(errors: Tail) -> str:
    line = errors.last_line()
    return f": {line[:300]}" if line else ""


def _failed(reason: str) -> dict[str, Any]:
    return {"status": "failed", "reason": reason, "notes": []}


def _finite_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _rounded(value: Any) -> float | None:
    return round(float(value), 1) if isinstance(value, int | float) else None


def _installed(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
