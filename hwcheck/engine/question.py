"""What the engine is asked about one machine: the record memo.advise, evaluate.evaluate_facts
and recommendation.recommend pass along, so each names its parts the same way."""

from __future__ import annotations

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import Any


class Question(NamedTuple):
    """One machine's facts, how its probes went, whom and what the advice is for, the site rules."""

    facts: dict[str, Any]
    probes: dict[str, dict[str, Any]] | None = None  # probe name -> {status, reason}; None: not given
    framework: str | None = None  # what the training script uses; None: picked from the installed
    prefer: str | None = None  # "float16" or "bfloat16" when the user prefers one
    rule_files: tuple[str | os.PathLike[str], ...] = ()  # site rule files, after the shipped ones
