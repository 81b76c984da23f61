"""A stand-in for the pynvml module that replays GPU values recorded from real machines.

Each recording is tests/fixtures/nvml/<name>.json (its "source" names the nvidia-smi
or deviceQuery capture), in NVML's own units: memory in MiB, CUDA 12.4 as 12040, MIG as
[current, pending] with 1 = enabled, the PCI device id as nvidia-smi -q prints it
("0x218410DE": device 0x2184 in the high 16 bits, vendor 0x10de in the low 16). A value
the capture did not record (null) is answered the way NVML answers a field it cannot
give: NVML_ERROR_NOT_SUPPORTED (an unrecorded PCI device id: PCI info without that field).
A GPU in MIG mode lists its MIG devices ("mig_devices": index, uuid, profile, memory_total_mib,
gpu_instance_id, compute_instance_id, as `nvidia-smi -L` and `-q` print them) and the number of
slots ("max_mig_devices", NVML's nvmlDeviceGetMaxMigDeviceCount; the listed count if absent); an
unused slot answers NVML_ERROR_NOT_FOUND, and a MIG device's name is its parent's followed by
"MIG <profile>", the form NVML gives (nvidia-smi -L prints the profile the same way).
Knobs reproduce failures: `init_error` (nvmlInit fails with that NVML code),
`not_supported` (those calls fail), `hang` (those calls block until `release()`), `text_type`
(bytes, as older and some current nvidia-ml-py calls return, or str).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"

# The codes and messages of nvml.h / nvidia-ml-py that the fake can raise.
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_GPU_IS_LOST = 15
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
}


class NVMLError(Exception):
    """Like pynvml.NVMLError: carries the NVML return code; str() is NVML's message."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return MESSAGES.get(self.value, f"NVML Error with code {self.value}")


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's name
    def __init__(self) -> None:
        super().__init__(NVML_ERROR_NOT_SUPPORTED)


def recording(name: str) -> dict[str, Any]:
    """The recorded values of fixture `name` (tests/fixtures/nvml/<name>.json)."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def recording_names() -> list[str]:
    """Every recorded machine, by fixture name."""
    return sorted(path.stem for path in FIXTURES.glob("*.json"))


class FakeNvml:
    """Quacks like the pynvml module for the calls hwcheck makes."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_LIBRARY_NOT_FOUND = NVML_ERROR_LIBRARY_NOT_FOUND
    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE

    def __init__(
        self,
        machine: str | dict[str, Any],
        *,
        init_error: int | None = None,
        not_supported: tuple[str, ...] = (),
        hang: tuple[str, ...] = (),
        text_type: type = bytes,
    ) -> None:
        self.machine = recording(machine) if isinstance(machine, str) else machine
        self.init_error = init_error
        self.not_supported = set(not_supported)
        self.hang = set(hang)
        self.text_type = text_type
        self.calls: list[str] = []
        self.initialized = False
        self.shutdowns = 0
        self.nvmlLib = object()  # pynvml keeps its loaded library here; the fake has one
        self._released = threading.Event()

    def release(self) -> None:
        """Let the calls named in `hang` return."""
        self._released.set()

    # -- lifecycle --------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        self._require_init()
        self.initialized = False
        self.shutdowns += 1

    # -- system -----------------------------------------------------------------
    def nvmlSystemGetDriverVersion(self) -> Any:
        return self._text(self._answer("nvmlSystemGetDriverVersion", self.machine["driver_version"]))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self._answer("nvmlSystemGetCudaDriverVersion", self.machine["cuda_driver_version"])

    def nvmlSystemGetNVMLVersion(self) -> Any:
        return self._text(self._answer("nvmlSystemGetNVMLVersion", self.machine.get("nvml_version")))

    # -- devices ----------------------------------------------------------------
    def nvmlDeviceGetCount(self) -> int:
        return self._answer("nvmlDeviceGetCount", len(self.machine["devices"]))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimpleNamespace:
        self._answer("nvmlDeviceGetHandleByIndex", index)
        return SimpleNamespace(index=index, device=self.machine["devices"][index])

    def nvmlDeviceGetName(self, handle: SimpleNamespace) -> Any:
        return self._text(self._answer("nvmlDeviceGetName", handle.device["name"]))

    def nvmlDeviceGetCudaComputeCapability(self, handle: SimpleNamespace) -> tuple[int, int]:
        capability = handle.device["compute_capability"]
        answer = self._answer("nvmlDeviceGetCudaComputeCapability", capability)
        return (answer[0], answer[1])

    def nvmlDeviceGetMemoryInfo(self, handle: SimpleNamespace) -> SimpleNamespace:
        mib = self._answer("nvmlDeviceGetMemoryInfo", handle.device["memory_total_mib"])
        return SimpleNamespace(total=mib * 1024 * 1024, free=0, used=0)

    def nvmlDeviceGetMigMode(self, handle: SimpleNamespace) -> list[int]:
        return list(self._answer("nvmlDeviceGetMigMode", handle.device["mig_mode"]))

    def nvmlDeviceGetUUID(self, handle: SimpleNamespace) -> Any:
        return self._text(self._answer("nvmlDeviceGetUUID", handle.device["uuid"]))

    def nvmlDeviceGetSerial(self, handle: SimpleNamespace) -> Any:
        return self._text(self._answer("nvmlDeviceGetSerial", handle.device["serial"]))

    def nvmlDeviceGetPciInfo(self, handle: SimpleNamespace) -> SimpleNamespace:
        bus_id = self._answer("nvmlDeviceGetPciInfo", handle.device["pci_bus_id"])
        info = SimpleNamespace(busId=self._text(bus_id))
        # A recording without the device id leaves the field out rather than invent one.
        if handle.device.get("pci_device_id"):
            info.pciDeviceId = int(handle.device["pci_device_id"], 16)
        return info

    # -- MIG devices ----------------------------------------------------------------
    def nvmlDeviceGetMaxMigDeviceCount(self, handle: SimpleNamespace) -> int:
        devices = handle.device.get("mig_devices") or []
        return self._answer(
            "nvmlDeviceGetMaxMigDeviceCount", handle.device.get("max_mig_devices", len(devices))
        )

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: SimpleNamespace, index: int) -> SimpleNamespace:
        self._answer("nvmlDeviceGetMigDeviceHandleByIndex", index)
        by_slot = {device["index"]: device for device in handle.device.get("mig_devices") or []}
        if index not in by_slot:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        recorded = by_slot[index]
        profile = recorded.get("profile")
        device = {
            **recorded,
            "name": f"{handle.device['name']} MIG {profile}" if profile else handle.device["name"],
        }
        return SimpleNamespace(index=index, device=device, parent=handle)

    def nvmlDeviceGetGpuInstanceId(self, handle: SimpleNamespace) -> int:
        return self._answer("nvmlDeviceGetGpuInstanceId", handle.device["gpu_instance_id"])

    def nvmlDeviceGetComputeInstanceId(self, handle: SimpleNamespace) -> int:
        return self._answer("nvmlDeviceGetComputeInstanceId", handle.device["compute_instance_id"])

    # -- plumbing ---------------------------------------------------------------
    def _answer(self, function: str, value: Any) -> Any:
        self.calls.append(function)
        self._require_init()
        if function in self.hang:
            self._released.wait()
        if function in self.not_supported or value is None:
            raise NVMLError_NotSupported()
        return value

    def _require_init(self) -> None:
        if not self.initialized:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _text(self, value: str) -> Any:
        return value.encode() if self.text_type is bytes else value
