"""The dynamic loader's cache, /etc/ld.so.cache: which file a library name resolves to there.

ldconfig writes it; ld.so(8) consults it after LD_LIBRARY_PATH and the object's RUNPATH.
The format is glibc's "glibc-ld.so.cache1.1" (elf/cache.c, sysdeps/generic/dl-cache.h): a
header, fixed-size entries, then the strings they point at (offsets from the header's start).
Older caches put a "ld.so-1.7.0" table first; the new table follows it, aligned to 8 bytes.
"""

from __future__ import annotations

import struct

from hwcheck.base.inputs import read_head

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_CACHE = "/etc/ld.so.cache"
MAX_CACHE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 200_000
# A library name is a file name (NAME_MAX) and its path a path (PATH_MAX). A real cache holds
# a few thousand entries whose strings take well under a megabyte (34 KB on a Debian VM), so
# one that makes the reader search and decode more than MAX_DECODED_BYTES (each string counted
# as its length plus STRING_COST) is forged: it is read that far, inside the probe deadline.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
MAX_DECODED_BYTES = 8 * 1024 * 1024
STRING_COST = 64
# The paths kept per library name: ldconfig lists a name once per hardware variant (hwcap, a
# 32-bit copy), a handful at most, and ld.so takes the first that fits. A forged cache listing
# one name 200,000 times would otherwise hand every caller 200,000 folders to search.
MAX_PATHS_PER_NAME = 16
_OLD_MAGIC = b"ld.so-1.7.0"
_NEW_MAGIC = b"glibc-ld.so.cache1.1"
# magic and version (20 bytes), nlibs and len_strings (8), flags and padding (4), extension offset, 3 unused
_NEW_HEADER = 48
_NEW_ENTRY = 24  # flags (int32), key, value (uint32), osversion (uint32), hwcap (uint64)


def entries(
    path: str | Path = DEFAULT_CACHE, prefixes: tuple[str, ...] | None = None
) -> dict[str, list[str]]:
    """Library name ("libcudnn.so.9") -> the paths the cache lists for it, in order; {} if unreadable.

    With `prefixes`, only the names that start with one of them: a cache lists hundreds of
    libraries, and decoding each one's name and path cost doctor ~7 M instructions a run.
    """
    try:
        data = read_head(path, MAX_CACHE_BYTES)
    except OSError:
        return {}
    start = _new_table(data)
    if start is None or len(data) < start + _NEW_HEADER:
        return {}
    count = struct.unpack_from("<I", data, start + 20)[0]
    if count > MAX_ENTRIES or start + _NEW_HEADER + count * _NEW_ENTRY > len(data):
        return {}
    wanted = None if prefixes is None else tuple(prefix.encode() for prefix in prefixes)
    table = data[start + _NEW_HEADER : start + _NEW_HEADER + count * _NEW_ENTRY]
    found: dict[str, list[str]] = {}
    strings = _Strings(data)
    for _, key, value, _, _ in struct.iter_unpack("<iIIIQ", table):
        if wanted is not None and not data.startswith(wanted, start + key):
            continue
        name = strings.at(start + key, MAX_NAME_BYTES)
        if name is None or len(found.get(name, ())) >= MAX_PATHS_PER_NAME:
            continue
        target = strings.at(start + value, MAX_PATH_BYTES)
        if strings.spent > MAX_DECODED_BYTES:
            break  # a cache whose entries point into one long string: what was read is kept
        if target and target not in found.get(name, ()):
            found.setdefault(name, []).append(target)
    return found


def _new_table(data: bytes) -> int | None:
    if data.startswith(_NEW_MAGIC):
        return 0
    if not data.startswith(_OLD_MAGIC) or len(data) < 16:
        return None
    old_count = struct.unpack_from("<I", data, 12)[0]
    if old_count > MAX_ENTRIES:
        return None
    after = 16 + old_count * 12  # the old header, then 12-byte entries
    start = (after + 7) & ~7
    return start if data[start : start + len(_NEW_MAGIC)] == _NEW_MAGIC else None


class _Strings:
    """The cache's NUL-terminated strings by offset, each decoded once, the work counted."""

    __slots__ = ("data", "decoded", "spent")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.decoded: dict[int, str | None] = {}
        self.spent = 0  # bytes searched and decoded so far

    def at(self, offset: int, limit: int) -> str | None:
        """The string at `offset` (None: outside the file, empty, or longer than `limit` bytes)."""
        if offset in self.decoded:
            return self.decoded[offset]
        text = None
        if 0 <= offset < len(self.data):
            stop = min(len(self.data), offset + limit + 1)
            end = self.data.find(b"\0", offset, stop)
            # Each string costs its bytes and a fixed share: many tiny strings cost time too.
            self.spent += (end if end >= 0 else stop) - offset + STRING_COST
            if end > offset:
                text = self.data[offset:end].decode("utf-8", "replace")
        self.decoded[offset] = text
        return text
