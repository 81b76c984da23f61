"""Probe: the node around the accelerators: /dev/shm, the cgroup CPU quota, the locked-memory
limit, the NCCL_* variables, the IOMMU, and each NVIDIA GPU's PCIe link and the bridges above it.

No program is run and nothing is imported beyond the standard library: each read is a file in
/proc or /sys, a statvfs or a getrlimit. A part that could not be read is left out (unknown)
and named with its reason in `node.unread`; a part that is not there is recorded as such.
Every number is a whole number within the 64-bit bound (base/numbers.py) and in its range: any
other text is unread with its reason, never "no quota" or "unlimited"; a cgroup path is read
only inside the cgroup mount (memory.cgroup_folder).
The cgroup memory limit is the platform probe's (facts.memory.cgroup).
"""

from __future__ import annotations

import os
import stat

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, plain_path
from hwcheck.base.numbers import MAX_INTEGER, parse_whole
from hwcheck.probes import memory
from hwcheck.probes.nvidia import links
from hwcheck.probes.result import OK, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SHM = "dev/shm"
# At most this many NCCL_* variables are recorded, each value cut to VALUE_CHARS.
MAX_VARIABLES = 64
VALUE_CHARS = 256
# cgroup v1 writes "no quota" as -1 in cpu.cfs_quota_us, v2 as "max" in cpu.max.
NO_QUOTA = "-1"
NO_QUOTA_V2 = "max"
# The line of /proc/self/limits that gives RLIMIT_MEMLOCK, soft and hard, in bytes.
MEMLOCK_LINE = "Max locked memory"
# The statuses a probe reports on the machine itself ("file" is a replay's).
RECORDED_STATUSES = ("ok", "absent", "error", "timeout")


def probe(root: str | os.PathLike[str] = "/", environ: Mapping[str, str] | None = None) -> ProbeResult:
    """The `node` facts of the machine under `root` (the live one by default)."""
    root = plain_path(root)
    environ = os.environ if environ is None else environ
    unread: dict[str, str] = {}
    node: dict[str, Any] = {"nccl_variables": nccl_variables(environ)}
    for key, read in (("shm", _shm), ("cpu_quota", _cpu_quota), ("memlock", _memlock)):
        try:
            value = read(root)
        except OSError as error:
            unread[key] = f"{type(error).__name__}: {error.strerror or error}"[: memory.MAX_REASON]
            continue
        except InputError as error:  # text that is not a number in its range: unknown, with why
            unread[key] = memory.reason(error)
            continue
        if value is not None:
            node[key] = value
    node.update(links.read(root, unread))
    if unread:
        node["unread"] = unread
    return ProbeResult(OK, {"node": node})


