"""What a launched `doctor --verify --distributed` shows: the collectives per size at rank 0, one
line at every other rank.

Sizes and bandwidths are as nccl-tests prints them: the algorithm bandwidth is the bytes over the
slowest rank's time, the bus bandwidth scales it by 2(n-1)/n for an all-reduce and (n-1)/n for an
all-gather, so that it compares with the links' own speed whatever the number of ranks.
"""

from __future__ import annotations

from typing import Any

from hwcheck.engine.distributed import size_text, stage_text


def time_text(seconds: float) -> str:
    """A collective's time: microseconds below a millisecond, else milliseconds."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    return f"{seconds * 1e3:.2f} ms"


def slowest_text(row: dict[str, Any]) -> str:
    """The slowest rank of one collective with its node and host, as far as they are known."""
    node = str(row.get("slowest_node") or "")
    host = str(row.get("slowest_host") or "")
    where = ", ".join(part for part in (f"node {node}" if node else "", host) if part)
    return f"rank {row.get('slowest_rank')}" + (f" ({where})" if where else "")


def collective_rows(seen: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """One row per timed collective: operation, size, time, algbw, busbw (GB/s), slowest rank."""
    rows = []
    for row in seen.get("collectives") or []:
        if not isinstance(row, dict):
            continue
        rows.append(
            (
                str(row.get("operation") or ""),
                size_text(int(row.get("bytes") or 0)),
                time_text(float(row.get("seconds") or 0.0)),
                f"{float(row.get('algbw_gbps') or 0.0):.3f}",
                f"{float(row.get('busbw_gbps') or 0.0):.3f}",
                slowest_text(row),
            )
        )
    return rows


def collectives_title(seen: dict[str, Any]) -> str:
    """The heading of the collectives table: how many ranks, which backend, which launcher."""
    return (
        f"Collectives: {seen.get('world_size')} ranks with {seen.get('backend')} "
        f"({launcher_text(seen)}); GB/s as nccl-tests counts"
    )


def launcher_text(seen: dict[str, Any]) -> str:
    """The launcher: torchrun, srun, or env:// for its variables alone (a PyTorchJob, a script)."""
    launcher = str(seen.get("launcher") or "")
    return {"env": "env://", "slurm": "srun"}.get(launcher, launcher)


def rank_line(seen: dict[str, Any]) -> str:
    """The one line a launched rank other than 0 prints: its outcome, and where it stopped if it did."""
    # Short: a rank in the thousands, its launcher and its stage still fit 80 columns.
    head = f"hwcheck rank {seen.get('rank')}/{seen.get('world_size')} ({launcher_text(seen)})"
    outcome = seen.get("outcome")
    if outcome == "ok":
        return f"{head}: the collectives ran; rank 0 prints the report."
    if outcome == "skipped":
        return f"{head}: not checked ({seen.get('error')})."
    where = stage_text(str(seen.get("stage") or ""), str(seen.get("framework") or ""))
    verb = "hung in" if outcome == "timeout" else "failed in"
    return f"{head}: {verb} {where or 'starting'}."
