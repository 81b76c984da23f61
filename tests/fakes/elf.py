"""Minimal ELF64 shared objects with a dynamic section, for the loader-search tests.

A real libtorch_cuda.so is a gigabyte; what the loader reads of it is a few entries of its
dynamic section (DT_NEEDED, DT_SONAME, DT_RPATH / DT_RUNPATH) and their strings. This writes
exactly that, laid out as ld writes it (one PT_LOAD mapping the file, one PT_DYNAMIC), so that
binutils' readelf reads it too (tests/test_probe_libraries.py checks that where readelf exists).
"""

from __future__ import annotations

import struct
from pathlib import Path

DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
BASE = 0x400000  # the virtual address the PT_LOAD segment maps offset 0 to


def shared_object(
    path: Path,
    *,
    needed: tuple[str, ...] = (),
    soname: str | None = None,
    rpath: str | None = None,
    runpath: str | None = None,
    rpath_entries: int = 1,
) -> Path:
    """Write an ELF64 little-endian shared object with these dynamic entries to `path`.

    `rpath_entries` DT_RPATH entries all name the one `rpath` string (a hostile file's trick).
    """
    strings = bytearray(b"\0")

    def add(text: str) -> int:
        offset = len(strings)
        strings.extend(text.encode() + b"\0")
        return offset

    entries = [(DT_NEEDED, add(name)) for name in needed]
    if soname is not None:
        entries.append((DT_SONAME, add(soname)))
    if rpath is not None:
        entries += [(DT_RPATH, add(rpath))] * rpath_entries
    if runpath is not None:
        entries.append((DT_RUNPATH, add(runpath)))
    header_size, phentsize, phnum = 64, 56, 2
    strtab_offset = header_size + phentsize * phnum
    dynamic_offset = (strtab_offset + len(strings) + 7) & ~7
    entries += [(DT_STRTAB, BASE + strtab_offset), (DT_STRSZ, len(strings)), (DT_NULL, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in entries)
    total = dynamic_offset + len(dynamic)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # ELFCLASS64, little-endian, version 1
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, header_size, 0, 0, header_size, phentsize, phnum, 64, 0, 0
    )  # ET_DYN, EM_X86_64
    load = struct.pack("<IIQQQQQQ", 1, 4, 0, BASE, BASE, total, total, 0x1000)  # PT_LOAD, PF_R
    dyn = struct.pack(
        "<IIQQQQQQ",
        2,
        6,
        dynamic_offset,
        BASE + dynamic_offset,
        BASE + dynamic_offset,
        len(dynamic),
        len(dynamic),
        8,
    )  # PT_DYNAMIC, PF_R|PF_W
    body = header + load + dyn + bytes(strings)
    body += bytes(dynamic_offset - len(body)) + dynamic
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path