def with_probe_statuses(facts: dict[str, Any], probes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The facts with each probe's status and reason kept in node.probes, so that a facts file
    written from them replays the node as it was read (a replay's own statuses say only "file")."""
    node = facts.get("node")
    kept = {
        name: {"status": status.get("status"), "reason": status.get("reason")}
        for name, status in probes.items()
        if isinstance(status, dict) and status.get("status") in RECORDED_STATUSES
    }
    return {**facts, "node": {**(node if isinstance(node, dict) else {}), "probes": kept}}


def nccl_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The NCCL_* variables set, by name (bounded: a hostile environment cannot flood the report)."""
    names = sorted(name for name in environ if name.startswith("NCCL_"))[:MAX_VARIABLES]
    return {name[:VALUE_CHARS]: environ[name][:VALUE_CHARS] for name in names}


def _shm(root: str) -> dict[str, Any]:
    """The size of /dev/shm (statvfs); `present: false` when there is no such mount point.

    A /dev/shm that cannot be looked at (a link loop, no permission) is an OSError: unread, not absent.
    """
    path = joined(root, SHM)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return {"present": False}  # nothing there, or a link to nothing
    if not stat.S_ISDIR(info.st_mode):
        return {"present": False}
    stats = os.statvfs(path)
    # Its size only: what is free changes from run to run, and the advice does not read it.
    size = stats.f_blocks * stats.f_frsize
    if size > MAX_INTEGER:
        raise InputError(path, f"a size of {size} bytes is beyond the 64-bit bound")
    return {"present": True, "size_bytes": size}


def _memlock(root: str) -> dict[str, Any] | None:
    """This process's locked-memory limit (null: unlimited), from /proc/self/limits; None when
    that file or its line cannot be read (not Linux, a tree copied without it); an InputError
    when a limit is neither "unlimited" nor a whole number within the 64-bit bound."""
    for line in (memory.kernel_text(joined(root, "proc/self/limits")) or "").splitlines():
        if not line.startswith(MEMLOCK_LINE):
            continue
        fields = line[len(MEMLOCK_LINE) :].split()
        if len(fields) >= 2:
            return {"soft_bytes": _limit(fields[0]), "hard_bytes": _limit(fields[1])}
    return None


def _limit(text: str) -> int | None:
    """A limit of /proc/self/limits in bytes; None for "unlimited"."""
    return memory.limit_number(text, "/proc/self/limits (Max locked memory)", unlimited="unlimited")


def _cpu_quota(root: str) -> dict[str, Any] | None:
    """The CPUs this process's cgroup may use (cpu.max, or cfs_quota_us/cfs_period_us in v1):
    `cpus` null when no quota is set; None (unknown) outside a cgroup or when nothing is readable;
    an InputError (unknown, with why) for a path out of the mount or a figure that is no number."""
    v2_path, v1_path = memory.cgroup_paths(root, "cpu")
    if v2_path is not None:
        return _cpu_v2(memory.cgroup_folder(joined(root, memory.CGROUP_MOUNT), v2_path))
    if v1_path is not None:
        for base in ("cpu,cpuacct", "cpu"):
            found = _cpu_v1(memory.cgroup_folder(joined(root, memory.CGROUP_MOUNT, base), v1_path))
            if found is not None:
                return found
    return None


def _cpu_v2(folder: tuple[str, str]) -> dict[str, Any] | None:
    base, path = folder
    quotas, read_any = [], False
    for level in memory.ancestors(path):  # the lowest quota along the path bounds the process
        text = memory.kernel_text(
            os.path.join(base, level, "cpu.max") if level else os.path.join(base, "cpu.max")
        )
        if text is None:
            continue
        read_any = True
        fields = text.split()
        if len(fields) != 2:
            raise InputError("cgroup cpu.max", "expected a quota and a period")
        period = _period(fields[1], "cgroup cpu.max")
        if fields[0] != NO_QUOTA_V2:
            quotas.append(_cpus(_quota(fields[0], "cgroup cpu.max"), period))
    if not read_any:
        return None
    return {"version": 2, "cpus": min(quotas) if quotas else None}


def _cpu_v1(folder: tuple[str, str]) -> dict[str, Any] | None:
    base, path = folder
    for level in (path, ""):
        where = os.path.join(base, level) if level else base
        quota = memory.kernel_text(os.path.join(where, "cpu.cfs_quota_us"))
        period = memory.kernel_text(os.path.join(where, "cpu.cfs_period_us"))
        if quota is None or period is None:
            continue
        every = _period(period.strip(), "cgroup cpu.cfs_period_us")
        if quota.strip() == NO_QUOTA:
            return {"version": 1, "cpus": None}
        return {"version": 1, "cpus": _cpus(_quota(quota.strip(), "cgroup cpu.cfs_quota_us"), every)}
    return None


def _quota(text: str, source: str) -> int:
    """A CPU quota in microseconds: a positive whole number within the 64-bit bound."""
    quota = parse_whole(text, source, maximum=MAX_INTEGER)
    if quota == 0:
        raise InputError(source, "a quota of 0 is none the kernel sets (at least 1000 microseconds)")
    return quota


def _period(text: str, source: str) -> int:
    """A CPU period in microseconds: a positive whole number within the 64-bit bound."""
    period = parse_whole(text, source, maximum=MAX_INTEGER)
    if period == 0:
        raise InputError(source, "a period of 0 is none the kernel sets (1000 to 1000000 microseconds)")
    return period


def _cpus(quota: int, period: int) -> float:
    """quota / period CPUs to 3 decimals; a quota under a thousandth of a CPU keeps 3 significant
    digits, so that a tiny quota is never 0 CPUs."""
    cpus = quota / period
    return round(cpus, 3) if cpus >= 0.001 else float(f"{cpus:.3g}")
