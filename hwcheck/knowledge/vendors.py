"""Vendor ids and wheel names (rules/knowledge/vendors.toml, nvidia.toml [pip_wheels]) for the
layers above the probes. The probes read them first and sit below this layer, so the readers are
theirs (probes/sysfs.py, probes/nvidia/wheels.py); importing them waits for the first question,
since the probes package costs ~7 ms to import."""

from __future__ import annotations


def pci_vendor_id(vendor: str) -> str | None:
    """The PCI vendor id ("0x10de") of a GPU maker ("nvidia", "amd", "intel"), or None for another."""
    from hwcheck.probes.sysfs import pci_vendor_ids

    return pci_vendor_ids().get(vendor)


def nvidia_wheel(library: str) -> str:
    """NVIDIA's pip distribution of a CUDA library ("cudnn" -> "nvidia-cudnn"; a -cuNN suffix may follow)."""
    from hwcheck.probes.nvidia.wheels import nvidia_wheel as read

    return read(library)
