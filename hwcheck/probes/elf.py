"""What a shared library asks the dynamic loader for: its DT_NEEDED names and its RPATH/RUNPATH.

Read from the ELF file's dynamic section with bounded reads (a libtorch_cuda.so is over a
gigabyte; only its headers and the dynamic string table are read). ld.so(8): directories in
DT_RPATH are searched before LD_LIBRARY_PATH, those in DT_RUNPATH after it, and an object
with DT_RUNPATH ignores its DT_RPATH.
"""

from __future__ import annotations

import os
import struct

from hwcheck.base.inputs import open_regular
from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
# Bounds: a dynamic section has tens of entries and a string table of kilobytes.
MAX_PROGRAM_HEADERS = 256
MAX_DYNAMIC_BYTES = 64 * 1024
MAX_STRINGS_BYTES = 1024 * 1024
# What one file may ask the loader to search: a real library lists a handful of folders. Without
# these, 4,000 RPATH entries naming one 1 MB string of colons expand to a billion folders.
MAX_NAME_BYTES = 4096  # PATH_MAX: a longer name or RPATH string is cut there
MAX_SEARCH_DIRS = 64  # RPATH and RUNPATH folders together, after splitting at ":"
MAX_SEARCH_CHARS = 64 * 1024  # their total length, $ORIGIN expanded
MAX_NEEDED = 1024


class Dynamic(NamedTuple):
    """The loader-relevant entries of one ELF file's dynamic section."""

    needed: tuple[str, ...]
    soname: str | None
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]


def dynamic(path: str | Path) -> Dynamic | None:
    """The dynamic section of a 64-bit little-endian ELF file, or None when it is not one or is unreadable."""
    try:
        with open_regular(path) as handle:
            return _read(handle)
    except (OSError, struct.error, ValueError):
        return None


def _read(handle: BinaryIO) -> Dynamic | None:
    read, seek = handle.read, handle.seek
    header = read(64)
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None  # not ELF, or not ELFCLASS64 little-endian (every Linux x86_64/aarch64 library is)
    phoff, phentsize, phnum = struct.unpack_from("<Q", header, 32)[0], *struct.unpack_from("<HH", header, 54)
    if phentsize < 56 or not 0 < phnum <= MAX_PROGRAM_HEADERS:
        return None
    seek(phoff)
    table = read(phentsize * phnum)
    loads, dyn = [], None
    for index in range(phnum):
        kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", table, index * phentsize)
        if kind == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif kind == _PT_DYNAMIC:
            dyn = (offset, min(filesz, MAX_DYNAMIC_BYTES))
    if dyn is None:
        return None
    seek(dyn[0])
    data = read(dyn[1])
    entries: list[tuple[int, int]] = []
    for at in range(0, len(data) - 15, 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == _DT_NULL:
            break
        entries.append((tag, value))
    tags = dict(entries)
    strtab = _file_offset(tags.get(_DT_STRTAB), loads)
    if strtab is None:
        return None
    seek(strtab)
    strings = read(min(tags.get(_DT_STRSZ, MAX_STRINGS_BYTES), MAX_STRINGS_BYTES))

    def text(offset: int) -> str:
        limit = min(len(strings), offset + MAX_NAME_BYTES)
        end = strings.find(b"\0", offset, limit)
        return strings[offset : end if end >= 0 else limit].decode("utf-8", "replace")

    def paths(tag: int) -> tuple[str, ...]:
        found: list[str] = []
        total = 0
        for value in dict.fromkeys(v for t, v in entries if t == tag):  # each string once
            for folder in text(value).split(":"):
                if not folder:
                    continue
                if len(found) >= MAX_SEARCH_DIRS or total + len(folder) > MAX_SEARCH_CHARS:
                    return tuple(found)
                found.append(folder)
                total += len(folder)
        return tuple(found)

    soname = next((text(v) for t, v in entries if t == _DT_SONAME), None)
    needed = tuple(text(v) for t, v in entries if t == _DT_NEEDED)[:MAX_NEEDED]
    return Dynamic(needed, soname, paths(_DT_RPATH), paths(_DT_RUNPATH))


def _file_offset(address: int | None, loads: list[tuple[int, int, int]]) -> int | None:
    # DT_STRTAB holds a virtual address: the PT_LOAD segment that maps it says where it is in the file.
    if address is None:
        return None
    for vaddr, offset, filesz in loads:
        if vaddr <= address < vaddr + filesz:
            return address - vaddr + offset
    return None


def search_dirs(dynamic_section: Dynamic, directory: str | Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The RPATH and RUNPATH directories with $ORIGIN expanded to `directory` (the object's own); RPATH
    is empty when RUNPATH is present, as the loader ignores it then."""

    def expand(entries: tuple[str, ...]) -> tuple[str, ...]:
        origin = os.fspath(directory)
        expanded: list[str] = []
        total = 0
        for entry in entries[:MAX_SEARCH_DIRS]:
            # Measured before expanding: "$ORIGIN" 500 times in one entry grows it a thousandfold.
            total += len(entry) + entry.count("$") * len(origin)
            if total > MAX_SEARCH_CHARS:
                break
            expanded.append(entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
        return tuple(expanded)

    rpath = () if dynamic_section.runpath else expand(dynamic_section.rpath)
    return rpath, expand(dynamic_section.runpath)
