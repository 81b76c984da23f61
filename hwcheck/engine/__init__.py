"""The rules engine: facts in, the decision's fields out, all advice read from rules/.

The work lives in named modules: context.py (facts to rule variables), rules.py
(loading and checking rule files), evaluate.py (applying them), memo.py (remembering
the decision for a context in the private cache); this package re-exports their
public names. hwcheck.recommendation turns the fields into a Recommendation.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.engine.cel import FUNCTIONS
    from hwcheck.engine.context import build_context
    from hwcheck.engine.evaluate import evaluate
    from hwcheck.engine.memo import decide
    from hwcheck.engine.rules import Rule, RuleSet, load_rules

__all__ = [
    "FUNCTIONS",
    "Rule",
    "RuleSet",
    "build_context",
    "decide",
    "evaluate",
    "load_rules",
]

# Each name is imported on first use: doctor with a remembered decision never needs the
# rules loader or evaluate (and the CEL they bring), and importing them costs ~8 ms.
_HOMES = {
    "FUNCTIONS": "cel",
    "Rule": "rules",
    "RuleSet": "rules",
    "build_context": "context",
    "decide": "memo",
    "evaluate": "evaluate",
    "load_rules": "rules",
}


def __getattr__(name: str) -> Any:
    """The re-exported name `name`, imported from its module now."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"hwcheck.engine.{home}"), name)
