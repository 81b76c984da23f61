"""The doctor report's `recipes` line: which low-precision recipes run here (fp8.recipes)."""

from __future__ import annotations

from hwcheck.knowledge.stacks import low_precision_recipes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WORDS = {True: "yes", False: "no", None: "unknown"}


def recipes_line(recipes: dict[str, Any]) -> str:
    """One line: each recipe by its name and yes, no or unknown (the reasons are in the JSON report)."""
    labels = {row["id"]: row["label"] for row in low_precision_recipes()}
    parts = [
        f"{labels.get(name, name)} {WORDS.get(row.get('available'), 'unknown')}"
        for name, row in recipes.items()
        if isinstance(row, dict)
    ]
    return ", ".join(parts) + " (why: hwcheck doctor --json, recommendation.fp8.recipes)"
