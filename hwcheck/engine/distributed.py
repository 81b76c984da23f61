"""Rule variables of what `doctor --verify --distributed` observed (facts.distributed): one
all-reduce over every device and one peer-to-peer send per device pair, with the framework's
own backend. rules/policy/distributed.toml says what a failure or a hang means.
"""

from __future__ import annotations

from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(facts: dict[str, Any]) -> dict[str, Any]:
    """The `distributed` variables: applies (a check was recorded), its outcome and the failing pairs."""
    seen = section(facts, "distributed")
    all_reduce = section(seen, "all_reduce")
    pairs = [pair for pair in seen.get("pairs") or [] if isinstance(pair, dict)]
    failed = [_pair_text(pair) for pair in pairs if pair.get("ok") is False]
    unreached = [_pair_text(pair) for pair in pairs if pair.get("ok") is None]
    outcome = seen.get("outcome") if isinstance(seen.get("outcome"), str) else ""
    return {
        "applies": bool(seen),
        "outcome": outcome,
        "ok": outcome == "ok",
        "backend": str(seen.get("backend") or ""),
        "device": str(seen.get("device") or ""),
        "world_size": seen.get("world_size") if isinstance(seen.get("world_size"), int) else 0,
        "stage": str(seen.get("stage") or ""),
        "phase": phase(str(seen.get("stage") or "")),
        "stage_text": stage_text(str(seen.get("stage") or ""), str(seen.get("framework") or "")),
        "error": str(seen.get("error") or ""),
        "all_reduce_ok": all_reduce.get("ok") is True,
        "all_reduce_seconds": all_reduce.get("seconds")
        if isinstance(all_reduce.get("seconds"), float)
        else 0.0,
        "pairs_checked": len(pairs),
        "pairs_failed": failed,
        "pairs_failed_text": ", ".join(failed),
        "pairs_unreached": unreached,
        "pairs_unreached_text": ", ".join(unreached),
    }


# The child's stages (hwcheck/measure/distributed_child.py) by the phase of a distributed job
# they belong to: what a hang in each points at differs (a slow import is no network problem).
PHASES = {
    "start": "start",
    "import": "import",
    "init": "rendezvous",
    "all-reduce": "collective",
    "barrier": "collective",
}


def phase(stage: str) -> str:
    """The phase of a stage: start, import, rendezvous, collective (a pair's copy too); '' unknown."""
    if stage.startswith("pair "):
        return "collective"
    return PHASES.get(stage, "")


def stage_text(stage: str, framework: str) -> str:
    """The stage in words: "the import of torch", "the rendezvous (init_process_group)"..."""
    named = {
        "start": "starting the processes",
        "import": f"the import of {framework or 'the framework'}",
        "init": "the rendezvous (init_process_group)",
        "all-reduce": "the first collective (all-reduce)",
        "barrier": "the closing barrier",
    }
    if stage.startswith("pair "):
        return f"the peer-to-peer copy of ranks {stage.removeprefix('pair ')}"
    return named.get(stage, stage)


def _pair_text(pair: dict[str, Any]) -> str:
    devices = [str(device) for device in pair.get("devices") or []]
    ranks = [str(rank) for rank in pair.get("ranks") or []]
    named = " and ".join(devices) if len(devices) == 2 else " and ".join(f"rank {r}" for r in ranks)
    error = str(pair.get("error") or "")
    return f"{named} ({error})" if error else named
