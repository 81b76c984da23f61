"""Probe: the node around the accelerators: /dev/shm, the cgroup CPU quota, the locked-memory
limit, the NCCL_* variables, the IOMMU, each NVIDIA GPU's PCIe link and where it sits (the bridges
above it, its NUMA node and CPUs), and the fabric to other nodes (probes/fabric.py).

No program is run and nothing is imported beyond the standard library: each read is a file in
/proc or /sys, a statvfs or a getrlimit. A part that could not be read is left out (unknown)
and named with its reason in `node.unread`; a part that is not there is recorded as such.
The cgroup memory limit is the platform probe's (facts.memory.cgroup).
"""

from __future__ import annotations

import os

from hwcheck.base.inputs import joined, plain_path
from hwcheck.probes import fabric, memory
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
# cgroup v1 writes "no quota" as -1 in cpu.cfs_quota_us.
NO_QUOTA = -1
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
            unread[key] = f"{type(error).__name__}: {error.strerror or error}"
            continue
        if value is not None:
            node[key] = value
    node.update(links.read(root, unread))
    node.update(fabric.read(root, unread))
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
    """The size of /dev/shm (statvfs); `present: false` when there is no such mount point."""
    path = joined(root, SHM)
    if not os.path.isdir(path):
        return {"present": False}
    stats = os.statvfs(path)
    # Its size only: what is free changes from run to run, and the advice does not read it.
    return {"present": True, "size_bytes": stats.f_blocks * stats.f_frsize}


def _memlock(root: str) -> dict[str, Any] | None:
    """This process's locked-memory limit (null: unlimited), from /proc/self/limits; None when
    that file or its line cannot be read (not Linux, a tree copied without it)."""
    for line in (memory.kernel_text(joined(root, "proc/self/limits")) or "").splitlines():
        if not line.startswith(MEMLOCK_LINE):
            continue
        fields = line[len(MEMLOCK_LINE) :].split()
        if len(fields) >= 2:
            return {"soft_bytes": _limit(fields[0]), "hard_bytes": _limit(fields[1])}
    return None


def _limit(text: str) -> int | None:
    """A limit of /proc/self/limits in bytes; None for "unlimited"."""
    return None if text == "unlimited" else _integer(text)


def _cpu_quota(root: str) -> dict[str, Any] | None:
    """The CPUs this process's cgroup may use (cpu.max, or cfs_quota_us/cfs_period_us in v1):
    `cpus` null when no quota is set; None (unknown) outside a cgroup or when nothing is readable."""
    v2_path, v1_path = memory.cgroup_paths(root, "cpu")
    if v2_path is not None:
        return _cpu_v2(joined(root, "sys/fs/cgroup"), v2_path)
    if v1_path is not None:
        for base in ("sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpu"):
            found = _cpu_v1(joined(root, base), v1_path)
            if found is not None:
                return found
    return None


def _cpu_v2(base: str, path: str) -> dict[str, Any] | None:
    quotas, read_any = [], False
    for folder in memory.ancestors(path):  # the lowest quota along the path bounds the process
        text = memory.kernel_text(
            os.path.join(base, folder, "cpu.max") if folder else os.path.join(base, "cpu.max")
        )
        if text is None:
            continue
        read_any = True
        fields = text.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0:
            quotas.append(int(fields[0]) / int(fields[1]))
    if not read_any:
        return None
    return {"version": 2, "cpus": round(min(quotas), 3) if quotas else None}


def _cpu_v1(base: str, path: str) -> dict[str, Any] | None:
    for folder in (path.strip("/"), ""):
        where = os.path.join(base, folder) if folder else base
        quota = _integer(memory.kernel_text(os.path.join(where, "cpu.cfs_quota_us")))
        period = _integer(memory.kernel_text(os.path.join(where, "cpu.cfs_period_us")))
        if quota is None or period is None:
            continue
        cpus = None if quota == NO_QUOTA or quota <= 0 or period <= 0 else round(quota / period, 3)
        return {"version": 1, "cpus": cpus}
    return None


def _integer(text: str | None) -> int | None:
    value = (text or "").strip()
    digits = value[1:] if value.startswith("-") else value
    return int(value) if digits.isdigit() and len(digits) <= 19 else None
