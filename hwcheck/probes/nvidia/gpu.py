"""GPU probe: every NVIDIA GPU the driver can use, read through NVML (nvidia-ml-py)."""

from __future__ import annotations

import os
import re
import sys

from hwcheck.base import platform_seam
from hwcheck.base.inputs import read_head
from hwcheck.probes.ldcache import MAX_CACHE_BYTES
from hwcheck.probes.nvidia.cuda import version_from_number
from hwcheck.probes.result import ABSENT, ERROR, OK, TIMEOUT, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

NOT_FOUND = "NVIDIA driver library (NVML) not found"
MIB = 1024 * 1024
# Values from nvml.h, fixed by the C API whichever module stands in for pynvml.
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_DEVICE_MIG_ENABLE = 1
# The profile at the end of a MIG device's NVML name ("... MIG 3g.40gb", "... MIG 1c.3g.20gb").
MIG_PROFILE = r"\bMIG (\S+)\s*\Z"
# NVIDIA's PCI vendor id: the low half of NVML's pciDeviceId on every NVIDIA GPU.
NVIDIA_PCI_VENDOR_ID = 0x10DE
# The NVML query runs in a child process; doctor's own deadline (runner.collect) kills it sooner.
NVML_TIMEOUT = 5.0
CHILD_OUTPUT_CAP = 1024 * 1024  # 8 GPUs' facts are ~5 KiB
# The child imports this very copy of hwcheck (argv[1]) and nothing from the working
# directory, which `python -c` would otherwise search first.
CHILD_CODE = (
    "import sys\n"
    "if not sys.flags.safe_path: del sys.path[0]\n"
    "if sys.argv[1] not in sys.path: sys.path.insert(0, sys.argv[1])\n"
    "from hwcheck.probes.nvidia.gpu import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def nvml_library_paths() -> tuple[str, ...]:
    """Where the NVML shared library lives: the loader's search path, WSL, Windows."""
    if platform_seam.system() == platform_seam.WINDOWS:
        windir = os.environ.get("WINDIR", r"C:\Windows")
        programs = os.environ.get("ProgramFiles", r"C:\Program Files")
        return (
            os.path.join(windir, "System32", "nvml.dll"),
            os.path.join(programs, "NVIDIA Corporation", "NVSMI", "nvml.dll"),
        )
    return ("libnvidia-ml.so.1", "/usr/lib/wsl/lib/libnvidia-ml.so.1")


def probe(
    nvml: Any = None, library_paths: Sequence[str] | None = None, timeout: float = NVML_TIMEOUT
) -> ProbeResult:
    """List the NVIDIA GPUs and the driver through NVML; `nvml` replaces the pynvml module."""
    if nvml is not None:
        return _read(nvml)
    paths = nvml_library_paths() if library_paths is None else library_paths
    # Starting a process costs tens of ms: only a machine whose loader could find NVML pays.
    candidates = [path for path in paths if _may_exist(path)]
    if not candidates:
        return ProbeResult(ABSENT, reason=NOT_FOUND)
    return _probe_in_child(candidates, timeout)


def _probe_in_child(library_paths: Sequence[str], timeout: float) -> ProbeResult:
    """Run NVML in a child process: a dlopen that hangs (holding the loader lock and, in
    CPython before 3.13, the GIL) or a segfault in the driver then costs this probe only."""
    from hwcheck.probes import subprocesses

    if not sys.executable:
        return ProbeResult(ERROR, reason="no Python interpreter to run the NVML query in")
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    argv = [sys.executable, "-c", CHILD_CODE, package_root, *library_paths]
    finished = subprocesses.run(argv, timeout, output_cap=CHILD_OUTPUT_CAP)
    if finished.status == subprocesses.TIMED_OUT:
        return ProbeResult(TIMEOUT, reason=f"the NVML query {finished.reason} (a hung driver)")
    if finished.status != subprocesses.OK:
        return ProbeResult(ERROR, reason=f"the NVML query {finished.reason}")
    return _result_from_json(finished.output)


def _result_from_json(text: str) -> ProbeResult:
    """The child's report (see `main`) as a ProbeResult; anything else is an error."""
    import json

    try:
        report = json.loads(text)
    except ValueError:
        report = None
    if (
        not isinstance(report, dict)
        or report.get("status") not in (OK, ABSENT, ERROR)
        or not isinstance(report.get("facts"), dict)
        or not isinstance(report.get("reason"), (str, type(None)))
    ):
        return ProbeResult(ERROR, reason="the NVML query printed no report")
    return ProbeResult(report["status"], report["facts"], report["reason"])


def _probe_here(library_paths: Sequence[str]) -> ProbeResult:
    """The NVML query itself, in the child: load the library, hand it to pynvml, read."""
    try:
        import pynvml
    except ImportError:
        if _load_library(library_paths) is None:
            return ProbeResult(ABSENT, reason=NOT_FOUND)
        return ProbeResult(ERROR, reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
    if getattr(pynvml, "nvmlLib", False) is None:
        # pynvml would look only for the plain library name; hand it the copy found
        # (WSL and Windows keep it elsewhere).
        library = _load_library(library_paths)
        if library is None:
            return ProbeResult(ABSENT, reason=NOT_FOUND)
        pynvml.nvmlLib = library
    return _read(pynvml)


def main(argv: Sequence[str] | None = None) -> int:
    """The NVML child (`python -m hwcheck.probes.nvidia.gpu [LIBRARY...]`): print the GPU facts as JSON."""
    import json

    paths = list(sys.argv[1:] if argv is None else argv) or list(nvml_library_paths())
    try:
        result = _probe_here(paths)
    except Exception as error:  # the parent reads a report, never a traceback
        result = ProbeResult(ERROR, reason=f"NVML query failed: {type(error).__name__}: {error}")
    report = {"status": result.status, "facts": result.facts, "reason": result.reason}
    sys.stdout.write(json.dumps(report))
    sys.stdout.flush()
    return 0


def _load_library(paths: Sequence[str]) -> Any:
    import ctypes

    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _may_exist(
    path: str, environ: Mapping[str, str] | None = None, loader_cache: str = "/etc/ld.so.cache"
) -> bool:
    """Whether the dynamic loader could find `path`; False only when it surely cannot."""
    if os.sep in path or not platform_seam.kernel_files():
        return os.sep not in path or os.path.exists(path)
    environ = os.environ if environ is None else environ
    directories = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    directories += ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    if any(os.path.exists(os.path.join(directory, path)) for directory in directories):
        return True
    try:
        return path.encode() in read_head(loader_cache, MAX_CACHE_BYTES)
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
    gpus, problems, handles = [], [], []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as error:
            problems.append(f"GPU {index} unreadable: {_message(error)}")
            continue
        gpus.append(_gpu(nvml, index, handle))
        handles.append((index, handle))
    from hwcheck.probes.nvidia import node_nvml  # only the NVML child asks for it

    facts = {"gpus": gpus, "nvidia_driver": driver, "node": {"nvml": node_nvml.read(nvml, handles)}}
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
    mig = mig_modes[0] == NVML_DEVICE_MIG_ENABLE if mig_modes else None
    gpu = {
        "index": index,
        "vendor": "nvidia",
        # The schema needs a name; NVML failing to give one is rare enough to say so plainly.
        "name": _text(_ask(nvml, "nvmlDeviceGetName", handle)) or "unknown",
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
        "memory_mib": memory.total // MIB if memory is not None else None,
        "mig": mig,
        "uuid": _text(_ask(nvml, "nvmlDeviceGetUUID", handle)),
        "serial": _text(_ask(nvml, "nvmlDeviceGetSerial", handle)),
        "pci_bus_id": _text(pci.busId) if pci is not None else None,
        "pci_device_id": _pci_device_id(getattr(pci, "pciDeviceId", None)),
    }
    if mig:
        gpu["mig_devices"] = _mig_devices(nvml, handle)
    return gpu


def _mig_devices(nvml: Any, handle: Any) -> list[dict[str, Any]]:
    """The MIG devices of a GPU in MIG mode: what CUDA_VISIBLE_DEVICES=MIG-<uuid> names."""
    devices = []
    for slot in range(_ask(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0):
        device = _ask(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
        if device is None:
            continue  # an empty slot answers NVML_ERROR_NOT_FOUND
        memory = _ask(nvml, "nvmlDeviceGetMemoryInfo", device)
        # NVML names a MIG device after its parent and profile: "NVIDIA H100 80GB HBM3 MIG 3g.40gb".
        profile = re.search(MIG_PROFILE, _text(_ask(nvml, "nvmlDeviceGetName", device)) or "")
        devices.append(
            {
                "index": slot,
                "uuid": _text(_ask(nvml, "nvmlDeviceGetUUID", device)),
                "profile": profile.group(1) if profile else None,
                "memory_mib": memory.total // MIB if memory is not None else None,
                "gpu_instance_id": _ask(nvml, "nvmlDeviceGetGpuInstanceId", device),
                "compute_instance_id": _ask(nvml, "nvmlDeviceGetComputeInstanceId", device),
            }
        )
    return devices


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


if __name__ == "__main__":
    sys.exit(main())
