"""The GPU architectures a CUDA library carries, read from its `.nv_fatbin` ELF section.

nvcc puts each translation unit's device code in a fat binary: a 16-byte header (magic
0xBA55ED50, version, header size, the size of the entries that follow), then one entry per
architecture, each with its own header (kind 1 PTX, 2 ELF cubin; its header size; the
padded size of its payload; the SM version at byte 28). Only those headers are read, with
bounded seeks (libtorch_cuda.so is over a gigabyte), so compressed payloads need no
decompressing. NVIDIA does not document the layout; it is the one cuobjdump reads, as
ZLUDA's FatbinHeader/FatbinFileHeader and other public readers spell it out.
"""

from __future__ import annotations

import os
import struct

from hwcheck.base.inputs import open_regular
from hwcheck.base.records import NamedTuple
from hwcheck.probes.result import left_unread, out_of_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
SECTION = b".nv_fatbin"
# Bounds: section headers of a shared library number in the tens; libtorch_cuda.so holds a few
# thousand fat binaries of a handful of entries each.
MAX_SECTIONS = 4096
MAX_SECTION_NAMES = 1024 * 1024
# Every header read counts, a fat binary's as much as an entry's (ten million empty fat
# binaries cost as much as ten million entries), and so does each block searched for the next.
MAX_HEADERS = 400_000
MAX_ARCH = 1000  # sm_1000 is beyond any GPU: a header claiming more is not a fatbin entry
# Fat binaries start 8-byte aligned; the padding between two has no fixed bound (up to 248 bytes
# in jax-cuda12-pjrt's aarch64 plugins), so the next is searched for in blocks to the section's end.
_ALIGNMENT = 8
_SEARCH_BLOCK = 64 * 1024
# The probe's deadline is looked at every this many headers or blocks read.
CLOCK_EVERY = 1024


class _OutOfTime(Exception):
    """The probe's share of its deadline came mid-walk: what was read so far, incomplete."""

    def __init__(self, found: Architectures) -> None:
        super().__init__("out of time")
        self.found = found


class Architectures(NamedTuple):
    """What one library's fat binaries carry: SASS (sm_XY) and PTX (compute_XY) targets."""

    sm: tuple[str, ...]
    ptx: tuple[str, ...]
    entries: int  # fatbin entries read
    complete: bool  # False when a bound stopped the walk or a header did not parse


def architectures(path: str | Path) -> Architectures | None:
    """The architectures of the `.nv_fatbin` section of a 64-bit little-endian ELF file; None when the
    file is not one, cannot be read, or has no such section (a library with no device code)."""
    try:
        with open_regular(path) as handle:
            section = _section(handle, SECTION)
            if section is None:
                return None
            return _walk(handle, *section)
    except _OutOfTime as stopped:  # what was read, incomplete; the probe is marked partial
        left_unread(f"the fat binaries of {os.fspath(path)} were read whole")
        return stopped.found
    except (OSError, struct.error, ValueError):
        return None


def _section(handle: BinaryIO, wanted: bytes) -> tuple[int, int] | None:
    """(file offset, size) of the section named `wanted`, from the ELF section headers."""
    header = handle.read(64)
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", header, 40)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 58)
    if shentsize < 64 or not 0 < shnum <= MAX_SECTIONS or shstrndx >= shnum:
        return None
    handle.seek(shoff)
    table = handle.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        return None

    def entry(index: int) -> tuple[int, int, int]:
        name, _kind, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", table, index * shentsize)
        return name, offset, size

    _, names_offset, names_size = entry(shstrndx)
    handle.seek(names_offset)
    names = handle.read(min(names_size, MAX_SECTION_NAMES))
    for index in range(shnum):
        name, offset, size = entry(index)
        end = names.find(b"\0", name)
        if names[name : end if end >= 0 else len(names)] == wanted:
            return offset, size
    return None


