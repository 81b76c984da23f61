"""The NVIDIA GPUs' part of the `node` namespace: their count, peer-to-peer per pair, ACS and the
IOMMU on their PCIe path, each link against its maximum, and the states the driver reports.

Read from facts.node.nvml (probes/nvidia/node_nvml.py, in the GPU probe's NVML child) and
facts.node.pci_links (probes/nvidia/links.py, sysfs), for the GPUs the process sees after
CUDA_VISIBLE_DEVICES, judged with rules/knowledge/node.toml. The vendor-free rest of the
namespace (shared memory, limits, NCCL) is the engine's (engine/node.py).
"""

from __future__ import annotations

import hwcheck.devices.nvidia_topology as nvidia_topology
from hwcheck.facts import section
from hwcheck.knowledge.node import gpu_states, p2p_classes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# NvmlClocksEventReasons: GpuIdle (nothing runs: the link and clocks drop to save power).
IDLE_REASON = 0x1
# nvmlPstates_t: P0 (maximum performance) to P2 are the states a GPU computes in.
BUSY_PSTATE = 2
# Common ancestors of a GPU pair under a PCIe switch (nvidia-smi topo: PIX, PXB).
SWITCHED = ("PIX", "PXB")
# DMA translation in an IOMMU group (identity is passthrough).
TRANSLATED = ("DMA", "DMA-FQ")
SEVERITIES = ("error", "warning", "info")


def variables(facts: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The GPUs' part of `node` for the visible GPUs `gpus` (facts' GPU entries with their index)."""
    node = section(facts, "node")
    nvml = section(node, "nvml")
    gpu_probe = section(section(node, "probes"), "gpu")
    unread = section(node, "unread")
    return {
        "gpu_count": len(gpus),
        "p2p": _p2p(gpus, nvml),
        "acs": _acs(node, gpus),
        "links": _links(gpus, nvml, node),
        "states": _states(gpus, nvml),
        "topology": nvidia_topology.variables(facts, gpus),
        "nvml_known": bool(nvml.get("gpus")),
        "nvml_reason": str(gpu_probe.get("reason") or unread.get("nvml") or ""),
    }


def _p2p(gpus: list[dict[str, Any]], nvml: dict[str, Any]) -> dict[str, Any]:
    """The GPU class without peer-to-peer (when two or more of its boards are visible) and what
    the driver reports for each pair of visible GPUs."""
    lacking = ""
    source = ""
    for row in p2p_classes():
        members = [g for g in gpus if str(g.get("name") or "").startswith(tuple(row["prefixes"]))]
        if len(members) >= 2:
            lacking, source = row["name"], row["source"]
            break
    indexes = {g.get("index") for g in gpus}
    pairs = [p for p in _dicts(nvml.get("pairs")) if _pair_of(p) and set(p["gpus"]) <= indexes]
    blocked = [
        f"GPU {p['gpus'][0]}-{p['gpus'][1]} ({_words(p.get('p2p_read'))})"
        for p in pairs
        if p.get("p2p_read") not in (None, "ok")
    ]
    return {
        "class_without": lacking,
        "class_source": source,
        "pairs_known": bool(pairs),
        "blocked": blocked,
        "blocked_text": ", ".join(blocked),
        "topology": ", ".join(_pair_text(p) for p in pairs),
        "switched": any(p.get("topology") in SWITCHED for p in pairs),
    }


def _pair_of(pair: dict[str, Any]) -> bool:
    found = pair.get("gpus")
    return isinstance(found, list) and len(found) == 2 and all(isinstance(i, int) for i in found)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _words(status: Any) -> str:
    return str(status or "unknown").replace("_", " ")


def _pair_text(pair: dict[str, Any]) -> str:
    """ "GPU 0-1 (PIX): P2P ok": the pair, its common ancestor where known, NVML's P2P status."""
    topology = f" ({pair['topology']})" if pair.get("topology") else ""
    return f"GPU {pair['gpus'][0]}-{pair['gpus'][1]}{topology}: P2P {_words(pair.get('p2p_read'))}"


def _bus(value: Any) -> str:
    return str(value or "").lower()[-12:]


def _visible_links(gpus: list[dict[str, Any]], node: dict[str, Any]) -> list[dict[str, Any]]:
    buses = {_bus(g.get("pci_bus_id")) for g in gpus if g.get("pci_bus_id")}
    links = _dicts(node.get("pci_links"))
    return [link for link in links if not buses or _bus(link.get("address")) in buses]


