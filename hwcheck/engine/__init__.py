"""The rules engine: facts in, a Recommendation out, all advice read from rules/.

The work lives in named modules: context.py (facts to rule variables), rules.py
(loading and checking rule files), evaluate.py (applying them); this package
re-exports their public names.
"""

from hwcheck.engine.context import build_context
from hwcheck.engine.evaluate import FUNCTIONS, evaluate, recommend
from hwcheck.engine.rules import Rule, RuleSet, load_rules
from hwcheck.recommendation import FRAMEWORKS, PREFERENCES

__all__ = [
    "FRAMEWORKS",
    "FUNCTIONS",
    "PREFERENCES",
    "Rule",
    "RuleSet",
    "build_context",
    "evaluate",
    "load_rules",
    "recommend",
]