def _walk(handle: BinaryIO, start: int, size: int) -> Architectures:
    sm: set[int] = set()
    ptx: set[int] = set()
    entries, headers, complete = 0, 0, True
    next_check = CLOCK_EVERY  # when the probe's deadline is looked at next (headers read)
    position, end = start, start + size
    while position + 16 <= end:
        if headers >= MAX_HEADERS:
            complete = False
            break
        if headers >= next_check:
            next_check = headers + CLOCK_EVERY
            if out_of_time():
                raise _OutOfTime(Architectures(_names("sm", sm), _names("compute", ptx), entries, False))
        handle.seek(position)
        header = handle.read(16)
        headers += 1
        if len(header) < 16:
            complete = False
            break
        magic, _version, header_size, fat_size = struct.unpack("<IHHQ", header)
        if magic != FATBIN_MAGIC:
            found, blocks, padding = _next_header(handle, start, position, end)
            if found is not None and found < 0:  # out of time in the search
                raise _OutOfTime(Architectures(_names("sm", sm), _names("compute", ptx), entries, False))
            headers += blocks
            # Between fat binaries lies zero padding; anything else is something this reader does not know.
            complete = complete and padding
            if found is None:
                break
            position = found
            continue
        entry, entries_end = position + header_size, min(position + header_size + fat_size, end)
        if position + header_size + fat_size > end:
            complete = False  # a fat binary claiming more than its section holds
        while entry + 32 <= entries_end:
            if headers >= MAX_HEADERS:
                return Architectures(_names("sm", sm), _names("compute", ptx), entries, False)
            if headers >= next_check:  # one fat binary may hold all 400,000 entries
                next_check = headers + CLOCK_EVERY
                if out_of_time():
                    raise _OutOfTime(Architectures(_names("sm", sm), _names("compute", ptx), entries, False))
            handle.seek(entry)
            kind, _v, entry_header, padded = struct.unpack("<HHIQ", handle.read(16))
            handle.seek(entry + 28)
            arch = struct.unpack("<I", handle.read(4))[0]
            entries += 1
            headers += 1
            if entry_header < 32 or not 0 < arch < MAX_ARCH:
                complete = False
                break
            (ptx if kind == KIND_PTX else sm if kind == KIND_ELF else set()).add(arch)
            entry += entry_header + padded
        position = max(entries_end, position + 16)
    return Architectures(_names("sm", sm), _names("compute", ptx), entries, complete)


def _next_header(handle: BinaryIO, start: int, position: int, end: int) -> tuple[int | None, int, bool]:
    """(the next fat binary header from `position` on, 8-byte aligned in the section that starts at
    `start`, or None before `end`, or -1 when the probe ran out of time; the blocks read to find
    it; whether all it skipped was zeros)."""
    magic = struct.pack("<I", FATBIN_MAGIC)
    offset = position + (start - position) % _ALIGNMENT
    blocks, padding = 0, True
    while offset + 4 <= end and blocks < MAX_HEADERS:
        if blocks % CLOCK_EVERY == CLOCK_EVERY - 1 and out_of_time():  # a sparse gigabyte of zeros
            return -1, blocks, padding
        handle.seek(offset)
        window = handle.read(min(_SEARCH_BLOCK, end - offset))
        blocks += 1
        if len(window) < 4:
            break
        at = window.find(magic)
        while at >= 0 and at % _ALIGNMENT:
            at = window.find(magic, at + 1)
        if at >= 0:
            return offset + at, blocks, padding and not window[:at].strip(b"\0")
        padding = padding and not window.strip(b"\0")
        offset += len(
            window
        )  # a whole block is a multiple of 8: the next aligned offset; the last ends the loop
    return None, blocks, padding


def _names(prefix: str, numbers: set[int]) -> tuple[str, ...]:
    return tuple(f"{prefix}_{number}" for number in sorted(numbers))


def cached_architectures(path: str) -> Architectures | None:
    """architectures(path), kept in hwcheck's private cache under the file's signature (device,
    inode, size and times), so a gigabyte library is walked once per install, not per run."""
    from hwcheck.base.tables import cache_key, cached_document, file_signature, store_document

    signature = file_signature(path)
    key = (
        cache_key("fatbin", os.path.realpath(path).encode("utf-8", "surrogateescape"), signature.encode())
        if signature
        else None
    )
    if key is not None:
        document = cached_document(key)
        if document is not None:
            if document.get("none"):
                return None
            try:
                return Architectures(
                    tuple(document["sm"]),
                    tuple(document["ptx"]),
                    int(document["entries"]),
                    bool(document["complete"]),
                )
            except (KeyError, TypeError, ValueError):
                pass  # damaged: read again
    found = architectures(path)
    # A walk the probe's deadline may have cut short is not kept: it is read whole next time.
    if key is not None and not out_of_time():
        store_document(key, {"none": True} if found is None else found._asdict())
    return found