def _acs(node: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    links = _visible_links(gpus, node) if gpus else []
    bridges = [b for link in links for b in _dicts(link.get("bridges"))]
    redirects = [b for b in bridges if b.get("acs_redirect") is True]
    # A bridge may be recorded without its address (a report that names none): still redirecting.
    redirecting = sorted({b["address"] for b in redirects if isinstance(b.get("address"), str)})
    unknown = any(b.get("acs_redirect") is None for b in bridges)
    translated = sorted({str(link.get("address")) for link in links if link.get("iommu_type") in TRANSLATED})
    iommu = section(node, "iommu")
    groups = iommu.get("groups")
    return {
        "known": bool(bridges) and not unknown,
        "redirect": bool(redirects),
        "redirecting": ", ".join(redirecting),
        "unknown": bool(bridges) and unknown and not redirects,
        "iommu_groups": groups if isinstance(groups, int) and not isinstance(groups, bool) else None,
        "iommu_translated": ", ".join(translated),
    }


def _links(gpus: list[dict[str, Any]], nvml: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Links narrower than their maximum, slower while busy, or capped by the slot."""
    found: dict[str, list[str]] = {"narrow": [], "slow": [], "idle_slow": [], "capped": []}
    by_index = {g.get("index"): g for g in _dicts(nvml.get("gpus"))}
    seen = [(g, by_index[g.get("index")]) for g in gpus if g.get("index") in by_index]
    if seen:
        for gpu, state in seen:
            link = section(state, "link")
            name = f"GPU {gpu.get('index')}"
            _judge(link, name, busy(state), found)
            gpu_max, max_gen = link.get("gpu_max_gen"), link.get("max_gen")
            if isinstance(gpu_max, int) and isinstance(max_gen, int) and max_gen < gpu_max:
                found["capped"].append(f"{name} Gen{max_gen} of its Gen{gpu_max}")
    elif gpus:  # no NVML: the kernel's view of the links (sysfs)
        for link in _visible_links(gpus, node):
            _judge(link, f"GPU at {link.get('address')}", False, found)
    return {key: ", ".join(texts) for key, texts in found.items()}


def busy(state: dict[str, Any]) -> bool:
    """Whether the GPU was working when it was read: its utilization above 0, or a performance
    state of P0-P2 without the Idle clocks event reason. A GPU in P8 at 0 % may not report Idle
    (NVML's own records of idle A10 and RTX 5090 boards), so anything short of that is not busy."""
    utilization = _whole(state.get("utilization_gpu"))
    if utilization is not None and utilization > 0:
        return True
    pstate, reasons = _whole(state.get("performance_state")), _whole(state.get("clock_event_reasons"))
    return pstate is not None and pstate <= BUSY_PSTATE and reasons is not None and not reasons & IDLE_REASON


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _judge(link: dict[str, Any], name: str, working: bool, found: dict[str, list[str]]) -> None:
    width, max_width = link.get("current_width"), link.get("max_width")
    if isinstance(width, int) and isinstance(max_width, int) and width < max_width:
        found["narrow"].append(f"{name} x{width} of x{max_width}")
    gen, max_gen = link.get("current_gen"), link.get("max_gen")
    if isinstance(gen, int) and isinstance(max_gen, int) and gen < max_gen:
        # An idle GPU lowers its link's generation to save power: only a busy one is degraded.
        found["slow" if working else "idle_slow"].append(f"{name} Gen{gen} of Gen{max_gen}")


def _states(gpus: list[dict[str, Any]], nvml: dict[str, Any]) -> dict[str, Any]:
    """Each GPU state of the table that holds, with the GPUs it holds on, grouped by severity."""
    indexes = {g.get("index") for g in gpus}
    states = [s for s in _dicts(nvml.get("gpus")) if s.get("index") in indexes]
    found: dict[str, list[str]] = {severity: [] for severity in SEVERITIES}
    remedies: dict[str, list[str]] = {severity: [] for severity in SEVERITIES}
    sources: dict[str, list[str]] = {severity: [] for severity in SEVERITIES}
    for row in gpu_states():
        holding = [str(state["index"]) for state in states if _holds(row, state)]
        if not holding:
            continue
        severity = row["severity"]
        found[severity].append(f"GPU {', '.join(holding)}: {row['what']}")
        remedies[severity].append(row["remedy"].replace("{index}", ",".join(holding)))
        sources[severity].append(row["source"])
    return {
        **{severity: "; ".join(texts) for severity, texts in found.items()},
        **{f"{severity}_remedy": "; ".join(dict.fromkeys(texts)) for severity, texts in remedies.items()},
        **{f"{severity}_source": "; ".join(dict.fromkeys(texts)) for severity, texts in sources.items()},
    }


def _holds(row: dict[str, Any], state: dict[str, Any]) -> bool:
    value = state.get(row["field"])
    test = row["test"]
    if value is None:
        return False
    if test == "equals":
        return value is row["value"] if isinstance(row["value"], bool) else value == row["value"]
    if test == "true":
        return value is True
    if test == "positive":
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if test == "bits":
        return isinstance(value, int) and not isinstance(value, bool) and bool(value & row["value"])
    if test == "below_default":
        default = state.get("default_power_limit_mw")
        return isinstance(value, int) and isinstance(default, int) and value < default
    return False
