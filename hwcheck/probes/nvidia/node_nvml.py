"""What NVML says about the node, read in the GPU probe's NVML child beside the GPU inventory:
each GPU's PCIe link and the states that stop or slow training, and for each pair of GPUs their
common ancestor in the PCI topology, whether the driver allows peer-to-peer, and NVLink.

Values and functions are those of NVIDIA's NVML API reference (nvml.h); a query the GPU or the
installed nvidia-ml-py cannot answer is left null (unknown), never guessed.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# nvmlGpuTopologyLevel_t -> the words nvidia-smi topo -m uses.
TOPOLOGY_LEVELS = {0: "internal", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PStatus_t.
P2P_STATUSES = {
    0: "ok",
    1: "chipset_not_supported",
    2: "gpu_not_supported",
    3: "topology_not_supported",
    4: "disabled_by_regkey",
    5: "not_supported",
    6: "unknown",
}
P2P_CAPS_INDEX_READ = 0
P2P_CAPS_INDEX_WRITE = 1
MEMORY_ERROR_UNCORRECTED = 1
VOLATILE_ECC = 0
NVLINK_MAX_LINKS = 18
NVLINK_ACTIVE = 1
# nvmlIntNvLinkDeviceType_t: what the far end of an NVLink is.
NVLINK_REMOTE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch"}
BUS_ID_CHARS = 32
MAX_PAIRED_GPUS = 16
MAX_PSTATE = 15


def read(nvml: Any, handles: list[tuple[int, Any]]) -> dict[str, Any]:
    """{"gpus": [...], "pairs": [...]} for the GPUs of `handles` ((index, handle) pairs)."""
    gpus = [_gpu(nvml, index, handle) for index, handle in handles]
    pairs = []
    paired = handles[:MAX_PAIRED_GPUS]
    for position, (first, first_handle) in enumerate(paired):
        for second, second_handle in paired[position + 1 :]:
            pairs.append(_pair(nvml, first, first_handle, second, second_handle))
    return {"gpus": gpus, "pairs": pairs}


def _gpu(nvml: Any, index: int, handle: Any) -> dict[str, Any]:
    reasons = _ask(nvml, "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None:
        reasons = _ask(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    remapped = _ask(nvml, "nvmlDeviceGetRemappedRows", handle)
    enforced = _ask(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    default = _ask(nvml, "nvmlDeviceGetPowerManagementDefaultLimit", handle)
    links = [_ask(nvml, "nvmlDeviceGetNvLinkState", handle, link) for link in range(NVLINK_MAX_LINKS)]
    remotes = [_remote(nvml, handle, link) for link, state in enumerate(links) if state == NVLINK_ACTIVE]
    utilization = _ask(nvml, "nvmlDeviceGetUtilizationRates", handle)
    pstate = _whole(_ask(nvml, "nvmlDeviceGetPerformanceState", handle))
    return {
        "index": index,
        "link": {
            "current_gen": _whole(_ask(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle)),
            "max_gen": _whole(_ask(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle)),
            "gpu_max_gen": _whole(_ask(nvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", handle)),
            "current_width": _whole(_ask(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle)),
            "max_width": _whole(_ask(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle)),
        },
        "clock_event_reasons": _whole(reasons),
        # nvmlPstates_t: 0 is maximum performance, 15 minimum; 32 (unknown) is left out.
        "performance_state": pstate if pstate is not None and pstate <= MAX_PSTATE else None,
        "utilization_gpu": _percent(getattr(utilization, "gpu", None)),
        "persistence_mode": _flag(_ask(nvml, "nvmlDeviceGetPersistenceMode", handle)),
        "compute_mode": _whole(_ask(nvml, "nvmlDeviceGetComputeMode", handle)),
        "retired_pages_pending": _flag(_ask(nvml, "nvmlDeviceGetRetiredPagesPendingStatus", handle)),
        "remapped_rows_pending": bool(remapped[2]) if _sequence(remapped, 4) else None,
        "remapping_failed": bool(remapped[3]) if _sequence(remapped, 4) else None,
        "ecc_uncorrected_volatile": _whole(
            _ask(nvml, "nvmlDeviceGetTotalEccErrors", handle, MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC)
        ),
        "power_limit_mw": _whole(enforced),
        "default_power_limit_mw": _whole(default),
        "nvlinks_active": sum(1 for state in links if state == NVLINK_ACTIVE)
        if any(state is not None for state in links)
        else None,
        # The far end of each active link: another GPU's PCI bus id, or an NVSwitch (the pairs'
        # NVLink counts of nvidia-smi topo -m, NV#, are counted from these).
        "nvlink_remotes": remotes if any(remote is not None for remote in remotes) else None,
    }


def _remote(nvml: Any, handle: Any, link: int) -> dict[str, Any] | None:
    """What the active NVLink `link` reaches: {"type": "gpu", "bus_id": ...} or {"type": "switch"}."""
    kind = _ask(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
    info = _ask(nvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", handle, link)
    bus = getattr(info, "busId", None)
    bus = bus.decode("ascii", errors="replace") if isinstance(bus, bytes) else bus
    found: dict[str, Any] = {}
    if isinstance(kind, int) and kind in NVLINK_REMOTE_TYPES:
        found["type"] = NVLINK_REMOTE_TYPES[kind]
    if isinstance(bus, str) and bus.isprintable() and bus:
        found["bus_id"] = bus[:BUS_ID_CHARS]
    return found or None


def _pair(nvml: Any, first: int, first_handle: Any, second: int, second_handle: Any) -> dict[str, Any]:
    level = _ask(nvml, "nvmlDeviceGetTopologyCommonAncestor", first_handle, second_handle)
    read = _ask(nvml, "nvmlDeviceGetP2PStatus", first_handle, second_handle, P2P_CAPS_INDEX_READ)
    write = _ask(nvml, "nvmlDeviceGetP2PStatus", first_handle, second_handle, P2P_CAPS_INDEX_WRITE)
    return {
        "gpus": [first, second],
        "topology": TOPOLOGY_LEVELS.get(level) if isinstance(level, int) else None,
        "p2p_read": P2P_STATUSES.get(read) if isinstance(read, int) else None,
        "p2p_write": P2P_STATUSES.get(write) if isinstance(write, int) else None,
    }


def _ask(nvml: Any, function: str, *args: Any) -> Any:
    try:
        return getattr(nvml, function)(*args)
    except (nvml.NVMLError, AttributeError, TypeError, ValueError):
        return None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63 else None


def _percent(value: Any) -> int | None:
    whole = _whole(value)
    return whole if whole is not None and whole <= 100 else None


def _flag(value: Any) -> bool | None:
    return bool(value) if isinstance(value, int) and value in (0, 1) else None


def _sequence(value: Any, length: int) -> bool:
    return isinstance(value, (tuple, list)) and len(value) >= length
