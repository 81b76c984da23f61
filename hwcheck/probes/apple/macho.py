"""Whether a PyTorch install was built with MPS, read from its files without importing it.

A build with USE_MPS links Apple's Metal Performance Shaders frameworks into
torch/lib/libtorch_cpu.dylib; a build without them does not. The libraries a Mach-O file
links are named in its load commands (LC_LOAD_DYLIB and kin), which sit right after its
32-byte header, so only the first few kilobytes of the 200 MB library are read.
Verified on torch-2.6.0-cp312-none-macosx_11_0_arm64.whl from PyPI (tests/fixtures/macho/).
"""

from __future__ import annotations

import os
import struct

from hwcheck.base.inputs import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

# mach-o/loader.h: the 64-bit header magic as the file stores it on little-endian Macs,
# the universal (fat) header's magic (big-endian), and the load commands naming a library.
MH_MAGIC_64 = 0xFEEDFACF
FAT_MAGIC = 0xCAFEBABE
LC_REQ_DYLD = 0x80000000
DYLIB_COMMANDS = {0xC, 0x18 | LC_REQ_DYLD, 0x1F | LC_REQ_DYLD, 0x23 | LC_REQ_DYLD}
HEADER_BYTES = 32
# Load commands of real libraries take a few KiB (libtorch_cpu 2.6: 3,904 bytes); more than
# this is not a library worth believing.
MAX_COMMAND_BYTES = 1024 * 1024
MPS_FRAMEWORK = "/MetalPerformanceShaders.framework/"
# CPU types (mach/machine.h) a universal file may carry: arm64 is the one Apple silicon runs.
CPU_TYPE_ARM64 = 0x0100000C


class MachOError(ValueError):
    """The file is not a Mach-O library this reader understands."""


def linked_libraries(path: str | os.PathLike[str]) -> list[str]:
    """The install names of the libraries a Mach-O file links, in load-command order."""
    with open_regular(path) as handle:
        head = handle.read(HEADER_BYTES)
        offset = 0
        if len(head) >= 8 and struct.unpack_from(">I", head)[0] == FAT_MAGIC:
            offset = _arm64_slice(handle, struct.unpack_from(">I", head, 4)[0])
            handle.seek(offset)
            head = handle.read(HEADER_BYTES)
        if len(head) < HEADER_BYTES or struct.unpack_from("<I", head)[0] != MH_MAGIC_64:
            raise MachOError("not a 64-bit Mach-O file")
        count, size = struct.unpack_from("<II", head, 16)
        if size > MAX_COMMAND_BYTES:
            raise MachOError(f"load commands of {size} bytes")
        commands = handle.read(size)
    if len(commands) < size:
        raise MachOError("truncated load commands")
    names = []
    at = 0
    for _ in range(count):
        if at + 8 > size:
            raise MachOError("truncated load command")
        command, length = struct.unpack_from("<II", commands, at)
        if length < 8 or at + length > size:
            raise MachOError(f"a load command of {length} bytes")
        if command in DYLIB_COMMANDS and length >= 24:
            name_at = struct.unpack_from("<I", commands, at + 8)[0]
            raw = commands[at + name_at : at + length].split(b"\0", 1)[0] if name_at < length else b""
            names.append(raw.decode("utf-8", "replace"))
        at += length
    return names


def links_mps(path: str | os.PathLike[str]) -> bool:
    """Whether the Mach-O library at `path` links Metal Performance Shaders."""
    return any(MPS_FRAMEWORK in name for name in linked_libraries(path))


def torch_mps_built(torch_dir: str) -> tuple[bool | None, str | None]:
    """(built with MPS, why unknown): from torch/lib's libtorch_cpu; (None, reason) when unreadable.

    A torch with libtorch_cpu.so or .dll instead of a .dylib is no macOS build: False; a torch
    without any (a stub, a broken install) says nothing: None, quietly.
    """
    library = os.path.join(torch_dir, "lib", "libtorch_cpu.dylib")
    if not os.path.exists(library):
        names = ("libtorch_cpu.so", "torch_cpu.dll")
        other = any(os.path.exists(os.path.join(torch_dir, "lib", name)) for name in names)
        return (False if other else None), None
    try:
        return links_mps(library), None
    except (OSError, MachOError) as error:
        return None, f"{library}: {error}: whether PyTorch has MPS is unknown"


def _arm64_slice(handle: BinaryIO, architectures: int) -> int:
    # fat_arch entries (big-endian): cputype, cpusubtype, offset, size, align.
    if architectures > 16:
        raise MachOError(f"a universal file of {architectures} architectures")
    table = handle.read(20 * architectures)
    if len(table) < 20 * architectures:
        raise MachOError("truncated universal header")
    for index in range(architectures):
        cputype, _subtype, offset, _size, _align = struct.unpack_from(">iIIII", table, 20 * index)
        if cputype == CPU_TYPE_ARM64:
            return offset
    raise MachOError("a universal file without an arm64 slice")
