"""What one probe returns: its status, its part of the facts, and why."""

from __future__ import annotations

import threading
import time

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


OK, ABSENT, ERROR, TIMEOUT = "ok", "absent", "error", "timeout"


# NamedTuples rather than dataclasses: importing dataclasses costs doctor ~7 ms.
class ProbeResult(NamedTuple):
    """One probe's part of the facts and how the probe went."""

    status: str
    facts: dict[str, Any] = {}  # shared default: read, never mutated
    reason: str | None = None
    seconds: float | None = None

    def status_dict(self) -> dict[str, Any]:
        """The probe's entry in a report's `probes` map."""
        seconds = None if self.seconds is None else round(self.seconds, 4)
        return {"status": self.status, "reason": self.reason, "seconds": seconds}


# A probe that reads many things (100,000 PCI devices) stops at this share of its deadline and
# answers with what it has, marked partial, rather than be cut off at the deadline with nothing.
PARTIAL_SHARE = 0.8
# Per worker thread: when its probe should answer (time.perf_counter()), and what it left unread.
_probe_clock = threading.local()


def start_clock(answer_by: float | None) -> None:
    """Start this thread's next probe: it should answer by `answer_by` (None: no deadline)."""
    _probe_clock.answer_by = answer_by
    _probe_clock.unread = []


def out_of_time() -> bool:
    """Whether this thread's probe has used its share of the deadline: time to answer."""
    answer_by = getattr(_probe_clock, "answer_by", None)
    return answer_by is not None and time.perf_counter() >= answer_by


def left_unread(what: str) -> None:
    """Note that this thread's probe stopped short at its deadline, and what it left unread."""
    unread = getattr(_probe_clock, "unread", None)
    if unread is None:
        unread = _probe_clock.unread = []
    unread.append(what)


def as_partial(result: ProbeResult) -> ProbeResult:
    """`result` marked partial (status timeout, its facts kept) when its probe stopped short."""
    unread = getattr(_probe_clock, "unread", None) or []
    _probe_clock.unread = []
    if not unread or result.status not in (OK, ABSENT):
        return result
    # What it did not read may hold what it looked for: absent becomes unknown, never a fact.
    reason = "partial: the deadline came before " + "; ".join(unread)
    return result._replace(status=TIMEOUT, reason=f"{reason}; {result.reason}" if result.reason else reason)
