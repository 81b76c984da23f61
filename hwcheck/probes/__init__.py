"""Probes: one small module per source of facts (cpu, gpu, cuda, ...), run together by `runner`."""

from __future__ import annotations

from hwcheck.probes.result import ABSENT, ERROR, OK, TIMEOUT, ProbeResult
from hwcheck.probes.runner import DEFAULT_TIMEOUT, PROBE_NAMES, Collected, Probing, collect, start

__all__ = [
    "ABSENT",
    "DEFAULT_TIMEOUT",
    "ERROR",
    "OK",
    "PROBE_NAMES",
    "TIMEOUT",
    "Collected",
    "ProbeResult",
    "Probing",
    "collect",
    "start",
]
