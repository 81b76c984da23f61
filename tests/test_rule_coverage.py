"""Every shipped rule fires for at least one test machine: a rule no machine triggers is untested advice."""

from __future__ import annotations

import json

from corpus.score import advise, load_cases
from profiles import PROFILES
from verify_cases import cases as verify_cases

from conftest import FIXTURES
from hwcheck.engine.rules import load_rules
from hwcheck.recommendation import recommend


def fired_rule_ids() -> set[str]:
    """The ids of every policy rule chosen and finding raised for the profiles, the fixture facts files,
    the corpus of machines from public issues (tests/corpus) and the replayed verifications."""
    recommendations = [
        recommend(profile.facts, probes=profile.probes, framework=profile.framework, prefer=profile.prefer)
        for profile in PROFILES
    ]
    for path in sorted((FIXTURES / "facts").glob("*.json")):
        recommendations.append(recommend(json.loads(path.read_text())))
    recommendations += [advise(case) for case in load_cases()]
    # What doctor --verify observed, replayed (tests/verify_cases.py).
    recommendations += [recommend(facts, framework=framework) for _, facts, framework, _ in verify_cases()]
    fired: set[str] = set()
    for recommendation in recommendations:
        fired.update(reason.id for reason in recommendation.reasons)
        fired.update(finding.id for finding in recommendation.findings)
        # A shipped rule that errors on a real machine is a bug, not a missing fact.
        assert "rule-error" not in fired, [f.message for f in recommendation.findings if f.id == "rule-error"]
    return fired


def test_every_shipped_rule_fires_for_some_test_machine():
    shipped = set(load_rules().rules)
    never = sorted(shipped - fired_rule_ids())
    assert not never, f"shipped rules no profile or fixture facts file fires: {', '.join(never)}"
