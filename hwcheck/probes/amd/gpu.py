"""AMD GPUs as ROCm sees them: the kernel driver's compute topology (KFD), read from sysfs.

Every GPU ROCm can use is a node of /sys/class/kfd/kfd/topology/nodes whose `properties`
file gives its gfx target (`gfx_target_version`, major*10000 + minor*100 + stepping:
90402 is gfx942, 90010 gfx90a, 110000 gfx1100), PCI location and memory; ROCm numbers
GPUs in node order. The board's name comes from its DRM device (`product_name`), else from
libdrm's amdgpu.ids (what rocminfo reads), else rules/knowledge/amd.toml. Nothing is run and
nothing is imported: every read is a bounded, non-blocking read of a file under `root`, so
tests replay recorded trees in a temporary folder.
"""

from __future__ import annotations

import os
import re

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, plain_path
from hwcheck.base.numbers import numbered, parse_whole
from hwcheck.probes.amd.rocm import rocm_release
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import pci_vendor_id, read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

# Under the probe's root; paths are joined as text (doctor's start-up, docs/benchmarks.md).
TOPOLOGY = "sys/class/kfd/kfd/topology/nodes"
DRM = "sys/class/drm"
# libdrm's table of marketing names (the ROCm packages ship their own copy).
AMDGPU_IDS = ("usr/share/libdrm/amdgpu.ids", "opt/amdgpu/share/libdrm/amdgpu.ids")
PROPERTIES_BYTES = 16 * 1024  # a node's properties are ~1 KiB
IDS_BYTES = 1024 * 1024  # amdgpu.ids is ~40 KiB
MAX_NODES = 4096
MIB = 1024 * 1024
U64_MAX = 2**64 - 1
# KFD memory bank heap types that are the GPU's own memory (kfd_crat.h: FB public, FB private).
FRAME_BUFFER_HEAPS = (1, 2)
# Compiled on first use (re caches it), only on a machine with an AMD GPU.
_IDS_LINE = r"([0-9A-Fa-f]{4}),\s*([0-9A-Fa-f]{2}),\s*(.+?)\s*"


def probe(*, root: str | Path = "/", environ: Mapping[str, str] | None = None) -> ProbeResult:
    """The "amd" facts: AMD GPUs from the KFD topology (as `gpus` with vendor amd) and the ROCm release."""
    root = plain_path(root)
    environ = os.environ if environ is None else environ
    rocm, problems = rocm_release(root, environ)
    facts: dict[str, Any] = {"rocm": rocm}
    nodes_dir = joined(root, TOPOLOGY)
    try:
        names = sorted((name for name in os.listdir(nodes_dir) if name.isascii() and name.isdigit()), key=int)
    except FileNotFoundError:
        return ProbeResult(ABSENT, facts, _why_absent(root, problems))
    except OSError as error:
        return ProbeResult(ERROR, facts, f"/{TOPOLOGY}: cannot read: {error.strerror or error}")
    drm = _drm_devices(root)
    ids = _amdgpu_ids(root)
    gpus: list[dict[str, Any]] = []
    for name in names[:MAX_NODES]:
        node = joined(nodes_dir, name)
        try:
            gpu = _node(node, name)
        except InputError as error:
            problems.append(str(error))
            continue
        if gpu is None:
            continue  # a CPU node
        gpu["index"] = len(gpus)
        _describe(gpu, drm.get(gpu.get("pci_bus_id") or ""), ids)
        gpus.append(gpu)
    if len(names) > MAX_NODES:
        problems.append(f"the topology lists {len(names)} nodes; only the first {MAX_NODES} were read")
    facts["gpus"] = gpus
    unknown = _unknown_targets(gpus)
    if unknown:
        problems.append(unknown)
    reason = "; ".join(problems) or None
    if gpus:
        return ProbeResult(OK, facts, reason)
    if any(problem.startswith("KFD node") for problem in problems):
        return ProbeResult(ERROR, facts, reason)
    return ProbeResult(ABSENT, facts, _why_absent(root, problems))


def gfx_target(version: int) -> str | None:
    """The gfx target KFD's gfx_target_version encodes (90402 -> gfx942), None when it encodes none."""
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    if not (7 <= major <= 99 and minor <= 9 and stepping <= 15):
        return None
    return f"gfx{major}{minor}{stepping:x}"


def properties(text: str, source: str) -> dict[str, int]:
    """A KFD properties file ("name value" per line, values whole numbers) as a dict.

    Raises InputError naming `source` for a line that is not a name and a number
    (a truncated or corrupted file).
    """
    values: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[0].replace("_", "a").isalnum():
            raise InputError(source, f"line {number} is not 'name value': {line[:60]!r} (truncated?)")
        # Identifiers (unique_id, hive_id) are unsigned 64-bit: up to 20 digits.
        values[parts[0]] = parse_whole(parts[1], f"{source} line {number}", maximum=U64_MAX, digits=20)
    return values


