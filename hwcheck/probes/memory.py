"""The machine's memory: total and available (/proc/meminfo), and the cgroup limit where one applies.

`hwcheck fit` checks an offloaded optimizer against it. Each figure is left out when it could
not be read (unknown); a cgroup without a limit has `limit_bytes: null` (looked for, none set).
A cgroup path from /proc/self/cgroup is read only inside the cgroup mount (cgroup_folder), and a
limit that is not "max" or a number within the 64-bit bound is unknown with its reason
(`cgroup.unread`), never "no limit".
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
CGROUP_MOUNT = "sys/fs/cgroup"
MEMBERSHIP = "/proc/self/cgroup"
# Linux's PATH_MAX: a file under a longer path cannot be opened by its name, so a cgroup that deep
# has no readable limit (the kernel allows deeper trees, built with relative names).
PATH_MAX = 4096
# The longest name read in a cgroup folder, with its separator ("/memory.usage_in_bytes").
LONGEST_FILE = 24
# The longest reason kept in the facts (node.unread's values are cut to 512 characters).
MAX_REASON = 512


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
    """A usage figure: None (unknown) unless a whole number within the 64-bit bound."""
    # 19 digits: cgroup v1 writes "no limit" as 9223372036854771712.
    try:
        return parse_whole((text or "").strip(), "cgroup", digits=19, maximum=MAX_INTEGER)
    except InputError:
        return None


def limit_number(text: str, source: str, *, unlimited: str | None = None) -> int | None:
    """A limit from a kernel file: None for `unlimited` (the kernel's word for none, "max"), else
    a whole number within the 64-bit bound; anything else (garbage, negative, too long) is an
    InputError naming `source`: unknown, never "no limit"."""
    value = text.strip()
    if unlimited is not None and value == unlimited:
        return None
    # 19 digits: cgroup v1 writes "no limit" as 9223372036854771712.
    return parse_whole(value, source, digits=19, maximum=MAX_INTEGER)


def reason(error: InputError) -> str:
    """An InputError as the one line the facts keep for an unread part (at most MAX_REASON)."""
    text = str(error)
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def _cgroup(root: str | os.PathLike[str]) -> dict[str, Any]:
    """This process's cgroup memory limit and usage: v2 (memory.max) first, then v1."""
    v2_path, v1_path = cgroup_paths(root, "memory")
    version = 2 if v2_path is not None else 1
    try:
        if v2_path is not None:
            return _cgroup_v2(cgroup_folder(joined(root, CGROUP_MOUNT), v2_path))
        if v1_path is not None:
            return _cgroup_v1(cgroup_folder(joined(root, CGROUP_MOUNT, "memory"), v1_path))
    except InputError as error:
        return {"version": version, "unread": reason(error)}  # in a cgroup, its limit unknown
    return {}


def cgroup_paths(root: str | os.PathLike[str], controller: str) -> tuple[str | None, str | None]:
    """This process's cgroup (/proc/self/cgroup): its path in the unified (v2) hierarchy where one
    is mounted, and its path in the v1 hierarchy holding `controller` ("memory", "cpu"); None where
    it has none. The paths are as listed: cgroup_folder finds each one's folder."""
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
    if not os.path.exists(joined(root, CGROUP_MOUNT, "cgroup.controllers")):
        v2_path = None  # listed, but no unified hierarchy is mounted where it is read
    return v2_path, v1_path


def cgroup_folder(mount: str, path: str) -> tuple[str, str]:
    """(the cgroup mount, resolved; the folder of `path` below it, relative) for a path as
    /proc/self/cgroup lists it; an InputError when the path leaves the mount (a ".." part: the
    cgroup lies outside this cgroup namespace's view, or a link out of it) or is too long to open."""
    shown = path if len(path) <= 60 else f"{path[:40]}... ({len(path)} characters)"
    if not path.startswith("/") or "\0" in path:
        raise InputError(MEMBERSHIP, f"the cgroup path {shown!r} is not an absolute path")
    # Checked before any splitting: a path thousands of levels deep costs one pass, not one per level.
    if len(mount) + len(path) + LONGEST_FILE > PATH_MAX:
        raise InputError(
            MEMBERSHIP,
            f"the cgroup path ({len(path)} characters) is beyond PATH_MAX ({PATH_MAX}): "
            "its files cannot be opened by name",
        )
    if ".." in path.split("/"):
        raise InputError(
            MEMBERSHIP, f"the cgroup path {shown!r} leaves the cgroup mount (a cgroup outside this namespace)"
        )
    real_mount = os.path.realpath(mount)
    real = os.path.realpath(os.path.join(mount, path.lstrip("/")))
    if real == real_mount:
        return real_mount, ""
    if not real.startswith(real_mount.rstrip(os.sep) + os.sep):
        raise InputError(MEMBERSHIP, f"the cgroup path {shown!r} leads out of the cgroup mount (a link)")
    return real_mount, real[len(real_mount) :].strip(os.sep)


def ancestors(path: str) -> list[str]:
    """`path` and each folder above it, the deepest first (a container sees its own as "/")."""
    folder = "/".join(part for part in path.split("/") if part and part not in (".", ".."))
    found = [folder]
    while folder:  # one pass from the end: each level is cut from the one below it
        folder = folder[: max(folder.rfind("/"), 0)]
        found.append(folder)
    return found


def _cgroup_v2(folder: tuple[str, str]) -> dict[str, Any]:
    base, path = folder
    # A limit anywhere above applies too: the lowest one along the path bounds the process.
    limits, usage, read_any = [], None, False
    for level in ancestors(path):
        where = os.path.join(base, level) if level else base
        text = kernel_text(os.path.join(where, "memory.max"))
        if text is None:
            continue
        read_any = True
        if usage is None:
            usage = _number(kernel_text(os.path.join(where, "memory.current")))
        limit = limit_number(text, "cgroup memory.max", unlimited="max")
        if limit is not None:
            limits.append(limit)
    if not read_any:
        return {"version": 2}  # in a cgroup, its limit unreadable: unknown
    result: dict[str, Any] = {"version": 2, "limit_bytes": min(limits) if limits else None}
    if usage is not None:
        result["usage_bytes"] = usage
    return result


def _cgroup_v1(folder: tuple[str, str]) -> dict[str, Any]:
    base, path = folder
    for level in (path, ""):  # a container mounts its own cgroup at the top
        where = os.path.join(base, level) if level else base
        text = kernel_text(os.path.join(where, "memory.limit_in_bytes"))
        if text is None:
            continue
        limit = limit_number(text, "cgroup memory.limit_in_bytes")
        result: dict[str, Any] = {
            "version": 1,
            "limit_bytes": None if limit is None or limit >= NO_LIMIT_V1 else limit,
        }
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
