"""The GPU probe against NVML replaying values recorded from real GPUs, and NVML's failure modes."""

from __future__ import annotations

import time

import pytest
from fakes.nvml import (
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_NO_PERMISSION,
    FakeNvml,
    recording,
    recording_names,
)

from hwcheck import knowledge
from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK, TIMEOUT, collect
from hwcheck.probes.nvidia import gpu

# name -> (GPU count, name, compute capability, memory MiB, MIG, driver, driver's CUDA)
EXPECTED = {
    "h100-80gb-hbm3": (1, "NVIDIA H100 80GB HBM3", "9.0", 81559, False, "590.48.01", "13.1"),
    "h100-80gb-hbm3-mig": (1, "NVIDIA H100 80GB HBM3", "9.0", 81559, True, "590.48.01", "13.1"),
    "h100-sxm-x8": (8, "NVIDIA H100 80GB HBM3", "9.0", 81559, False, "565.57.01", "12.7"),
    "h200": (1, "NVIDIA H200", "9.0", 143771, False, "550.90.12", "12.4"),
    "gh200-480gb": (1, "NVIDIA GH200 480GB", "9.0", 97871, False, "550.127.05", "12.4"),
    "a100-sxm4-80gb-x4": (4, "NVIDIA A100-SXM4-80GB", "8.0", 81920, False, "555.42.02", "12.5"),
    "a100-sxm4-40gb-mig": (1, "NVIDIA A100-SXM4-40GB", "8.0", 40960, True, "510.47.03", "11.6"),
    "l4": (1, "NVIDIA L4", "8.9", 23034, None, "550.90.07", "12.4"),
    "l40s-two-part-driver": (1, "NVIDIA L40S", "8.9", 46068, None, "595.80", "13.2"),
    "rtx-3090-x2": (2, "NVIDIA GeForce RTX 3090", "8.6", 24576, None, "560.35.03", "12.6"),
    "rtx-2080-super": (1, "NVIDIA GeForce RTX 2080 SUPER", "7.5", 8192, None, "595.71.05", "13.2"),
    "tesla-t4": (1, "Tesla T4", "7.5", 15360, None, "515.105.01", "11.7"),
    "gtx-1660-graphics-device": (1, "Graphics Device", "7.5", 5912, None, "418.43", "10.1"),
    "v100-sxm2-16gb-x8": (8, "Tesla V100-SXM2-16GB", "7.0", 16384, None, "550.127.05", "12.4"),
    "tesla-p100-pcie-16gb": (1, "Tesla P100-PCIE-16GB", "6.0", 16384, None, "510.47.03", "11.6"),
}


def test_every_recording_has_an_expectation_and_a_named_source():
    assert set(EXPECTED) | {"mixed-rtx-3090-rtx-2080-super"} == set(recording_names())
    for name in recording_names():
        sources = recording(name)["source"]
        assert sources and all(s["file"].startswith("gpu-captures/") and s["origin"] for s in sources)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_gpu_yields_its_facts(name):
    count, model, capability, memory_mib, mig, driver, cuda = EXPECTED[name]
    fake = FakeNvml(name)
    result = gpu.probe(nvml=fake)
    assert result.status == OK, result.reason
    gpus = result.facts["gpus"]
    assert [g["index"] for g in gpus] == list(range(count))
    for entry in gpus:
        assert entry["vendor"] == "nvidia"
        assert entry["name"] == model
        assert entry["compute_capability"] == capability
        assert entry["memory_mib"] == memory_mib
        assert entry["mig"] is mig
    assert result.facts["nvidia_driver"]["version"] == driver
    assert result.facts["nvidia_driver"]["cuda"] == cuda
    validate_facts({"schema_version": 1, **result.facts}, name)
    assert fake.shutdowns == 1 and not fake.initialized