def _node(node: str, name: str) -> dict[str, Any] | None:
    """One topology node as a GPU fact, None for a CPU node; InputError for a malformed one."""
    source = f"KFD node {name} (/{TOPOLOGY}/{name}/properties)"
    text = read_attribute(joined(node, "properties"), PROPERTIES_BYTES)
    if text is None:
        raise InputError(source, "cannot be read")
    values = properties(text, source)
    if not text.endswith("\n"):
        raise InputError(source, "ends in the middle of a line (truncated)")
    target_version = values.get("gfx_target_version")
    if target_version is None:
        if values.get("simd_count", 0) == 0:
            return None  # an old kernel's CPU node
        raise InputError(source, "has SIMDs but no gfx_target_version (truncated?)")
    if target_version == 0:
        return None  # a CPU node
    arch = gfx_target(target_version)
    if arch is None:
        raise InputError(source, f"gfx_target_version {target_version} encodes no gfx target")
    # KFD's properties print the PCI vendor id in decimal (4098 is 0x1002).
    if values.get("vendor_id") not in (None, int(pci_vendor_id("amd"), 16)):
        return None  # another vendor's agent in the topology
    gpu: dict[str, Any] = {"vendor": "amd", "arch": arch, "name": ""}
    device_id = values.get("device_id")
    if device_id is not None and device_id <= 0xFFFF:
        gpu["pci_device_id"] = f"0x{device_id:04x}"
    location = values.get("location_id")
    if location is not None and location <= 0xFFFF:
        domain = values.get("domain", 0)
        gpu["pci_bus_id"] = f"{domain:04x}:{location >> 8:02x}:{location >> 3 & 0x1F:02x}.{location & 7}"
    unique = values.get("unique_id")
    # ROCr names a GPU "GPU-" and its KFD unique_id in hex (ROCR_VISIBLE_DEVICES takes that form).
    gpu["uuid"] = f"GPU-{unique:016x}" if unique else None
    memory = values.get("local_mem_size") or _bank_memory(node)
    gpu["memory_mib"] = memory // MIB if memory else None
    gpu["compute_units"] = _compute_units(values)
    return gpu


def _compute_units(values: dict[str, int]) -> int | None:
    simds, per_cu = values.get("simd_count"), values.get("simd_per_cu")
    return simds // per_cu if simds and per_cu else None


def _bank_memory(node: str) -> int:
    """The GPU's own memory from its KFD memory banks (older kernels have no local_mem_size)."""
    total = 0
    try:
        banks = sorted(os.listdir(joined(node, "mem_banks")))[:64]
    except OSError:
        return 0
    for bank in banks:
        text = read_attribute(joined(node, "mem_banks", bank, "properties"), PROPERTIES_BYTES)
        try:
            values = properties(text or "", f"memory bank {bank}")
        except InputError:
            continue
        if values.get("heap_type") in FRAME_BUFFER_HEAPS:
            total += values.get("size_in_bytes", 0)
    return total


def _drm_devices(root: str) -> dict[str, dict[str, str | None]]:
    """AMD DRM devices by PCI bus id: product name, revision and memory, as far as the kernel gives them."""
    devices: dict[str, dict[str, str | None]] = {}
    try:
        cards = sorted(name for name in os.listdir(joined(root, DRM)) if numbered(name, "card"))[:MAX_NODES]
    except OSError:
        return devices
    for card in cards:
        device = joined(root, DRM, card, "device")
        if (read_attribute(joined(device, "vendor"), 16) or "").strip().lower() != pci_vendor_id("amd"):
            continue
        address = os.path.basename(os.path.realpath(device))
        devices[address] = {
            "product_name": _clean(read_attribute(joined(device, "product_name"), 256)),
            "revision": _clean(read_attribute(joined(device, "revision"), 16)),
            "vram": _clean(read_attribute(joined(device, "mem_info_vram_total"), 32)),
        }
    return devices


def _amdgpu_ids(root: str) -> dict[tuple[str, str], str]:
    """libdrm's amdgpu.ids: (device id, revision) in upper-case hex -> marketing name."""
    for place in AMDGPU_IDS:
        text = read_attribute(joined(root, place), IDS_BYTES)
        if text is None:
            continue
        table = {}
        for line in text.splitlines():
            match = re.fullmatch(_IDS_LINE, line)
            if match:
                table[(match.group(1).upper(), match.group(2).upper())] = match.group(3)[:256]
        return table
    return {}


def _describe(
    gpu: dict[str, Any], drm: dict[str, str | None] | None, ids: dict[tuple[str, str], str]
) -> None:
    """Name the GPU (DRM product name, then amdgpu.ids by device and revision), fill memory from DRM."""
    drm = drm or {}
    device = (gpu.get("pci_device_id") or "")[2:].upper()
    revision = (drm.get("revision") or "").removeprefix("0x").upper()
    by_device = {name for (dev, _), name in ids.items() if dev == device}
    name = drm.get("product_name") or ids.get((device, revision))
    if not name and len(by_device) == 1:
        name = next(iter(by_device))  # every revision of the device has the same name
    if not name:
        from hwcheck.base.tables import load

        name = (load("amd").get("devices") or {}).get(gpu.get("pci_device_id") or "", {}).get("name")
    gpu["name"] = name or f"AMD GPU {gpu['arch']}"
    if gpu.get("memory_mib") is None and (drm.get("vram") or "").isdigit():
        gpu["memory_mib"] = int(drm["vram"] or 0) // MIB


def _unknown_targets(gpus: list[dict[str, Any]]) -> str | None:
    from hwcheck.base.tables import load

    try:
        known = {row["target"] for row in load("amd")["gfx"]}
    except InputError as error:  # a broken install: say which file
        return str(error)
    unknown = sorted({gpu["arch"] for gpu in gpus} - known)
    if not unknown:
        return None
    return f"gfx target {', '.join(unknown)} is not in hwcheck's table (rules/knowledge/amd.toml [[gfx]])"


def _why_absent(root: str, problems: list[str]) -> str:
    found = _drm_devices(root)
    if found:
        where = ", ".join(sorted(found))
        why = (
            f"AMD GPU at {where} has a DRM device but the kernel lists no KFD compute node "
            "(/sys/class/kfd): the amdgpu driver's compute interface is off or too old, so ROCm cannot use it"
        )
    else:
        why = "no AMD GPU in the KFD topology (/sys/class/kfd)"
    return "; ".join([why, *problems])


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    stripped = text.strip().strip("\x00")
    return stripped if stripped and stripped.isprintable() else None
