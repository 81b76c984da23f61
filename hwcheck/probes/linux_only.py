"""The probes that read what only Linux has (/proc, /sys, /dev nodes), absent on macOS and Windows.

On those systems each is answered "absent" with what it would have read, before it runs, so
no /proc or /sys path is opened there and doctor shows why the vendor was not looked for.
"""

from __future__ import annotations

from hwcheck.base import platform_seam
from hwcheck.probes.result import ABSENT, ProbeResult

# Probe name -> what it reads; all of it exists on Linux only.
LINUX_ONLY = {
    "amd": "the ROCm kernel driver's topology (/sys/class/kfd)",
    "intel": "/sys/class/drm and the PCI bus",
    "pci": "the PCI bus (/sys/bus/pci)",
    "accel": "the PCI bus (/sys/bus/pci) and /dev",
    "tegra": "/proc/device-tree",
    "tpu": "/dev/accel and /dev/vfio",
    "node": "/dev/shm, the cgroup's limits (/proc, /sys/fs/cgroup) and the GPUs' PCIe links (/sys)",
}


def absent_here(name: str) -> ProbeResult | None:
    """ABSENT for a Linux-only probe off Linux (saying what it reads); None where it should run."""
    if name not in LINUX_ONLY or platform_seam.kernel_files():
        return None
    return ProbeResult(ABSENT, reason=f"not Linux ({platform_seam.kernel_name()}): no {LINUX_ONLY[name]}")
