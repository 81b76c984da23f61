"""The `node` rule variables: what stops or slows training beyond the precision.

The vendor-free part is built here from facts.node (probes/node.py): /dev/shm, the cgroup's CPU
quota and memory limit, the locked-memory limit, the NCCL_* variables and the NCCL that will be
loaded. The GPUs' part (their count, peer-to-peer per pair, ACS and the IOMMU on their path,
PCIe links, the states the driver reports) is a vendor's: its devices plug-in returns it as its
`node` namespace, merged in here. What the facts leave out stays unknown: `known` flags say
which parts were read, so a rule can tell "not there" from "could not be read".
"""

from __future__ import annotations

import hwcheck.engine.fabric as fabric
from hwcheck.base.numbers import bytes_text
from hwcheck.facts import section
from hwcheck.knowledge.node import shared_memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Frameworks whose collectives across GPUs go through NCCL (or RCCL, which reads NCCL_*).
NCCL_BACKENDS = ("torch", "tensorflow", "jax")
# The values of NCCL_P2P_DISABLE that turn peer-to-peer off.
DISABLING = ("1", "true", "True", "TRUE")
# What a vendor's `node` namespace holds when no plug-in says anything of the GPUs.
NO_GPU_PART: dict[str, Any] = {
    "gpu_count": 0,
    "p2p": {
        "class_without": "",
        "class_source": "",
        "pairs_known": False,
        "blocked": [],
        "blocked_text": "",
        "topology": "",
        "switched": False,
    },
    "acs": {
        "known": False,
        "redirect": False,
        "redirecting": "",
        "unknown": False,
        "iommu_groups": None,
        "iommu_translated": "",
    },
    "links": {"narrow": "", "slow": "", "idle_slow": "", "capped": ""},
    "states": {
        f"{severity}{suffix}": ""
        for severity in ("error", "warning", "info")
        for suffix in ("", "_remedy", "_source")
    },
    "topology": {
        "known": False,
        "gpus": "",
        "pairs": "",
        "nics": "",
        "nic_far": "",
        "nic_far_numa": "",
        "nvlink_down": "",
    },
    "nvml_known": False,
    "nvml_reason": "",
}


def recorded_statuses(
    facts: dict[str, Any], probes: dict[str, dict[str, Any]] | None
) -> dict[str, dict[str, Any]] | None:
    """The probe statuses the rules read: where a facts file stands in for a probe ("file"), what
    that probe reported on the machine itself when the file recorded it (node.probes)."""
    recorded = section(section(facts, "node"), "probes")
    if not probes or not recorded:
        return probes
    return {
        name: {**status, **recorded[name]}
        if status.get("status") == "file" and isinstance(recorded.get(name), dict)
        else status
        for name, status in probes.items()
    }


def variables(
    facts: dict[str, Any], backend: str, environment: dict[str, Any], vendors: dict[str, Any]
) -> dict[str, Any]:
    """The `node` namespace: every key present, unknown as null or False with its `known` flag.

    `vendors` are the devices plug-ins' namespaces; their `node` is the GPUs' part.
    """
    node = section(facts, "node")
    gpu_part = {**NO_GPU_PART, **section(vendors, "node")}
    multi = gpu_part["gpu_count"] >= 2
    nccl_vars = section(node, "nccl_variables")
    if not nccl_vars:
        nccl_vars = {k: v for k, v in environment.items() if isinstance(k, str) and k.startswith("NCCL_")}
    unread = section(node, "unread")
    return {
        "known": any(key != "probes" for key in node),
        "multi_gpu": multi,
        **gpu_part,
        "nccl": {
            "used": multi and backend in NCCL_BACKENDS,
            "version": _nccl_version(facts, backend),
            "variables": ", ".join(f"{k}={v}" for k, v in sorted(nccl_vars.items())),
            "p2p_disabled": str(nccl_vars.get("NCCL_P2P_DISABLE", "")).strip() in DISABLING,
        },
        "fabric": fabric.variables(node, nccl_vars),
        "shm": _shm(node, shared_memory()),
        "limits": _limits(facts, node),
        "unread": "; ".join(f"{k}: {v}" for k, v in sorted(unread.items())),
    }


def _nccl_version(facts: dict[str, Any], backend: str) -> str | None:
    loaded = section(section(facts, "loaded"), backend)
    for found in (section(loaded, "nccl"), section(facts, "nccl")):
        version = found.get("version")
        if isinstance(version, str) and version:
            return version
    return None


def _shm(node: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    shm = section(node, "shm")
    size = shm.get("size_bytes") if _whole(shm.get("size_bytes")) else None
    present = shm.get("present")
    return {
        "known": bool(shm),
        "present": present is not False if shm else None,
        "size_bytes": size,
        "size": bytes_text(size),
        "small": size is not None and size < row["minimum_bytes"],
        "minimum": bytes_text(row["minimum_bytes"]),
        "remedy": row["remedy"],
        "source": row["source"],
    }


def _limits(facts: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    quota = section(node, "cpu_quota")
    cpus = quota.get("cpus")
    cpus = float(cpus) if isinstance(cpus, (int, float)) and not isinstance(cpus, bool) else None
    cgroup = section(section(facts, "memory"), "cgroup")
    memory_limit = cgroup.get("limit_bytes") if _whole(cgroup.get("limit_bytes")) else None
    memlock = section(node, "memlock")
    soft = memlock.get("soft_bytes") if _whole(memlock.get("soft_bytes")) else None
    return {
        "cpu_quota_known": bool(quota),
        "cpus": cpus,
        "memory_known": "limit_bytes" in cgroup,
        "memory_limit": bytes_text(memory_limit) if memory_limit is not None else "",
        "memlock_known": bool(memlock),
        "memlock_limited": bool(memlock) and soft is not None,
        "memlock": bytes_text(soft) if soft is not None else ("unlimited" if memlock else "unknown"),
    }


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
