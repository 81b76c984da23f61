"""Runs the probes in worker threads, all under one deadline."""

from __future__ import annotations

import importlib
import math
import sys
import threading
import time

from hwcheck.base.records import NamedTuple
from hwcheck.facts import SCHEMA_VERSION
from hwcheck.facts.recorded import bound_versions
from hwcheck.probes.linux_only import absent_here
from hwcheck.probes.result import ERROR, PARTIAL_SHARE, TIMEOUT, ProbeResult, as_partial, start_clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Probe name -> the module in this package with its `probe() -> ProbeResult` function; the
# order is the order doctor shows them in. A vendor's probes live in its own folder.
PROBE_MODULES = {
    "platform": "platform",
    "cpu": "cpu",
    "gpu": "nvidia.gpu",
    "amd": "amd.gpu",
    "apple": "apple.gpu",
    "intel": "intel.gpu",
    "pci": "pci",
    "accel": "accelerators",
    "cuda": "nvidia.cuda",
    "arches": "nvidia.builds",
    "stacks": "stacks",
    "tegra": "nvidia.tegra",
    "tpu": "tpu",
    "frameworks": "frameworks",
    "environment": "environment",
    "node": "node",
}
PROBE_NAMES = tuple(PROBE_MODULES)
DEFAULT_TIMEOUT = 5.0
# The longest deadline a caller may give (doctor's --timeout allows the same).
MAX_TIMEOUT = 3600.0
# How long a probe may hold its worker before the next probes go on in another one.
STALL_SECONDS = 0.05
# The longest reason a failed probe records: an exception's text can be megabytes.
MAX_FAILURE_TEXT = 300


class Collected(NamedTuple):
    """The facts of one machine and the status of each probe that produced them."""

    facts: dict[str, Any]
    results: dict[str, ProbeResult]

    @property
    def statuses(self) -> dict[str, dict[str, Any]]:
        """Probe name -> {status, reason, seconds}."""
        return {name: result.status_dict() for name, result in self.results.items()}


def collect(
    timeout: float = DEFAULT_TIMEOUT,
    names: tuple[str, ...] = PROBE_NAMES,
    probes: dict[str, Callable[[], ProbeResult]] | None = None,
) -> Collected:
    """Run the probes concurrently, each cut off at `timeout` seconds, and merge their facts."""
    return start(timeout, names, probes).collected()


class Probing:
    """Probes started in a worker thread; `collected` waits for them (up to the deadline).

    One worker runs the probes one after the other: each mostly waits on a file or a
    program, and threads that share the interpreter's lock delay each other's every wait
    (in eight threads the probes took ~28 ms, in one ~12 ms). A probe that holds its worker
    for STALL_SECONDS (a hung driver or file system, or a slow NVML query) does not hold
    up the rest: a new worker takes the next probe, so one hang costs its own probe only.
    """

    def __init__(self, functions: dict[str, Callable[[], ProbeResult]], timeout: float) -> None:
        self.timeout = timeout
        self.boxes: dict[str, list[ProbeResult]] = {name: [] for name in functions}
        self.waiting = list(functions.items())
        self.finished = threading.Condition()
        self.threads: list[threading.Thread] = []
        self.started = time.perf_counter()
        self._add_worker()

    def collected(self) -> Collected:
        """Wait for every probe until the deadline, then merge the facts of those that answered."""
        deadline = self.started + self.timeout
        with self.finished:
            answered = self._answered()
            while answered < len(self.boxes):
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                self.finished.wait(min(remaining, STALL_SECONDS))
                if self._answered() == answered and self.waiting:
                    self._add_worker()  # no probe answered for a while: the rest go on beside it
                answered = self._answered()
            hung = answered < len(self.boxes)
        if hung:
            _kill_children()
        results = {name: _finish(box, self.started, self.timeout) for name, box in self.boxes.items()}
        facts: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for result in results.values():
            merge_facts(facts, result.facts)
        # What a report of these facts holds, `inventory` and `doctor --facts` must accept.
        return Collected(facts=bound_versions(facts), results=results)

    def _answered(self) -> int:
        return sum(1 for box in self.boxes.values() if box)

    def _add_worker(self) -> None:
        thread = threading.Thread(
            target=self._work,
            name=f"hwcheck-probes-{len(self.threads) + 1}",
            daemon=True,  # a hung driver call must not keep the process alive
        )
        thread.start()
        self.threads.append(thread)

    def _work(self) -> None:
        while True:
            with self.finished:
                if not self.waiting:
                    return
                name, function = self.waiting.pop(0)
            # A probe that reads many things answers with what it has at its share of the deadline.
            start_clock(self.started + self.timeout * PARTIAL_SHARE)
            result = as_partial(_guarded(function))
            with self.finished:
                self.boxes[name].append(result)
                self.finished.notify_all()


