"""Runs the probes together: each in its own thread, all under one deadline."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from hwcheck.facts import SCHEMA_VERSION
from hwcheck.probes.result import ERROR, TIMEOUT, ProbeResult

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
    "cuda": "nvidia.cuda",
    "tpu": "tpu",
    "frameworks": "frameworks",
    "environment": "environment",
}
PROBE_NAMES = tuple(PROBE_MODULES)
DEFAULT_TIMEOUT = 5.0


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
    """Probes started in their threads; `collected` waits for them (up to the deadline)."""

    def __init__(self, functions: dict[str, Callable[[], ProbeResult]], timeout: float) -> None:
        self.timeout = timeout
        self.boxes: dict[str, list[ProbeResult]] = {name: [] for name in functions}
        self.threads = []
        self.started = time.perf_counter()
        for name, function in functions.items():
            thread = threading.Thread(
                target=lambda f=function, b=self.boxes[name]: b.append(_guarded(f)),
                name=f"hwcheck-probe-{name}",
                daemon=True,  # a hung driver call must not keep the process alive
            )
            thread.start()
            self.threads.append(thread)

    def collected(self) -> Collected:
        """Wait for every probe until the deadline, then merge the facts of those that answered."""
        deadline = self.started + self.timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.perf_counter()))
        if any(thread.is_alive() for thread in self.threads):
            _kill_children()
        results = {name: _finish(box, self.started, self.timeout) for name, box in self.boxes.items()}
        facts: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for result in results.values():
            merge_facts(facts, result.facts)
        return Collected(facts=facts, results=results)


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
    """Start the probes in their threads and return at once, so the caller can work meanwhile."""
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
        return importlib.import_module(f"hwcheck.probes.{PROBE_MODULES[name]}").probe()

    return run


def _guarded(function: Callable[[], ProbeResult]) -> ProbeResult:
    started = time.perf_counter()
    try:
        result = function()
    except Exception as error:  # a probe never raises out of doctor
        result = ProbeResult(ERROR, reason=f"probe failed: {type(error).__name__}: {error}")
    if result.seconds is None:
        result = result._replace(seconds=time.perf_counter() - started)
    return result


def _finish(box: list[ProbeResult], started: float, timeout: float) -> ProbeResult:
    if box:
        return box[0]
    return ProbeResult(
        TIMEOUT,
        reason=f"no answer within {timeout:g} s (a hung driver or file system call)",
        seconds=time.perf_counter() - started,
    )
