"""CPU facts (architecture, vendor, model, feature flags) from /proc/cpuinfo or py-cpuinfo."""

from __future__ import annotations

import os

from hwcheck.base import platform_seam
from hwcheck.base.errors import InputError
from hwcheck.probes.result import ERROR, OK, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CPUINFO = "/proc/cpuinfo"
# A 1,000-CPU machine's /proc/cpuinfo is about 2.5 MB; anything far larger is not one.
MAX_CPUINFO_BYTES = 64 * 1024 * 1024
# Keys that only a cpuinfo dump has; a file with none of them is something else.
_CPUINFO_KEYS = ("processor", "flags", "Features", "CPU implementer", "vendor_id", "cpu")

# py-cpuinfo names flags after CPUID bits (Windows) or macOS sysctl names; the kernel
# names them in arch/x86/include/asm/cpufeatures.h. The rules match the kernel's names.
_PY_CPUINFO_FLAGS = {
    "avx1.0": "avx",
    "sse3": "pni",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "rdrnd": "rdrand",
    "sha": "sha_ni",
    "tscdeadline": "tsc_deadline_timer",
    "tsctmr": "tsc_deadline_timer",
    "pdpe1gp": "pdpe1gb",
    "rdwrfsgs": "fsgsbase",
    "htt": "ht",
    "clfsh": "clflush",
    "clfsopt": "clflushopt",
    "lahf": "lahf_lm",
    "xd": "nx",
    "em64t": "lm",
    "mon": "monitor",
    "dscpl": "ds_cpl",
    "ipt": "intel_pt",
}


def probe(path: str | Path = CPUINFO, *, system: str | None = None) -> ProbeResult:
    """This machine's CPU: /proc/cpuinfo on Linux, py-cpuinfo elsewhere (macOS, Windows)."""
    system = system or platform_seam.system()
    if not system.startswith("linux"):
        return _probe_py_cpuinfo()
    try:
        cpu = load_cpuinfo(path, machine=os.uname().machine)
    except InputError as error:
        return ProbeResult(ERROR, reason=str(error))
    return ProbeResult(OK, {"cpu": cpu})


def load_cpuinfo(path: str | Path, *, machine: str | None = None) -> dict[str, Any]:
    """The "cpu" facts from a /proc/cpuinfo dump; InputError when the file cannot be one."""
    from hwcheck.base.inputs import read_text

    text = read_text(path, expected="a /proc/cpuinfo dump", max_bytes=MAX_CPUINFO_BYTES)
    blocks = _blocks(text)
    if not any(key in block for block in blocks for key in _CPUINFO_KEYS):
        raise InputError(path, "not a /proc/cpuinfo dump (no 'processor', 'flags' or 'Features' lines)")
    cpu = _facts(blocks, machine)
    cpu["source"] = str(path)
    return cpu


def parse_cpuinfo(text: str, machine: str | None = None) -> dict[str, Any]:
    """The "cpu" facts (arch, vendor, model, flags, logical_cpus) in /proc/cpuinfo text.

    `machine` is the kernel's machine name (uname -m) when known; otherwise the
    architecture is inferred from the text (POWER dumps do not say the byte order,
    so they give "ppc64").
    """
    return _facts(_blocks(text), machine)


def _kernel_machine(machine: str) -> str:
    """A platform.machine() spelling of Windows or macOS ("amd64") as the Linux kernel's ("x86_64")."""
    from hwcheck.base.tables import load  # only off Linux: rules/knowledge/cpu_features.toml

    families = load("cpu_features")["arch_family"]
    return next((row["kernel"] for row in families if machine in row["aliases"]), machine)


