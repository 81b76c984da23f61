"""Probe part: the fabric between nodes, as the kernel lists it: each network interface
(/sys/class/net: state, speed, MTU, what kind it is, which carries the default route), each RDMA
device and its ports (/sys/class/infiniband: state, rate, link layer), and whether GPUDirect RDMA
can work (the nvidia_peermem module loaded, or the NVIDIA open kernel module for DMA-BUF).

Only files are read, each bounded; no program is run. What could not be read is left out
(unknown) and named in `unread`; a folder that is not there is recorded as empty (absent).
"""

from __future__ import annotations

import os
from itertools import islice

from hwcheck.base.inputs import joined
from hwcheck.base.numbers import whole_or_none
from hwcheck.probes.sysfs import pci_address, placement, read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NET = "sys/class/net"
INFINIBAND = "sys/class/infiniband"
ROUTES = "proc/net/route"
MODULES = "sys/module"
PROC_MODULES = "proc/modules"
NVIDIA_VERSION = "proc/driver/nvidia/version"
# At most this many names are listed of a folder (a hostile one may hold millions), and this
# many interfaces or RDMA devices described (a node has tens; the rest are counted).
MAX_LISTED = 4096
MAX_INTERFACES = 64
MAX_RDMA_DEVICES = 32
MAX_PORTS = 8
NAME_CHARS = 64  # IFNAMSIZ is 16; an RDMA device name is at most 64 (IB_DEVICE_NAME_MAX)
ATTRIBUTE_BYTES = 64
ROUTE_BYTES = 64 * 1024
MODULES_BYTES = 256 * 1024
VERSION_BYTES = 1024
# The fastest link speed taken as real, in Mb/s (1.6 Tb/s Ethernet is 1,600,000).
MAX_SPEED_MBPS = 10_000_000
MAX_MTU = 1 << 20
# ARPHRD_LOOPBACK in /sys/class/net/X/type.
LOOPBACK_TYPE = "772"
# The modules that give an RDMA NIC access to GPU memory (peer memory clients).
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")


def read(root: str, unread: dict[str, str]) -> dict[str, Any]:
    """{"fabric": {...}} for the machine under `root`; what failed goes in `unread`."""
    fabric: dict[str, Any] = {}
    default = _default_route(root)
    names = _listing(joined(root, NET), "interfaces", unread)
    if names is not None:
        fabric["interfaces_total"] = len(names)
        fabric["interfaces"] = [
            _interface(joined(root, NET, name), name, default) for name in names[:MAX_INTERFACES]
        ]
    if default is not None:
        fabric["default_route"] = default
    devices = _listing(joined(root, INFINIBAND), "rdma", unread)
    if devices is not None:
        fabric["rdma"] = [_rdma(joined(root, INFINIBAND, name), name) for name in devices[:MAX_RDMA_DEVICES]]
    peermem = _peermem(root)
    if peermem is not None:
        fabric["peermem"] = peermem
    open_module = _open_module(root)
    if open_module is not None:
        fabric["nvidia_open_module"] = open_module
    return {"fabric": fabric}


def _listing(folder: str, key: str, unread: dict[str, str]) -> list[str] | None:
    """The names in `folder`, sorted, at most MAX_LISTED; [] when it is not there, None (and the
    reason in `unread`) when it cannot be read."""
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in islice(entries, MAX_LISTED)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        unread[key] = f"{folder}: {error.strerror or error}"
        return None
    return sorted(name for name in names if _usable(name))


def _usable(name: str) -> bool:
    """A name the kernel could have made: printable, not hidden, no longer than NAME_CHARS (a
    longer one is skipped, never cut: a cut name would read another path)."""
    return 0 < len(name) <= NAME_CHARS and name.isprintable() and not name.startswith(".")


def _attribute(folder: str, name: str) -> str | None:
    text = read_attribute(joined(folder, name), ATTRIBUTE_BYTES)
    return text.strip() if text is not None else None


def _whole(text: str | None, maximum: int) -> int | None:
    value = whole_or_none((text or "").strip())
    return value if value is not None and 0 < value <= maximum else None


