"""Installed Python distributions, found by listing site directories, scanned once per change.

Listing the directories is ~100x cheaper than importlib.metadata (~30 ms to import).
The cuda, frameworks and tpu probes all need the list and run in parallel threads, so
one scan is shared: the first caller scans under a lock while the others wait for it.
"""

from __future__ import annotations

import os
import re
import sys
import threading

from hwcheck.base.inputs import joined, plain_path, read_head
from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

# Patterns as text: re compiles each on first use and caches it (doctor's start-up, docs/benchmarks.md).
_VERSION_FIELD = rb"(?m)^Version:\s*(\S+)"
# "Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == 'Linux'": the name, the version
# specifiers and the environment marker (PEP 508).
# A distribution name (PEP 508): ASCII letters and digits, with ".", "_" and "-" inside.
_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
METADATA_HEAD_BYTES = 64 * 1024
_SEPARATOR_RUNS = r"-{2,}"


class Distribution(NamedTuple):
    """One installed Python distribution, found by its dist-info (or egg-info) directory."""

    name: str  # normalized: lower case, runs of -_. as one "-"
    version: str | None
    folder: str  # the directory it is installed in
    entry: str  # the name of its dist-info directory in `folder`

    @property
    def site(self) -> Path:
        """The directory it is installed in, as a Path."""
        from pathlib import Path  # the probes join names as text: pathlib costs doctor ~4 ms

        return Path(self.folder)

    @property
    def info(self) -> str:
        """The dist-info (or egg-info) directory."""
        return joined(self.folder, self.entry)

    @property
    def path(self) -> Path:
        """The dist-info directory, as a Path."""
        return self.site / self.entry


# The last scan: its site directories, their stamps, and what it found. One entry is
# enough, since every probe of a run asks for the same directories.
_last: tuple[tuple[str, ...], tuple[object, ...], tuple[Distribution, ...]] | None = None
_lock = threading.Lock()


def distributions(site_dirs: Iterable[str | os.PathLike[str]] | None = None) -> tuple[Distribution, ...]:
    """Every distribution installed in `site_dirs` (default sys.path), in path order, duplicates kept.

    Repeated calls reuse the previous scan while none of the directories has changed.
    """
    global _last
    dirs = tuple(os.fspath(d) for d in (default_site_dirs() if site_dirs is None else site_dirs))
    with _lock:
        stamp = _stamp(dirs)
        if _last is not None and _last[0] == dirs and _last[1] == stamp:
            return _last[2]
        found = scan(dirs)
        _last = (dirs, stamp, found)
        return found


def default_site_dirs() -> list[str]:
    """Where installed distributions are looked for: every entry of sys.path."""
    return [path for path in sys.path if path]


def scan(site_dirs: Iterable[str | os.PathLike[str]]) -> tuple[Distribution, ...]:
    """List the dist-info and egg-info directories of `site_dirs` (no cache)."""
    found = []
    seen: set[str] = set()
    for site in map(plain_path, site_dirs):
        real = os.path.realpath(site)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info"):
                name, _, version = entry[: -len(".dist-info")].partition("-")
            elif entry.endswith(".egg-info"):
                # name-1.0-py3.11.egg-info, or name.egg-info from a development install
                name, _, version = entry[: -len(".egg-info")].partition("-")
                version = version.split("-py")[0]
            else:
                continue
            known = version or metadata_version(joined(site, entry))
            found.append(Distribution(normalize(name), known, site, entry))
    return tuple(found)


def metadata_version(dist_info: str | os.PathLike[str]) -> str | None:
    """The Version: field of a dist-info METADATA or egg-info PKG-INFO file."""
    for name in ("METADATA", "PKG-INFO"):
        try:
            head = read_head(joined(dist_info, name), 4096)
        except OSError:
            continue
        match = re.search(_VERSION_FIELD, head)
        if match:
            return match.group(1).decode("ascii", "replace")
    return None


def requirements(dist: Distribution, starting: str = "") -> list[tuple[str, str, str]]:
    """The Requires-Dist entries of a distribution's METADATA: (normalized name, specifiers, marker).

    With `starting` (letters), only the entries whose name starts with it, in any case.
    """
    prefix = "Requires-Dist:"
    try:
        head = read_head(joined(dist.info, "METADATA"), METADATA_HEAD_BYTES)
    except OSError:
        return []
    # The headers end at the first empty line; the description follows.
    headers = head.split(b"\n\n", 1)[0].decode("utf-8", "replace")
    found = []
    for line in headers.splitlines():
        stripped = line.strip()
        if not stripped.startswith(prefix):
            continue
        if starting and stripped[len(prefix) :].lstrip()[: len(starting)].lower() != starting.lower():
            continue  # the pattern compiles on first use: most distributions never need it
        requirement = _requirement(stripped[len(prefix) :])
        if requirement:
            name, specifiers, marker = requirement
            found.append((normalize(name), specifiers.strip("() "), marker))
    return found


def _requirement(value: str) -> tuple[str, str, str] | None:
    """A Requires-Dist value's name, specifiers and marker ("torch[x] (>=2); extra == 'y'").

    Parsed by hand, one pass over the text: a regular expression with two adjacent
    quantifiers over a 60 KB line of spaces backtracks for minutes, and the probe's
    deadline cannot interrupt it.
    """
    body, _, marker = value.partition(";")
    body = body.strip()
    end = 0
    while end < len(body) and body[end] in _NAME_CHARACTERS:
        end += 1
    name = body[:end]
    if not name or name[0] in "._-":
        return None
    rest = body[end:].lstrip()
    if rest.startswith("["):
        close = rest.find("]")
        if close >= 0:
            rest = rest[close + 1 :]
    return name, rest.strip(), marker.strip()


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it: lower case, runs of -_. as one "-"."""
    normalized = name.lower().replace("_", "-").replace(".", "-")
    return re.sub(_SEPARATOR_RUNS, "-", normalized) if "--" in normalized else normalized


def _stamp(dirs: tuple[str, ...]) -> tuple[object, ...]:
    # Installing or removing a distribution adds or removes a directory, which changes
    # the site directory's link count (exact) and modification time (coarse on some file systems).
    stamps: list[object] = []
    for directory in dirs:
        try:
            status = os.stat(directory)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((status.st_ino, status.st_mtime_ns, status.st_nlink))
    return tuple(stamps)
