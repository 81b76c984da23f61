"""GPU probe: every NVIDIA GPU the driver can use, read through NVML (nvidia-ml-py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from hwcheck.probes.cuda import version_from_number
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult

NOT_FOUND = "NVIDIA driver library (NVML) not found"
MIB = 1024 * 1024
# Values from nvml.h, fixed by the C API whichever module stands in for pynvml.
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_DEVICE_MIG_ENABLE = 1
# NVIDIA's PCI vendor id: the low half of NVML's pciDeviceId on every NVIDIA GPU.
NVIDIA_PCI_VENDOR_ID = 0x10DE


def nvml_library_paths() -> tuple[str, ...]:
    """Where the NVML shared library lives: the loader's search path, WSL, Windows."""
    if sys.platform.startswith("win"):
        windir = os.environ.get("WINDIR", r"C:\Windows")
        programs = os.environ.get("ProgramFiles", r"C:\Program Files")
        return (
            os.path.join(windir, "System32", "nvml.dll"),
            os.path.join(programs, "NVIDIA Corporation", "NVSMI", "nvml.dll"),
        )
    return ("libnvidia-ml.so.1", "/usr/lib/wsl/lib/libnvidia-ml.so.1")


def probe(nvml: Any = None, library_paths: Sequence[str] | None = None) -> ProbeResult:
    """List the NVIDIA GPUs and the driver through NVML; `nvml` replaces the pynvml module."""
    if nvml is None:
        # Loading the library first is cheap; importing pynvml costs ~20 ms, so only
        # a machine that has the driver library pays for it.
        library = _load_library(nvml_library_paths() if library_paths is None else library_paths)
        if library is None:
            return ProbeResult(ABSENT, reason=NOT_FOUND)
        try:
            import pynvml
        except ImportError:
            return ProbeResult(ERROR, reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
        if getattr(pynvml, "nvmlLib", False) is None:
            # pynvml would look only for the plain library name; hand it the copy found
            # (WSL and Windows keep it elsewhere).
            pynvml.nvmlLib = library
        nvml = pynvml
    return _read(nvml)


def _load_library(paths: Sequence[str]) -> Any:
    candidates = [path for path in paths if _may_exist(path)]
    if not candidates:
        return None
    import ctypes  # ~3 ms: only for a library that is likely there

    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _may_exist(
    path: str, environ: Mapping[str, str] | None = None, loader_cache: str = "/etc/ld.so.cache"
) -> bool:
    """Whether the dynamic loader could find `path`; False only when it surely cannot."""
    if os.sep in path or not sys.platform.startswith("linux"):
        return os.sep not in path or os.path.exists(path)
    environ = os.environ if environ is None else environ
    directories = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    directories += ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    if any(os.path.exists(os.path.join(directory, path)) for directory in directories):
        return True
    try:
        with open(loader_cache, "rb") as handle:
            return path.encode() in handle.read()
    except OSError:
        return True  # no loader cache to consult: let dlopen decide


def _read(nvml: Any) -> ProbeResult:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as error:
        if getattr(error, "value", None) == NVML_ERROR_LIBRARY_NOT_FOUND:
            return ProbeResult(ABSENT, reason=NOT_FOUND)
        return ProbeResult(ERROR, reason=f"NVML could not start: {_message(error)}")
    try:
        return _inventory(nvml)
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass


def _inventory(nvml: Any) -> ProbeResult:
    driver = {
        "version": _text(_ask(nvml, "nvmlSystemGetDriverVersion")),
        "cuda": version_from_number(_ask(nvml, "nvmlSystemGetCudaDriverVersion")),
        "nvml_version": _text(_ask(nvml, "nvmlSystemGetNVMLVersion")),
    }
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError as error:
        return ProbeResult(ERROR, {"nvidia_driver": driver}, f"NVML could not count GPUs: {_message(error)}")
    gpus, problems = [], []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as error:
            problems.append(f"GPU {index} unreadable: {_message(error)}")
            continue
        gpus.append(_gpu(nvml, index, handle))
    facts = {"gpus": gpus, "nvidia_driver": driver}
    reason = "; ".join(problems) or None
    if count == 0:
        return ProbeResult(ABSENT, facts, "the NVIDIA driver is loaded but reports no GPUs")
    if not gpus:
        return ProbeResult(ERROR, facts, reason)
    return ProbeResult(OK, facts, reason)


def _gpu(nvml: Any, index: int, handle: Any) -> dict[str, Any]:
    capability = _ask(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    memory = _ask(nvml, "nvmlDeviceGetMemoryInfo", handle)
    mig_modes = _ask(nvml, "nvmlDeviceGetMigMode", handle)
    pci = _ask(nvml, "nvmlDeviceGetPciInfo", handle)
    return {
        "index": index,
        "vendor": "nvidia",
        # The schema needs a name; NVML failing to give one is rare enough to say so plainly.
        "name": _text(_ask(nvml, "nvmlDeviceGetName", handle)) or "unknown",
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
        "memory_mib": memory.total // MIB if memory is not None else None,
        "mig": mig_modes[0] == NVML_DEVICE_MIG_ENABLE if mig_modes else None,
        "uuid": _text(_ask(nvml, "nvmlDeviceGetUUID", handle)),
        "serial": _text(_ask(nvml, "nvmlDeviceGetSerial", handle)),
        "pci_bus_id": _text(pci.busId) if pci is not None else None,
        "pci_device_id": _pci_device_id(getattr(pci, "pciDeviceId", None)),
    }


def _pci_device_id(combined: Any) -> str | None:
    """The PCI device id ("0x2184") from NVML's pciDeviceId (device << 16 | vendor 0x10de)."""
    if not isinstance(combined, int) or combined & 0xFFFF != NVIDIA_PCI_VENDOR_ID:
        return None
    return f"0x{combined >> 16 & 0xFFFF:04x}"


def _ask(nvml: Any, function: str, *args: Any) -> Any:
    """One NVML query; a field NVML cannot give (NotSupported, any NVMLError) is None."""
    try:
        # An older nvidia-ml-py may lack the function: AttributeError means the same.
        return getattr(nvml, function)(*args)
    except (nvml.NVMLError, AttributeError):
        return None


def _text(value: Any) -> str | None:
    # pynvml returns bytes from some calls and str from others, varying by version.
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).strip("\x00 ") or None


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
