"""The `node.fabric` rule variables: the network to other nodes as NCCL will see it.

Built from facts.node.fabric (probes/fabric.py) and the NCCL_* variables set: which interfaces
NCCL_SOCKET_IFNAME and NCCL_IB_HCA select (their `^` and `=` prefixes as the NCCL User Guide's
Environment Variables page gives them), which of those are container interfaces (a bridge, a veth,
a VXLAN overlay, or docker*, which NCCL skips by default) and which RDMA ports are not active.
What was not read stays unknown: `interfaces_known` and `rdma_known` say which parts were.
"""

from __future__ import annotations

from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Kernel interface kinds (probes/fabric.py) that do not leave the node by themselves.
CONTAINER_KINDS = ("bridge", "veth", "vxlan")
# The interfaces NCCL leaves out unless no other is up (NCCL User Guide, NCCL_SOCKET_IFNAME).
DEFAULT_EXCLUDED = ("docker",)
DISABLING = ("1", "true", "True", "TRUE")
ACTIVE = "ACTIVE"


def variables(node: dict[str, Any], nccl_vars: dict[str, Any]) -> dict[str, Any]:
    """The `node.fabric` namespace: every key present, unknown as "" or False with its flag."""
    fabric = section(node, "fabric")
    interfaces = [i for i in _dicts(fabric.get("interfaces")) if isinstance(i.get("name"), str)]
    interfaces_known = isinstance(fabric.get("interfaces"), list)
    devices = [d for d in _dicts(fabric.get("rdma")) if isinstance(d.get("name"), str)]
    rdma_known = isinstance(fabric.get("rdma"), list)
    ifname = str(nccl_vars.get("NCCL_SOCKET_IFNAME") or "").strip()
    hca = str(nccl_vars.get("NCCL_IB_HCA") or "").strip()
    names = [i["name"] for i in interfaces]
    chosen = [i for i in interfaces if i["name"] in set(selected(ifname, names))] if ifname else []
    containers = [i["name"] for i in chosen if container(i)]
    route = next((i["name"] for i in interfaces if i.get("default_route") and not container(i)), "")
    hca_names = [d["name"] for d in devices]
    used_devices = [d for d in devices if d["name"] in set(selected(hca, hca_names))] if hca else devices
    ports = [(d["name"], p) for d in used_devices for p in _dicts(d.get("ports"))]
    down = [f"{name} port {p.get('port')} {p.get('state')}" for name, p in ports if _down(p)]
    active = [(name, p) for name, p in ports if p.get("state") == ACTIVE]
    peermem, open_module = fabric.get("peermem"), fabric.get("nvidia_open_module")
    return {
        "interfaces_known": interfaces_known,
        "rdma_known": rdma_known,
        "socket_ifname": ifname,
        "socket_selected": ", ".join(i["name"] for i in chosen),
        "socket_missing": interfaces_known and bool(ifname) and bool(interfaces) and not chosen,
        "socket_containers": ", ".join(containers),
        "socket_all_containers": bool(chosen) and len(containers) == len(chosen),
        "route_interface": route,
        "interface_names": ", ".join(names[:16]),
        "ib_hca": hca,
        "hca_missing": rdma_known and bool(hca) and bool(devices) and not used_devices,
        "hca_names": ", ".join(hca_names[:16]),
        "rdma_devices": len(devices),
        "ports_down": ", ".join(down),
        "ports_active": len(active),
        "active_text": ", ".join(_port_text(name, p) for name, p in active[:8]),
        "ib_disabled": str(nccl_vars.get("NCCL_IB_DISABLE", "")).strip() in DISABLING,
        "peermem_known": isinstance(peermem, bool),
        "peermem": peermem is True,
        # DMA-BUF needs the open kernel module: false only when the driver said it is the other one.
        "dmabuf_possible": open_module is True,
        "gdr_missing": peermem is False and open_module is False,
    }


def selected(value: str, names: Iterable[str]) -> list[str]:
    """The names an NCCL interface list selects: comma-separated prefixes (`name:port` keeps the
    name), `^` first to exclude them, `=` (after any `^`) to match whole names."""
    text = value.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    items = [item.strip().partition(":")[0] for item in text.split(",") if item.strip()]

    def matches(name: str) -> bool:
        return any(name == item if exact else name.startswith(item) for item in items)

    return [name for name in names if matches(name) != exclude]


def container(interface: dict[str, Any]) -> bool:
    """A container's interface (a bridge, veth or VXLAN overlay, or docker*), unless it carries the
    default route: then it is how this node reaches the others (a bridge over the physical NIC)."""
    if interface.get("default_route") is True:
        return False
    name = str(interface.get("name") or "")
    return interface.get("kind") in CONTAINER_KINDS or name.startswith(DEFAULT_EXCLUDED)


def _down(port: dict[str, Any]) -> bool:
    state = port.get("state")
    return isinstance(state, str) and state != ACTIVE


def _port_text(name: str, port: dict[str, Any]) -> str:
    rate = port.get("rate_gbps")
    layer = {"InfiniBand": "InfiniBand", "Ethernet": "RoCE"}.get(str(port.get("link_layer")), "")
    parts = [f"{name}:{port.get('port')}"]
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        parts.append(f"{rate:g} Gb/s")
    if layer:
        parts.append(layer)
    return " ".join(parts)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
