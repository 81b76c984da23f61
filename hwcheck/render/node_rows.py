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