def merge_facts(facts: dict[str, Any], part: dict[str, Any]) -> None:
    """Add one probe's facts: each vendor's GPUs join the list, each probe's keys join a section.

    The NVIDIA, Apple and Intel probes all report `gpus`, and the Apple probe adds `os.macos`
    to the platform probe's `os`: a plain update would let the last probe to finish win.
    """
    for key, value in part.items():
        present = facts.get(key)
        if isinstance(present, list) and isinstance(value, list):
            facts[key] = [*present, *value]
        elif isinstance(present, dict) and isinstance(value, dict):
            facts[key] = {**present, **value}
        else:
            facts[key] = value


def start(
    timeout: float = DEFAULT_TIMEOUT,
    names: tuple[str, ...] = PROBE_NAMES,
    probes: dict[str, Callable[[], ProbeResult]] | None = None,
) -> Probing:
    """Start the probes in their threads and return at once, so the caller can work meanwhile.

    A `timeout` that is no number of seconds above 0 and at most MAX_TIMEOUT is a ValueError.
    """
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise ValueError(
            f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}"
        )
    functions = probes if probes is not None else {name: _probe_function(name) for name in names}
    return Probing(functions, timeout)


def _kill_children() -> None:
    # A probe past its deadline may be waiting on a program it ran (nvcc, the NVML query):
    # kill those now, with whatever they started, rather than leave them to run on.
    subprocesses = sys.modules.get("hwcheck.probes.subprocesses")
    if subprocesses is not None:  # no probe ran a program: nothing to kill, nothing to import
        subprocesses.kill_all()


def _probe_function(name: str) -> Callable[[], ProbeResult]:
    # The module is imported inside the probe's thread, so a broken or slow
    # import is caught and timed like any other probe failure.
    def run() -> ProbeResult:
        module = f"hwcheck.probes.{PROBE_MODULES[name]}"
        return absent_here(name) or importlib.import_module(module).probe()

    return run


def _guarded(function: Callable[[], ProbeResult]) -> ProbeResult:
    started = time.perf_counter()
    try:
        result = function()
        if not isinstance(result, ProbeResult):
            raise TypeError(f"the probe returned {type(result).__name__}, not a ProbeResult")
    # A probe never raises out of doctor: MemoryError, RecursionError and SystemExit included,
    # since a worker that died would leave its probe unanswered until the deadline.
    except BaseException as error:
        result = ProbeResult(ERROR, reason=f"probe failed: {failure_text(error)}")
    if result.seconds is None:
        result = result._replace(seconds=time.perf_counter() - started)
    return result


def failure_text(error: BaseException, limit: int = MAX_FAILURE_TEXT) -> str:
    """`error` as "Type: message", one line of at most `limit` characters, whatever its text holds."""
    try:
        # Only the head is read: str() of an error can be megabytes long, or raise itself.
        message = str(error)[: limit * 4]
    except Exception:
        message = ""
    line = " ".join(message.split())
    text = f"{type(error).__name__}: {line}" if line else type(error).__name__
    text = "".join(char if char.isprintable() else "?" for char in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _finish(box: list[ProbeResult], started: float, timeout: float) -> ProbeResult:
    if box:
        return box[0]
    return ProbeResult(
        TIMEOUT,
        reason=f"no answer within {timeout:g} s (a hung driver or file system call)",
        seconds=time.perf_counter() - started,
    )
