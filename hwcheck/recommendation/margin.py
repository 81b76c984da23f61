"""The margin fit's verdict keeps: the share of a GPU's memory the estimate (its headroom left out)
may fill and still be called "yes".

For a model family whose estimate hwcheck has measured against real peaks
(rules/knowledge/fit_error.toml), the estimate grown by the largest under-estimate seen must fit
the memory; the published out-of-memory study's share (rules/knowledge/memory.toml, Fujii et al.
2024: no run out of memory below 80 % of the GPU's memory by their estimate) is the ceiling, and
the share for every family hwcheck has not measured and for a bare parameter count.
"""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge


def share_allowed(worst_error: float, ceiling: float) -> float:
    """The largest share an estimate at most -`worst_error` under the real peak may fill: the
    estimate times (1 + that under-estimate) within the memory, never above `ceiling`."""
    under = max(-worst_error, 0.0)
    return min(ceiling, 1 / (1 + under))


def margin(model_type: str | None, checkpointing: bool) -> dict[str, Any]:
    """The safe share for a model of `model_type` (None: a parameter count), where it comes from
    ("measured" or "study"), the study's share and the family's measurement where there is one."""
    runtime = knowledge.load("memory")["runtime"]
    ceiling = float(runtime["safe_share"])
    study = {
        "share": ceiling,
        "runs": runtime["safe_share_runs"],
        "cited": runtime["safe_share_cited"],
        "reference": runtime["safe_share_source"],
    }
    row = knowledge.fit_measured_error(model_type, checkpointing)
    measured = None
    share, source = ceiling, "study"
    if row is not None:
        allowed = share_allowed(row["worst_error"], 1.0)  # what the measurement alone allows
        measured = {
            "worst_error": row["worst_error"],
            "share": round(allowed, 4),
            "measurements": row["measurements"],
            "file": row["source"],
            "date": row["date"],
            "worst": row["worst"],
        }
        share = share_allowed(row["worst_error"], ceiling)
        source = "measured" if share < ceiling else "study"
    return {
        "safe_share": share,
        "source": source,
        "family": model_type,
        "checkpointing": checkpointing,
        "measured": measured,
        "study": study,
    }
