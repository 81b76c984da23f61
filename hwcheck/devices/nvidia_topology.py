"""The NVIDIA GPUs' topology in `node.topology`: each GPU's NUMA node and local CPUs, the link
between each pair of GPUs and from each GPU to each RDMA NIC, in the words `nvidia-smi topo -m`
uses (PIX: one PCIe switch, PXB: several, PHB: through a host bridge, NODE: between host bridges
of one NUMA node, SYS: across the interconnect between NUMA nodes), and NVLinks that are down.

Read from facts.node.pci_links (probes/nvidia/links.py: where each GPU sits in the PCI tree),
facts.node.fabric.rdma (probes/fabric.py) and facts.node.nvml (the driver's pairs and NVLinks).
A link whose ends are not both known is left out (unknown), never guessed.
"""

from __future__ import annotations

from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# nvidia-smi topo -m's words, nearest first.
LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
ACROSS_SOCKETS = "SYS"
ACTIVE = "ACTIVE"
MAX_TEXT_ITEMS = 16


def variables(facts: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The `node.topology` namespace for the visible GPUs `gpus` (facts' GPU entries, with index)."""
    node = section(facts, "node")
    placed = _placed_gpus(node, gpus)
    nics = _nics(section(node, "fabric"))
    to_nics = {
        label: [(nic_name, relation(where, nic_where)) for nic_name, nic_where in nics]
        for label, where in placed
    }
    far = [
        label
        for label, found in to_nics.items()
        if found and all(level == ACROSS_SOCKETS for _, level in found)
    ]
    nearest = {label: _nearest(found) for label, found in to_nics.items()}
    return {
        "known": any(where.get("host_bridge") or where.get("numa_node") is not None for _, where in placed),
        "gpus": _grouped((_place_text(where), label) for label, where in placed),
        "pairs": _pairs_text(
            _pairs(placed, section(node, "nvml"), nvlink_counts(gpus, section(node, "nvml")))
        ),
        "nics": _grouped(((text, label) for label, text in nearest.items() if text), ": "),
        "nic_far": ", ".join(far),
        "nic_far_numa": ", ".join(
            sorted({str(where.get("numa_node")) for _, where in nics if where.get("numa_node") is not None})
        ),
        "nvlink_down": ", ".join(_nvlinks_down(gpus, section(node, "nvml"))),
    }


def relation(first: dict[str, Any], second: dict[str, Any]) -> str | None:
    """The link between two PCI devices by where they sit; None when that is not known."""
    host, other = first.get("host_bridge"), second.get("host_bridge")
    if not isinstance(host, str) or not isinstance(other, str):
        return None
    if host == other:
        first_path, second_path = _path(first), _path(second)
        common = 0
        for mine, theirs in zip(first_path, second_path, strict=False):
            if mine != theirs:
                break
            common += 1
        if not common:
            return "PHB"
        below = max(len(first_path), len(second_path)) - common
        return "PIX" if below <= 1 else "PXB"
    numa, other_numa = first.get("numa_node"), second.get("numa_node")
    if not isinstance(numa, int) or not isinstance(other_numa, int):
        return None
    return "NODE" if numa == other_numa else ACROSS_SOCKETS


def _path(where: dict[str, Any]) -> list[str]:
    path = where.get("path")
    return [str(part) for part in path] if isinstance(path, list) else []


def _bus(value: Any) -> str:
    return str(value or "").lower()[-12:]


def _placed_gpus(node: dict[str, Any], gpus: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, placement) for each visible GPU whose PCI link was read, by index where known."""
    links = [link for link in _dicts(node.get("pci_links")) if isinstance(link.get("address"), str)]
    by_bus = {_bus(g.get("pci_bus_id")): g.get("index") for g in gpus if g.get("pci_bus_id")}
    placed = []
    for link in links:
        index = by_bus.get(_bus(link["address"]))
        if by_bus and index is None:
            continue  # a GPU this process does not see (CUDA_VISIBLE_DEVICES)
        placed.append((f"GPU {index}" if index is not None else f"GPU at {link['address']}", link))
    return placed


def _nics(fabric: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, placement) of each RDMA device with a PCI device and a port not known to be down."""
    found = []
    for device in _dicts(fabric.get("rdma")):
        pci = section(device, "pci")
        ports = _dicts(device.get("ports"))
        states = [p.get("state") for p in ports if isinstance(p.get("state"), str)]
        if pci and isinstance(device.get("name"), str) and (not states or ACTIVE in states):
            found.append((device["name"], pci))
    return found


def _nearest(found: list[tuple[str, str | None]]) -> str:
    known = [(LEVELS.index(level), name, level) for name, level in found if level in LEVELS]
    if not known:
        return ""
    best = min(rank for rank, _, _ in known)
    names = [name for rank, name, _ in known if rank == best]
    return f"{', '.join(names[:4])} {LEVELS[best]}"


def _place_text(where: dict[str, Any]) -> str:
    numa = where.get("numa_node")
    cpus = where.get("local_cpus")
    text = f"NUMA {numa}" if isinstance(numa, int) else "NUMA unknown"
    return f"{text} (CPUs {cpus})" if isinstance(cpus, str) and cpus else text


def _grouped(items: Iterable[tuple[str, str]], between: str = " ") -> str:
    """ "GPU 0, 1 NUMA 0; GPU 2, 3 NUMA 1": the GPUs that share a text, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for text, label in items:
        groups.setdefault(text, []).append(label)
    return "; ".join(
        f"GPU {', '.join(label.removeprefix('GPU ') for label in labels[:MAX_TEXT_ITEMS])}{between}{text}"
        for text, labels in list(groups.items())[:MAX_TEXT_ITEMS]
    )


def _pairs_text(pairs: list[str]) -> str:
    """The pairs' links, or "every pair NV18" when they are all the same."""
    levels = {pair.rpartition(" ")[2] for pair in pairs}
    if len(pairs) > 1 and len(levels) == 1:
        return f"every GPU pair {levels.pop()}"
    return ", ".join(pairs[:MAX_TEXT_ITEMS])


def _pairs(
    placed: list[tuple[str, dict[str, Any]]], nvml: dict[str, Any], nvlinks: dict[tuple[int, int], int]
) -> list[str]:
    """ "GPU 0-1 NV4" or "GPU 0-2 PIX" for each pair: its NVLinks where it has some, else the
    driver's PCIe level where it gave one, else the PCI tree's."""
    reported: dict[tuple[int, int], Any] = {
        (p["gpus"][0], p["gpus"][1]): p.get("topology")
        for p in _dicts(nvml.get("pairs"))
        if isinstance(p.get("gpus"), list) and len(p["gpus"]) == 2
    }
    texts = []
    for position, (label, where) in enumerate(placed):
        for other_label, other in placed[position + 1 :]:
            first, second = _index(label), _index(other_label)
            pair = (first, second) if first is not None and second is not None else None
            count = nvlinks.get(pair, 0) if pair else 0
            level = (
                f"NV{count}" if count else (reported.get(pair) if pair else None) or relation(where, other)
            )
            if level:
                texts.append(f"{label}-{other_label.removeprefix('GPU ')} {level}")
    return texts


def nvlink_counts(gpus: list[dict[str, Any]], nvml: dict[str, Any]) -> dict[tuple[int, int], int]:
    """(GPU, GPU) -> the NVLinks between them, as nvidia-smi topo -m counts NV#: the first GPU's
    active links that reach the second, or through NVSwitches the fewer of their switch links."""
    index_of = {_bus(g.get("pci_bus_id")): g.get("index") for g in gpus if g.get("pci_bus_id")}
    direct: dict[tuple[int, int], int] = {}
    switched: dict[int, int] = {}
    for state in _dicts(nvml.get("gpus")):
        first = state.get("index")
        if not isinstance(first, int):
            continue
        for remote in _dicts(state.get("nvlink_remotes")):
            if remote.get("type") == "switch":
                switched[first] = switched.get(first, 0) + 1
                continue
            second = index_of.get(_bus(remote.get("bus_id")))
            if isinstance(second, int) and second > first:
                direct[(first, second)] = direct.get((first, second), 0) + 1
    indexes = sorted(switched)
    for position, first in enumerate(indexes):
        for second in indexes[position + 1 :]:
            direct.setdefault((first, second), min(switched[first], switched[second]))
    return direct


def _index(label: str) -> int | None:
    number = label.removeprefix("GPU ")
    return int(number) if number.isdigit() else None


def _nvlinks_down(gpus: list[dict[str, Any]], nvml: dict[str, Any]) -> list[str]:
    """GPUs with fewer active NVLinks than another visible GPU of the same model has."""
    names = {g.get("index"): str(g.get("name") or "") for g in gpus}
    counts = [
        (state["index"], names[state["index"]], state["nvlinks_active"])
        for state in _dicts(nvml.get("gpus"))
        if state.get("index") in names and _whole(state.get("nvlinks_active"))
    ]
    most: dict[str, int] = {}
    for _, name, count in counts:
        most[name] = max(most.get(name, 0), count)
    return [
        f"GPU {index} {count} of {most[name]} NVLinks active"
        for index, name, count in counts
        if count < most[name]
    ]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