def test_mixed_generations_report_each_gpu():
    result = gpu.probe(nvml=FakeNvml("mixed-rtx-3090-rtx-2080-super"))
    assert [(g["name"], g["compute_capability"]) for g in result.facts["gpus"]] == [
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("NVIDIA GeForce RTX 2080 SUPER", "7.5"),
    ]


def test_identity_fields_are_decoded_whether_nvml_returns_bytes_or_str():
    for text_type in (bytes, str):
        entry = gpu.probe(nvml=FakeNvml("h200", text_type=text_type)).facts["gpus"][0]
        assert entry["uuid"] == "GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732"
        assert entry["serial"] == "1753724031847"
        assert entry["pci_bus_id"] == "00000000:03:00.0"
        assert entry["name"] == "NVIDIA H200"


@pytest.mark.parametrize(
    ("name", "device_ids"),
    [
        # nvidia-smi printed "Device Id : 0x233510DE" (-q) or <pci_device_id>218410DE (-q -x).
        ("h200", ["0x2335"]),
        ("gtx-1660-graphics-device", ["0x2184"]),
        ("mixed-rtx-3090-rtx-2080-super", ["0x2204", "0x1e81"]),
        ("v100-sxm2-16gb-x8", ["0x1db1"] * 8),
    ],
)
def test_the_pci_device_id_is_the_high_half_of_nvml_pci_device_id(name, device_ids):
    result = gpu.probe(nvml=FakeNvml(name))
    assert [g["pci_device_id"] for g in result.facts["gpus"]] == device_ids


def test_pci_info_not_supported_leaves_bus_and_device_id_null():
    result = gpu.probe(nvml=FakeNvml("h200", not_supported=("nvmlDeviceGetPciInfo",)))
    assert result.status == OK
    [entry] = result.facts["gpus"]
    assert (entry["pci_bus_id"], entry["pci_device_id"]) == (None, None)
    validate_facts({"schema_version": 1, **result.facts}, "h200 without PCI info")


@pytest.mark.parametrize("combined", [0, 0x21841002, None, "0x218410DE"])
def test_a_pci_device_id_without_nvidia_vendor_half_is_unknown(combined):
    # 0x1002 is another vendor: NVML on an NVIDIA GPU never reports it, so trust nothing.
    assert gpu._pci_device_id(combined) is None


def test_the_probe_names_a_graphics_device_by_its_pci_id():
    # Driver 418.43 calls the GTX 1660 "Graphics Device"; the recorded PCI id still says which board.
    [entry] = gpu.probe(nvml=FakeNvml("gtx-1660-graphics-device")).facts["gpus"]
    assert knowledge.gpu_model(entry["name"]) is None
    model = knowledge.gpu_model(entry["name"], entry["pci_device_id"])
    assert (model["name"], model["tensor_cores"]) == ("GeForce GTX 1660", False)


def test_geforce_serial_is_unknown_not_a_failure():
    # GeForce boards have no serial: NVML answers NotSupported, nvidia-smi prints N/A.
    result = gpu.probe(nvml=FakeNvml("rtx-3090-x2"))
    assert result.status == OK
    assert [g["serial"] for g in result.facts["gpus"]] == [None, None]
    assert result.facts["gpus"][1]["uuid"] == "GPU-74e6e433-5193-b31f-b8b5-7a54c8b4623e"


def test_one_call_not_supported_leaves_that_field_null():
    fake = FakeNvml("a100-sxm4-80gb-x4", not_supported=("nvmlDeviceGetCudaComputeCapability",))
    result = gpu.probe(nvml=fake)
    assert result.status == OK
    assert [g["compute_capability"] for g in result.facts["gpus"]] == [None] * 4
    assert [g["memory_mib"] for g in result.facts["gpus"]] == [81920] * 4
    assert fake.shutdowns == 1