def from_py_cpuinfo(info: dict[str, Any]) -> dict[str, Any]:
    """The "cpu" facts from py-cpuinfo's get_cpu_info() dict, flags renamed to the kernel's."""
    raw_arch = str(info.get("arch_string_raw") or "").lower()
    cpu: dict[str, Any] = {
        "arch": _kernel_machine(raw_arch) or None,
        "vendor": info.get("vendor_id_raw") or None,
        "model": info.get("brand_raw") or None,
        "source": "py-cpuinfo",
    }
    if cpu["arch"] is None:
        del cpu["arch"]
    flags = {_PY_CPUINFO_FLAGS.get(flag, flag) for flag in info.get("flags") or ()}
    if flags:  # Apple silicon reports none: unknown, not "no features"
        cpu["flags"] = sorted(flags)
    count = info.get("count")
    if isinstance(count, int) and count >= 1:
        cpu["logical_cpus"] = count
    return cpu


def _probe_py_cpuinfo() -> ProbeResult:
    try:
        import cpuinfo  # takes > 1 s (it runs CPUID in a subprocess): never on Linux

        info = cpuinfo.get_cpu_info()
    except ImportError:
        return ProbeResult(ERROR, reason="py-cpuinfo is not installed (needed off Linux)")
    except Exception as error:  # it shells out to sysctl/wmic and parses: anything can fail
        return ProbeResult(ERROR, reason=f"py-cpuinfo failed: {type(error).__name__}: {error}")
    return ProbeResult(OK, {"cpu": from_py_cpuinfo(info)})


def _blocks(text: str) -> list[dict[str, str]]:
    """The "key : value" blocks of a cpuinfo text, one per processor (blank-line separated)."""
    blocks: list[dict[str, str]] = []
    block: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            if not line.strip() and block:
                blocks.append(block)
                block = {}
            continue
        block.setdefault(key.strip(), value.strip())
    if block:
        blocks.append(block)
    return blocks


def _facts(blocks: list[dict[str, str]], machine: str | None) -> dict[str, Any]:
    first: dict[str, str] = {}
    for block in blocks:
        for key, value in block.items():
            first.setdefault(key, value)
    flags = _common_flags(blocks)
    vendor: str | None
    model: str | None
    if "CPU implementer" in first:
        vendor, model = _arm_names(first)
    elif first.get("cpu", "").startswith("POWER"):
        vendor, model = "IBM", first["cpu"]
    else:
        vendor, model = first.get("vendor_id"), first.get("model name")
    cpu: dict[str, Any] = {}
    arch = machine or _arch(first, flags)
    if arch:
        cpu["arch"] = arch
    cpu.update(vendor=vendor, model=model, flags=flags)
    processors = sum(1 for block in blocks if block.get("processor", "").isdigit())
    if processors:
        cpu["logical_cpus"] = processors
    return cpu


def _common_flags(blocks: list[dict[str, str]]) -> list[str]:
    # x86 says "flags", ARM "Features", POWER neither. A flag counts only if every CPU
    # has it: a thread may be scheduled on any of them.
    common: set[str] | None = None
    for block in blocks:
        line = block.get("flags", block.get("Features"))
        if line is not None:
            tokens = set(line.split())
            common = tokens if common is None else common & tokens
    return sorted(common or ())


def _arch(first: dict[str, str], flags: list[str]) -> str | None:
    if "CPU implementer" in first:
        return {"8": "aarch64", "7": "armv7l"}.get(first.get("CPU architecture", ""))
    if first.get("cpu", "").startswith("POWER"):
        return "ppc64"
    if "flags" in first and "vendor_id" in first:
        return "x86_64" if "lm" in flags else "i686"  # lm: long mode, 64-bit
    return None


def _arm_names(first: dict[str, str]) -> tuple[str | None, str]:
    from hwcheck.base.tables import load  # TOML parsing is only needed on ARM

    implementer = first["CPU implementer"].lower()
    part = first.get("CPU part", "").lower()
    known = load("arm_cpu")["implementers"].get(implementer, {})
    vendor = known.get("name")
    core = known.get("parts", {}).get(part)
    raw = f"{vendor or 'CPU implementer ' + implementer} part {part}"
    return vendor, core or first.get("model name") or raw
