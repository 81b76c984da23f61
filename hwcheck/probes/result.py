"""What one probe returns: its status, its part of the facts, and why."""

from __future__ import annotations

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
