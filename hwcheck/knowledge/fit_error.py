"""Reader for rules/knowledge/fit_error.toml: how far fit's estimate has fallen under the peak real
training steps allocated, per model family and activation checkpointing."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def measured_error(model_type: str | None, checkpointing: bool) -> dict[str, Any] | None:
    """The family's row (worst_error, measurements, source, date, worst), None where none was measured."""
    if not model_type:
        return None
    for row in load("fit_error")["family"]:
        if row["model_type"] == model_type and row["checkpointing"] == checkpointing:
            return dict(row)
    return None


def families() -> list[dict[str, Any]]:
    """Every measured family's row, as the table lists them."""
    return [dict(row) for row in load("fit_error")["family"]]