def _interface(folder: str, name: str, default: str | None) -> dict[str, Any]:
    """One interface: operstate, speed (null when the driver has none: -1, or unreadable while
    down), MTU, kind, whether it carries the default route, and its PCI device where it has one."""
    state = _attribute(folder, "operstate")
    interface: dict[str, Any] = {
        "name": name,
        "operstate": state[:16].lower() if state and state.isprintable() else None,
        "speed_mbps": _whole(_attribute(folder, "speed"), MAX_SPEED_MBPS),
        "mtu": _whole(_attribute(folder, "mtu"), MAX_MTU),
        "kind": _kind(folder, name),
        "default_route": name == default,
    }
    device = joined(folder, "device")
    address = os.path.basename(os.path.realpath(device)) if os.path.islink(device) else ""
    if pci_address(address):
        interface["pci"] = {"address": address, **placement(device)}
    return interface


def _kind(folder: str, name: str) -> str:
    """loopback, bridge, veth, vxlan (overlay), physical (a device behind it) or virtual."""
    if _attribute(folder, "type") == LOOPBACK_TYPE or name == "lo":
        return "loopback"
    uevent = read_attribute(joined(folder, "uevent"), 512) or ""
    devtype = next((line[8:].strip() for line in uevent.splitlines() if line.startswith("DEVTYPE=")), "")
    if os.path.isdir(joined(folder, "bridge")) or devtype == "bridge":
        return "bridge"
    if devtype in ("veth", "vxlan") or (not devtype and name.startswith("veth")):
        return devtype or "veth"
    return "physical" if os.path.lexists(joined(folder, "device")) else "virtual"


def _default_route(root: str) -> str | None:
    """The interface of the IPv4 default route (/proc/net/route: destination and mask 0)."""
    text = read_attribute(joined(root, ROUTES), ROUTE_BYTES)
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
            return fields[0][:NAME_CHARS] if fields[0].isprintable() else None
    return None


def _rdma(folder: str, name: str) -> dict[str, Any]:
    """One RDMA device: its ports (state, rate, link layer) and its PCI device."""
    ports = []
    for port in (_listing(joined(folder, "ports"), "ports", {}) or [])[:MAX_PORTS]:
        if not port.isdigit():
            continue
        where = joined(folder, "ports", port)
        ports.append(
            {
                "port": int(port),
                "state": _state(_attribute(where, "state")),
                "rate_gbps": _rate(_attribute(where, "rate")),
                "link_layer": _layer(_attribute(where, "link_layer")),
            }
        )
    device: dict[str, Any] = {"name": name, "ports": ports}
    link = joined(folder, "device")
    address = os.path.basename(os.path.realpath(link)) if os.path.lexists(link) else ""
    if pci_address(address):
        device["pci"] = {"address": address, **placement(link)}
    return device


# The port states of the InfiniBand specification as the kernel writes them ("4: ACTIVE").
PORT_STATES = ("NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER")


def _state(text: str | None) -> str | None:
    word = (text or "").partition(":")[2].strip().upper() or (text or "").strip().upper()
    return word if word in PORT_STATES else None


def _rate(text: str | None) -> float | None:
    """The rate in Gb/s of "200 Gb/sec (4X HDR)"; None when it is not that shape."""
    words = (text or "").split()
    if len(words) < 2 or words[1] != "Gb/sec":
        return None
    try:
        value = float(words[0])
    except ValueError:
        return None
    return value if 0 < value <= MAX_SPEED_MBPS / 1000 else None


def _layer(text: str | None) -> str | None:
    return text if text in ("InfiniBand", "Ethernet") else None


def _peermem(root: str) -> bool | None:
    """Whether a GPU peer-memory module is loaded: /sys/module/NAME, else /proc/modules; None when
    neither can be read."""
    modules = joined(root, MODULES)
    if any(os.path.isdir(joined(modules, name)) for name in PEERMEM_MODULES):
        return True
    # Every loaded module has its folder in /sys/module: a populated one is the whole answer.
    if _populated(modules):
        return False
    listed = read_attribute(joined(root, PROC_MODULES), MODULES_BYTES)
    if listed is not None:
        return any(line.split(" ", 1)[0] in PEERMEM_MODULES for line in listed.splitlines())
    return None


def _populated(folder: str) -> bool:
    """Whether `folder` holds anything (the first entry is enough)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def _open_module(root: str) -> bool | None:
    """Whether the loaded NVIDIA kernel module is the open one (DMA-BUF needs it); None without one."""
    text = read_attribute(joined(root, NVIDIA_VERSION), VERSION_BYTES)
    return None if text is None else "Open Kernel Module" in text