def test_driver_calls_not_supported_leave_the_gpus_intact():
    fake = FakeNvml("l4", not_supported=("nvmlSystemGetCudaDriverVersion", "nvmlSystemGetDriverVersion"))
    result = gpu.probe(nvml=fake)
    assert result.status == OK
    assert result.facts["nvidia_driver"] == {"version": None, "cuda": None, "nvml_version": None}
    assert result.facts["gpus"][0]["compute_capability"] == "8.9"


def test_unreadable_gpu_is_named_and_the_others_kept():
    class OneLostGpu(FakeNvml):
        def nvmlDeviceGetHandleByIndex(self, index):
            if index == 1:
                raise self.NVMLError(15)
            return super().nvmlDeviceGetHandleByIndex(index)

    result = gpu.probe(nvml=OneLostGpu("rtx-3090-x2"))
    assert result.status == OK
    assert [g["index"] for g in result.facts["gpus"]] == [0]
    assert result.reason == "GPU 1 unreadable: GPU is lost"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"),
        (NVML_ERROR_NO_PERMISSION, "Insufficient Permissions"),
    ],
)
def test_nvml_init_failure_is_an_error_with_nvml_message(code, message):
    fake = FakeNvml("h100-80gb-hbm3", init_error=code)
    result = gpu.probe(nvml=fake)
    assert result.status == ERROR
    assert result.reason == f"NVML could not start: {message}"
    assert result.facts == {}
    assert fake.calls == ["nvmlInit"]


def test_library_missing_is_absent():
    result = gpu.probe(library_paths=["/nonexistent/libnvidia-ml.so.1"])
    assert result.status == ABSENT
    assert result.reason == "NVIDIA driver library (NVML) not found"


def test_library_missing_at_init_is_absent():
    result = gpu.probe(nvml=FakeNvml("h200", init_error=NVML_ERROR_LIBRARY_NOT_FOUND))
    assert (result.status, result.reason) == (ABSENT, "NVIDIA driver library (NVML) not found")


def test_this_machine_answers_without_raising():
    # This test machine has no NVIDIA driver; a GPU machine gets ok. Either way: no exception.
    result = gpu.probe()
    assert result.status in (OK, ABSENT, ERROR)
    if result.status == ABSENT:
        assert result.reason == gpu.NOT_FOUND


def test_driver_loaded_without_gpus_is_absent():
    empty = {**recording("h200"), "devices": []}
    result = gpu.probe(nvml=FakeNvml(empty))
    assert result.status == ABSENT
    assert result.facts["gpus"] == []
    assert result.facts["nvidia_driver"]["version"] == "550.90.12"


def test_hung_nvml_call_is_cut_off_by_the_deadline():
    fake = FakeNvml("h100-sxm-x8", hang=("nvmlDeviceGetMemoryInfo",))
    started = time.perf_counter()
    try:
        collected = collect(probes={"gpu": lambda: gpu.probe(nvml=fake)}, timeout=0.3)
    finally:
        fake.release()
    elapsed = time.perf_counter() - started
    assert collected.results["gpu"].status == TIMEOUT
    assert elapsed < 0.3 * 10  # the NVML call hangs until released
    assert "gpus" not in collected.facts


def test_library_search_skips_ctypes_only_when_the_loader_cannot_find_nvml(tmp_path):
    from hwcheck.probes.nvidia.gpu import _may_exist

    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(b"glibc-ld.so.cache1.1\x00libcuda.so.1\x00/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    assert not _may_exist("libnvidia-ml.so.1", environ={}, loader_cache=str(cache))
    cache.write_bytes(b"\x00libnvidia-ml.so.1\x00/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    assert _may_exist("libnvidia-ml.so.1", environ={}, loader_cache=str(cache))
    (tmp_path / "libnvidia-ml.so.1").write_bytes(b"")
    assert _may_exist(
        "libnvidia-ml.so.1",
        environ={"LD_LIBRARY_PATH": str(tmp_path)},
        loader_cache=str(tmp_path / "missing"),
    )
    assert not _may_exist(str(tmp_path / "wsl" / "libnvidia-ml.so.1"))
