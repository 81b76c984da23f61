"""The node in doctor's report: the `node` row of the checks table, and the readiness that the
JSON report, inventory and nfd carry (whether training can start here, and what fails)."""

from __future__ import annotations

from hwcheck.base.numbers import bytes_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.recommendation import Recommendation


def summary(facts: dict[str, Any]) -> str:
    """One line: shared memory, the cgroup's CPUs and memory, locked memory, the GPU pairs."""
    node = facts.get("node") if isinstance(facts.get("node"), dict) else {}
    if not node:
        return ""
    parts = []
    shm = _dict(node.get("shm"))
    if shm:
        parts.append(f"/dev/shm {bytes_text(shm.get('size_bytes'))}" if shm.get("present") else "no /dev/shm")
    quota = _dict(node.get("cpu_quota"))
    if quota:
        cpus = quota.get("cpus")
        parts.append(f"{cpus:g} CPUs (cgroup)" if isinstance(cpus, (int, float)) else "no CPU quota")
    cgroup = _dict(_dict(facts.get("memory")).get("cgroup"))
    if "limit_bytes" in cgroup:
        limit = cgroup["limit_bytes"]
        parts.append(f"memory limit {bytes_text(limit)}" if isinstance(limit, int) else "no memory limit")
    memlock = _dict(node.get("memlock"))
    if memlock:
        soft = memlock.get("soft_bytes")
        parts.append(f"memlock {bytes_text(soft) if isinstance(soft, int) else 'unlimited'}")
    pairs = [p for p in _dict(node.get("nvml")).get("pairs") or [] if isinstance(p, dict)]
    if pairs:
        ok = sum(1 for p in pairs if p.get("p2p_read") == "ok")
        parts.append(f"P2P on {ok} of {len(pairs)} GPU pairs")
    variables = _dict(node.get("nccl_variables"))
    if variables:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(variables.items())))
    return ", ".join(parts)


def readiness(recommendation: Recommendation | None) -> dict[str, Any]:
    """The node's readiness (recommendation/readiness.py) for doctor's advice, or null without it."""
    from hwcheck.recommendation.readiness import readiness as of_findings

    if recommendation is None:
        return of_findings(None)
    return of_findings((finding.id, finding.severity) for finding in recommendation.findings)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# At most this many interfaces are named on the fabric row (the rest are counted).
ROW_INTERFACES = 6


def rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """doctor's `fabric` and `topology` rows: the interfaces and RDMA ports to other nodes and
    GPUDirect RDMA; each GPU's NUMA node and CPUs, its pairs' links and its nearest RDMA NIC."""
    node = _dict(facts.get("node"))
    found = []
    fabric = fabric_summary(_dict(node.get("fabric")))
    if fabric:
        found.append(("fabric", fabric))
    topology = topology_summary(facts)
    if topology:
        found.append(("topology", topology))
    return found


def fabric_summary(fabric: dict[str, Any]) -> str:
    """ "eth0 up 100 Gb/s MTU 9000 (default route), docker0 bridge; mlx5_0:1 ACTIVE 200 Gb/s
    InfiniBand; nvidia_peermem loaded" (what was read of it)."""
    parts = []
    interfaces = [i for i in _list(fabric.get("interfaces")) if i.get("kind") != "loopback"]
    shown = [i for i in interfaces if i.get("operstate") == "up" or i.get("default_route")]
    texts = [_interface_text(i) for i in shown[:ROW_INTERFACES]]
    if len(shown) > ROW_INTERFACES:
        texts.append(f"{len(shown) - ROW_INTERFACES} more up")
    if texts:
        parts.append(", ".join(texts))
    elif "interfaces" in fabric:
        parts.append("no interface up")
    ports = [
        f"{device.get('name')}:{port.get('port')} {port.get('state') or 'state unknown'}"
        + (f" {port['rate_gbps']:g} Gb/s" if isinstance(port.get("rate_gbps"), (int, float)) else "")
        + {"InfiniBand": " InfiniBand", "Ethernet": " RoCE"}.get(str(port.get("link_layer")), "")
        for device in _list(fabric.get("rdma"))
        for port in _list(device.get("ports"))
    ] + [str(device.get("name")) for device in _list(fabric.get("rdma")) if not _list(device.get("ports"))]
    if ports:
        parts.append(", ".join(ports[:8]) + (f", {len(ports) - 8} more ports" if len(ports) > 8 else ""))
    elif isinstance(fabric.get("rdma"), list):
        parts.append("no RDMA device")
    if fabric.get("peermem") is True:
        parts.append("nvidia_peermem loaded")
    elif fabric.get("peermem") is False and ports:
        parts.append(
            "no nvidia_peermem" + (" (open module: DMA-BUF)" if fabric.get("nvidia_open_module") else "")
        )
    return "; ".join(parts)


def _interface_text(interface: dict[str, Any]) -> str:
    words = [str(interface.get("name")), str(interface.get("operstate") or "state unknown")]
    speed = interface.get("speed_mbps")
    if isinstance(speed, int):
        words.append(f"{speed / 1000:g} Gb/s" if speed >= 1000 else f"{speed} Mb/s")
    if isinstance(interface.get("mtu"), int):
        words.append(f"MTU {interface['mtu']}")
    if interface.get("kind") in ("bridge", "veth", "vxlan"):
        words.append(str(interface["kind"]))
    if interface.get("default_route"):
        words.append("(default route)")
    return " ".join(words)


def topology_report(facts: dict[str, Any]) -> dict[str, Any]:
    """{"topology": {...}} for the JSON report where a GPU's place was read: each GPU's NUMA node
    and CPUs, the pairs' links, each GPU's nearest RDMA NIC, in nvidia-smi topo -m's words."""
    found = _topology(facts)
    if not found or not found["known"]:
        return {}
    keys = ("gpus", "pairs", "nics", "nic_far", "nvlink_down")
    return {"topology": {key: found[key] for key in keys}}


def _topology(facts: dict[str, Any]) -> dict[str, Any] | None:
    if not _list(_dict(facts.get("node")).get("pci_links")):
        return None  # no NVIDIA GPU's place was read: nothing to say, and no plug-in to load
    import hwcheck.devices.nvidia_topology as nvidia_topology

    gpus = [g for g in _list(facts.get("gpus")) if g.get("vendor", "nvidia") == "nvidia"]
    return nvidia_topology.variables(facts, gpus)


def topology_summary(facts: dict[str, Any]) -> str:
    """Each visible NVIDIA GPU's NUMA node and CPUs, its pairs' links, its nearest RDMA NIC."""
    found = _topology(facts)
    if not found or not found["known"]:
        return ""
    parts = [found["gpus"], found["pairs"], f"nearest NIC of {found['nics']}" if found["nics"] else ""]
    return "; ".join(part for part in parts if part)


def _list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
