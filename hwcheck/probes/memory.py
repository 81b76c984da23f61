"""The machine's memory: total and available (/proc/meminfo), and the cgroup limit where one applies.

`hwcheck fit` checks an offloaded optimizer against it. Each figure is left out when it could
not be read (unknown); a cgroup without a limit has `limit_bytes: null` (looked for, none set).
"""

from __future__ import annotations

import os

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, read_head
from hwcheck.base.numbers import MAX_INTEGER, parse_whole, whole_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# cgroup v1 writes "no limit" as the largest page-aligned 64-bit value; anything this large is none.
NO_LIMIT_V1 = 2**62
MAX_READ = 64 * 1024


def read(root: str | os.PathLike[str] = "/") -> dict[str, Any]:
    """The "memory" facts of the machine under `root`: empty when nothing could be read."""
    facts: dict[str, Any] = {}
    meminfo = _meminfo(root)
    for key, field in (("total_bytes", "MemTotal"), ("available_bytes", "MemAvailable")):
        if field in meminfo:
            facts[key] = meminfo[field]
    cgroup = _cgroup(root)
    if cgroup:
        facts["cgroup"] = cgroup
    return facts


def kernel_text(path: str) -> str | None:
    """The start of a /proc or /sys file as text (at most MAX_READ bytes), None when unreadable.

    read_head never blocks: a FIFO named memory.max is refused, not waited on.
    """
    try:
        return read_head(path, MAX_READ).decode("ascii", errors="replace")
    except OSError:
        return None


def _meminfo(root: str | os.PathLike[str]) -> dict[str, int]:
    """/proc/meminfo's fields in bytes (it writes kB, meaning KiB)."""
    text = kernel_text(joined(root, "proc/meminfo")) or ""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        number = whole_or_none(parts[0]) if parts else None
        scale = 1024 if parts[1:2] == ["kB"] else 1
        if number is not None and number * scale <= MAX_INTEGER:  # a figure the facts can carry
            fields[name.strip()] = number * scale
    return fields


def _number(text: str | None) -> int | None:
    # 19 digits: cgroup v1 writes "no limit" as 9223372036854771712.
    try:
        return parse_whole((text or "").strip(), "cgroup", digits=19, maximum=MAX_INTEGER)
    except InputError:
        return None


def _cgroup(root: str | os.PathLike[str]) -> dict[str, Any]:
    """This process's cgroup memory limit and usage: v2 (memory.max) first, then v1."""
    v2_path, v1_path = cgroup_paths(root, "memory")
    if v2_path is not None:
        return _cgroup_v2(root, v2_path)
    if v1_path is not None:
        return _cgroup_v1(root, v1_path)
    return {}


def cgroup_paths(root: str | os.PathLike[str], controller: str) -> tuple[str | None, str | None]:
    """This process's cgroup (/proc/self/cgroup): its path in the unified (v2) hierarchy where one
    is mounted, and its path in the v1 hierarchy holding `controller` ("memory", "cpu"); None where
    it has none."""
    membership = kernel_text(joined(root, "proc/self/cgroup")) or ""
    v2_path, v1_path = None, None
    for line in membership.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2_path = parts[2]
        elif controller in parts[1].split(","):
            v1_path = parts[2]
    if not os.path.exists(joined(root, "sys/fs/cgroup/cgroup.controllers")):
        v2_path = None  # listed, but no unified hierarchy is mounted where it is read
    return v2_path, v1_path


def ancestors(path: str) -> list[str]:
    """`path` and each folder above it, the deepest first (a container sees its own as "/")."""
    parts = [part for part in path.strip("/").split("/") if part and part not in (".", "..")]
    return ["/".join(parts[:end]) for end in range(len(parts), -1, -1)]


def _cgroup_v2(root: str | os.PathLike[str], path: str) -> dict[str, Any]:
    base = joined(root, "sys/fs/cgroup")
    # A limit anywhere above applies too: the lowest one along the path bounds the process.
    limits, usage, read_any = [], None, False
    for folder in ancestors(path):
        where = os.path.join(base, folder) if folder else base
        text = kernel_text(os.path.join(where, "memory.max"))
        if text is None:
            continue
        read_any = True
        if usage is None:
            usage = _number(kernel_text(os.path.join(where, "memory.current")))
        limit = _number(text)
        if limit is not None:
            limits.append(limit)
    if not read_any:
        return {"version": 2}  # in a cgroup, its limit unreadable: unknown
    result: dict[str, Any] = {"version": 2, "limit_bytes": min(limits) if limits else None}
    if usage is not None:
        result["usage_bytes"] = usage
    return result


def _cgroup_v1(root: str | os.PathLike[str], path: str) -> dict[str, Any]:
    base = joined(root, "sys/fs/cgroup/memory")
    for folder in (path.strip("/"), ""):  # a container mounts its own cgroup at the top
        where = os.path.join(base, folder) if folder else base
        limit = _number(kernel_text(os.path.join(where, "memory.limit_in_bytes")))
        if limit is None:
            continue
        result: dict[str, Any] = {"version": 1, "limit_bytes": None if limit >= NO_LIMIT_V1 else limit}
        usage = _number(kernel_text(os.path.join(where, "memory.usage_in_bytes")))
        if usage is not None:
            result["usage_bytes"] = usage
        return result
    return {"version": 1}


def usable(memory: Any) -> tuple[int | None, int | None]:
    """(what the process may hold, what is free for it now) in bytes, None where unknown.

    The cgroup limit bounds both: the machine's total above a container's limit is not its own.
    """
    if not isinstance(memory, dict):
        return None, None
    total, available = _known(memory.get("total_bytes")), _known(memory.get("available_bytes"))
    found = memory.get("cgroup")
    cgroup: dict[str, Any] = found if isinstance(found, dict) else {}
    if cgroup and "limit_bytes" not in cgroup:
        return None, None  # in a cgroup whose limit could not be read: the bound is unknown
    limit = _known(cgroup.get("limit_bytes"))
    if limit is not None:
        total = limit if total is None else min(total, limit)
        used = _known(cgroup.get("usage_bytes"))
        room = None if used is None else max(limit - used, 0)
        if room is not None:
            available = room if available is None else min(available, room)
    return total, available


def _known(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
