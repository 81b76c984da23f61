"""The Apple GPU: which chip (M1 ... M4, Pro/Max/Ultra), its unified memory, the macOS release.

The chip and memory come from `sysctl` (run with a deadline, like every program a probe runs),
the macOS release from platform.mac_ver(): the product version (14.4.1), which is what PyTorch's
MPS checks read, not the Darwin kernel release uname reports (23.4.0).
"""

from __future__ import annotations

from collections.abc import Callable

from hwcheck.base import platform_seam
from hwcheck.base.errors import InputError
from hwcheck.base.numbers import parse_whole
from hwcheck.probes.result import ABSENT, ERROR, OK, TIMEOUT, ProbeResult

# `sysctl -n` prints the values in this order, one per line.
SYSCTL_KEYS = ("machdep.cpu.brand_string", "hw.memsize")
SYSCTL_TIMEOUT = 3.0
SYSCTL_OUTPUT_CAP = 4096
MIB = 1024 * 1024
# Every Apple silicon chip names itself "Apple M1", "Apple M2 Max", ...; Intel Macs print
# "Intel(R) Core(TM) i7-... CPU @ 2.60GHz", and the first M1 release of macOS 11.0 printed
# "Apple processor" (archspec/archspec#38), which says Apple silicon but not which chip.
APPLE_PREFIX = "Apple "


def probe(
    *,
    system: str | None = None,
    mac_ver: Callable[[], str] | None = None,
    sysctl: str = "sysctl",
    timeout: float = SYSCTL_TIMEOUT,
) -> ProbeResult:
    """The "apple" facts: os.macos, and the Apple GPU in `gpus` (absent off macOS and on Intel Macs)."""
    system = system or platform_seam.kernel_name()  # os.uname is absent on Windows
    if system != "Darwin":
        return ProbeResult(ABSENT, reason=f"not macOS ({system}): no Apple GPU")
    macos = (mac_ver or _mac_ver)() or None
    facts: dict = {"os": {"macos": macos}}
    from hwcheck.probes import subprocesses

    finished = subprocesses.run([sysctl, "-n", *SYSCTL_KEYS], timeout, output_cap=SYSCTL_OUTPUT_CAP)
    if finished.status == subprocesses.TIMED_OUT:
        return ProbeResult(TIMEOUT, facts, reason=f"sysctl {finished.reason}")
    if finished.status != subprocesses.OK:
        return ProbeResult(ERROR, facts, reason=f"sysctl {finished.reason}")
    try:
        gpu = apple_gpu(finished.output)
    except InputError as error:
        return ProbeResult(ERROR, facts, reason=str(error))
    if gpu is None:
        brand = finished.output.splitlines()[0].strip() if finished.output.strip() else "unknown"
        return ProbeResult(ABSENT, facts, reason=f"{brand[:80]!r} is no Apple silicon chip: no Apple GPU")
    return ProbeResult(OK, {**facts, "gpus": [gpu]})


def apple_gpu(sysctl_output: str) -> dict | None:
    """The Apple GPU from `sysctl -n machdep.cpu.brand_string hw.memsize`; None on an Intel Mac.

    Raises InputError when the output is not the two values asked for.
    """
    lines = [line.strip() for line in sysctl_output.splitlines() if line.strip()]
    if not lines:
        raise InputError("sysctl", f"printed nothing for {SYSCTL_KEYS[0]}")
    if not lines[0].startswith(APPLE_PREFIX):
        return None  # an Intel Mac: no Apple GPU, and its memory is no GPU's
    if len(lines) != len(SYSCTL_KEYS):
        raise InputError(
            "sysctl", f"expected {len(SYSCTL_KEYS)} values ({', '.join(SYSCTL_KEYS)}), got {len(lines)}"
        )
    brand, memsize = lines
    memory = parse_whole(memsize, "sysctl hw.memsize")
    return {
        "index": 0,
        "vendor": "apple",
        "name": brand[:256],
        "memory_mib": memory // MIB,
        "unified_memory": True,
    }


def _mac_ver() -> str:
    import platform  # ~2 ms, paid on macOS only

    return platform.mac_ver()[0]
