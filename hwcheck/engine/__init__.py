"""The rules engine: facts in, the decision's fields out, all advice read from rules/.

The work lives in named modules: context.py (facts to rule variables), rules.py
(loading and checking rule files), evaluate.py (applying them); this package
re-exports their public names. hwcheck.recommendation turns the fields into a Recommendation.
"""

from hwcheck.engine.context import build_context
from hwcheck.engine.evaluate import FUNCTIONS, evaluate
from hwcheck.engine.rules import Rule, RuleSet, load_rules

__all__ = [
    "FUNCTIONS",
    "Rule",
    "RuleSet",
    "build_context",
    "evaluate",
    "load_rules",
]
