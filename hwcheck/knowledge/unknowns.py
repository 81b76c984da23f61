"""Facts an error may rest on and how to settle each when unknown: rules/knowledge/unknowns.toml [[fact]]."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def unknowable_facts() -> list[dict[str, Any]]:
    """Every [[fact]] row: path, what, run, values and the keys that say when it counts as unknown."""
    return [dict(row) for row in load("unknowns").get("fact", ())]


def unknowable_fact(path: str) -> dict[str, Any] | None:
    """The [[fact]] row of a facts path ("frameworks.torch.cuda"); None when the table has none."""
    return next((row for row in unknowable_facts() if row["path"] == path), None)
