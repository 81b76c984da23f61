"""The cores a measurement may use and the other work on them, read from /proc and the cgroup.

A measuring child that starts as many threads as the machine has cores, while another process
keeps one of them busy, measures thread oversubscription instead of the precision (on a 2-core
EPYC with one core busy, 148 ms for a float32 step that took 0.80 ms on one thread:
docs/measurements/cpu-epyc-avx2-2026-11-23.md). So the bench gives every
precision the same thread count, the cores left free by other work, pins the children to the
least busy of them, and records the other work before and during each round. Where /proc is
absent (macOS), nothing is pinned and the load is unknown.
"""

from __future__ import annotations

import math
import os
import time

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import read_text
from hwcheck.base.numbers import parse_whole
from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

PROC_STAT = "/proc/stat"
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"
# Other work that changes by more than this many cores between rounds changed the measurement.
LOAD_CHANGE_CORES = 0.5
SAMPLE_SECONDS = 0.25  # how long the other work is watched before the children start


class CpuTimes(NamedTuple):
    """Busy and total jiffies of the whole machine and per core, at one moment."""

    busy: int
    total: int
    cores: dict[int, tuple[int, int]]


def usable_cores() -> tuple[list[int], float | None]:
    """The cores this process may run on (its affinity) and the cgroup's CPU quota in cores, if any."""
    if hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))
    else:
        cores = list(range(os.cpu_count() or 1))
    return cores, cgroup_quota()


def cgroup_quota(path: str = CGROUP_CPU_MAX) -> float | None:
    """cgroup v2's cpu.max as cores ("200000 100000" is 2.0), None when unlimited or unreadable."""
    text = _read(path, 256)
    if text is None:
        return None
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = parse_whole(fields[0], path), parse_whole(fields[1], path)
    except InputError:
        return None
    return quota / period if period else None


def cpu_times(path: str = PROC_STAT) -> CpuTimes | None:
    """The machine's busy and total jiffies from /proc/stat, None where it cannot be read."""
    text = _read(path, 1 << 20)
    if text is None:
        return None
    busy = total = 0
    cores: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *fields = line.split()
        try:
            numbers = [parse_whole(field, path) for field in fields[:8]]
        except InputError:
            return None
        if len(numbers) < 5:
            return None
        # user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        line_total = sum(numbers)
        line_busy = line_total - numbers[3] - numbers[4]
        if name == "cpu":
            busy, total = line_busy, line_total
        elif name[3:].isdigit():
            cores[int(name[3:])] = (line_busy, line_total)
    return CpuTimes(busy, total, cores) if total else None


def process_jiffies(pids: Iterable[int]) -> int:
    """CPU time (user + system jiffies) the processes and their threads have used; 0 for those gone."""
    used = 0
    for pid in pids:
        text = _read(f"/proc/{pid}/stat", 4096)
        if not text or ")" not in text:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = text.rsplit(")", 1)[1].split()
        try:
            used += parse_whole(fields[11], "stat") + parse_whole(fields[12], "stat")
        except (IndexError, InputError):
            continue
    return used


def other_busy_cores(before: CpuTimes, after: CpuTimes, own_jiffies: int) -> float | None:
    """Cores kept busy by other processes between two readings, our own processes' time taken out."""
    elapsed = after.total - before.total
    count = len(after.cores) or 1
    if elapsed <= 0:
        return None
    per_core = elapsed / count
    return max(0.0, (after.busy - before.busy - own_jiffies) / per_core)


def least_busy(before: CpuTimes, after: CpuTimes, allowed: list[int], count: int) -> list[int]:
    """The `count` allowed cores that were least busy between the two readings."""

    def busy(core: int) -> float:
        start, end = before.cores.get(core), after.cores.get(core)
        if start is None or end is None or end[1] <= start[1]:
            return 0.0
        return (end[0] - start[0]) / (end[1] - start[1])

    return sorted(sorted(allowed, key=busy)[:count])


class Placement(NamedTuple):
    """The threads every precision gets, the cores they are pinned to, and the other work seen."""

    cores: int
    quota: float | None
    threads: int
    pinned: list[int] | None
    busy_before: float | None


def place(sample_seconds: float = SAMPLE_SECONDS) -> Placement:
    """Watch the machine briefly and choose the threads and cores the measuring children get."""
    allowed, quota = usable_cores()
    usable = len(allowed)
    if quota is not None:
        usable = max(1, min(usable, math.ceil(quota - 1e-9)))
    before = cpu_times()
    own_before = process_jiffies([os.getpid()])
    time.sleep(sample_seconds)
    after = cpu_times()
    if before is None or after is None:
        return Placement(len(allowed), quota, usable, None, None)
    other = other_busy_cores(before, after, process_jiffies([os.getpid()]) - own_before)
    busy = round(other) if other is not None else 0
    threads = max(1, usable - busy)
    pinned = least_busy(before, after, allowed, threads) if threads < len(allowed) else None
    return Placement(len(allowed), quota, threads, pinned, None if other is None else round(other, 2))


def load_average_now() -> float | None:
    """The 1-minute load average, None where the system has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def environment_record(
    placement: Placement, busy_during: list[float], load_average: list[float | None]
) -> dict[str, Any]:
    """What the measuring children ran on, and the other work on the machine before and during the run."""
    # One round under a passing burst is noise the rounds absorb; a quarter of them (two at
    # least) away from the level before the run is a change the figures carry.
    before = placement.busy_before
    moved = [b for b in busy_during if before is not None and abs(b - before) > LOAD_CHANGE_CORES]
    changed = len(moved) >= max(2, len(busy_during) // 4)
    return {
        "cores": placement.cores,
        "cpu_quota": placement.quota,
        "threads": placement.threads,
        "pinned": placement.pinned,
        "busy_before": placement.busy_before,
        "busy_during": busy_during,
        "load_average": load_average,
        "load_changed": changed,
    }


def load_findings(environment: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """A finding when other work on the machine changed under the run, or took cores from it."""
    findings = []
    if environment["load_changed"]:
        during = environment["busy_during"]
        findings.append(
            {
                "id": "bench-load-changed",
                "severity": "warning",
                "message": f"Other work on this machine changed while {label} was measured: "
                f"{environment['busy_before'] or 0:g} cores busy before, {min(during, default=0):g} to "
                f"{max(during, default=0):g} during the rounds. The precisions took turns, so each "
                "met the change, but the figures may not hold on an idle machine.",
                "remedy": "Rerun hwcheck bench when the machine is otherwise idle.",
            }
        )
    elif environment["pinned"] and environment["busy_before"]:
        findings.append(
            {
                "id": "bench-threads-reduced",
                "severity": "info",
                "message": f"Other work kept {environment['busy_before']:g} of {environment['cores']} "
                f"cores busy, so every precision ran with {environment['threads']} thread(s) on "
                f"core(s) {', '.join(str(c) for c in environment['pinned'])}: more threads than "
                "free cores measure the contention, not the precision.",
                "remedy": "Rerun hwcheck bench on an idle machine for figures at full width.",
            }
        )
    return findings


def _read(path: str, limit: int) -> str | None:
    try:
        return read_text(path, expected="a kernel status file", max_bytes=limit)
    except InputError:
        return None


def thread_environment(threads: int) -> dict[str, str]:
    """The variables that size the math libraries' thread pools, read when a framework is imported."""
    count = str(threads)
    return {
        "OMP_NUM_THREADS": count,
        "MKL_NUM_THREADS": count,
        "TF_NUM_INTRAOP_THREADS": count,
        "TF_NUM_INTEROP_THREADS": "1",
    }
