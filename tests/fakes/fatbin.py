"""Minimal ELF64 files with a `.nv_fatbin` section, for the fat binary reader's tests.

tests/fixtures/fatbin/ holds a real one (nvcc 13.0, stripped); these are laid out the same
way (checked against it in tests/test_fatbin.py) to try what nvcc here cannot produce:
many fat binaries with padding between them, PTX-only and SASS-only entries, damage.
"""

from __future__ import annotations

import struct
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
PTX, ELF = 1, 2


def entry(kind: int, arch: int, payload: bytes = b"\0" * 24) -> bytes:
    """One fatbin entry: a 64-byte header (kind, version 0x0101, header size, padded payload size,
    the SM version at byte 28) and its payload padded to 8 bytes."""
    payload += b"\0" * (-len(payload) % 8)
    header = struct.pack("<HHIQ", kind, 0x0101, 64, len(payload)) + bytes(12) + struct.pack("<I", arch)
    return header + bytes(64 - len(header)) + payload


def fatbin(entries: list[bytes], fat_size: int | None = None) -> bytes:
    """One fat binary: the 16-byte header (magic, version 1, header size 16, entries' size) and entries."""
    body = b"".join(entries)
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body) if fat_size is None else fat_size) + body


def elf_with_section(path: Path, section: bytes, name: bytes = b".nv_fatbin") -> Path:
    """Write an ELF64 little-endian shared object whose only sections are `name` and .shstrtab."""
    names = b"\0" + name + b"\0.shstrtab\0"
    data_offset = 64
    names_offset = data_offset + len(section)
    headers_offset = (names_offset + len(names) + 7) & ~7
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, headers_offset, 0, 64, 0, 0, 64, 3, 2)

    def section_header(name_at: int, kind: int, offset: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, size, 0, 0, 8, 0)

    tables = bytes(64) + section_header(1, 1, data_offset, len(section))
    tables += section_header(2 + len(name), 3, names_offset, len(names))
    body = header + section + names
    body += bytes(headers_offset - len(body)) + tables
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path


def laid_out(path: Path, layout: dict) -> Path:
    """A sparse ELF file whose `.nv_fatbin` section has `layout`'s size and headers at its offsets
    (tests/fixtures/fatbin/*-layout.json), every payload and padding byte zero."""
    pieces = []
    for offset, version, header_size, fat_size, entries in layout["fat_binaries"]:
        pieces.append((offset, struct.pack("<IHHQ", FATBIN_MAGIC, version, header_size, fat_size)))
        for at, kind, entry_header, padded, arch in entries:
            header = (
                struct.pack("<HHIQ", kind, 0x0101, entry_header, padded) + bytes(12) + struct.pack("<I", arch)
            )
            pieces.append((offset + at, header))
    size = layout["section_size"]
    section_at = 4096
    names = b"\0.nv_fatbin\0.shstrtab\0"
    names_at = section_at + size
    headers_at = (names_at + len(names) + 7) & ~7
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 183, 1, 0, 0, headers_at, 0, 64, 0, 0, 64, 3, 2)

    def section_header(name_at: int, kind: int, offset: int, length: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, length, 0, 0, 8, 0)

    tables = bytes(64) + section_header(1, 1, section_at, size) + section_header(12, 3, names_at, len(names))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:  # written by seeking: the zeros between are never stored
        handle.write(header)
        for offset, data in pieces:
            handle.seek(section_at + offset)
            handle.write(data)
        handle.seek(names_at)
        handle.write(names)
        handle.seek(headers_at)
        handle.write(tables)
    return path
