"""hwcheck against the corpus of real machines (tests/corpus): each case must get the right answer.

The cases hwcheck gets wrong today are listed in KNOWN_WRONG and run as strict expected
failures: a case that starts passing fails the suite until it is taken off the list.
"""

from __future__ import annotations

import json

import pytest
from corpus.score import CASES_DIR, advise, judge, load_cases, totals

from hwcheck.facts import load_facts

# Cases hwcheck answers wrongly today, with the class of knowledge it lacks.
KNOWN_WRONG: dict[str, str] = {}

CASES = load_cases()
NAMES = [case.name for case in CASES]


def _param(case):
    marks = ()
    if case.name in KNOWN_WRONG:
        marks = (pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[case.name]),)
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_case_gets_the_right_answer(case, monkeypatch):
    monkeypatch.delenv("HWCHECK_RULES", raising=False)
    verdict = judge(case, advise(case))
    assert verdict.right, f"{case.name} ({case.source}): {'; '.join(verdict.problems)}"


def test_every_case_has_one_facts_file_and_one_answer():
    files = sorted(path.stem for path in CASES_DIR.glob("*.json"))
    assert files == sorted(NAMES)
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_facts_file_is_valid(case):
    # load_facts checks the schema; the raw JSON must say something about the machine.
    assert load_facts(case.facts_path)["schema_version"] == 1
    document = json.loads(case.facts_path.read_text())
    assert set(document) - {"schema_version"}, f"{case.name} has no facts"


def test_known_wrong_names_real_cases():
    assert set(KNOWN_WRONG) <= set(NAMES)


def test_the_corpus_covers_what_the_issue_asks():
    assert len(CASES) >= 30
    assert sum(case.healthy for case in CASES) >= 10
    assert {"tensorflow", "torch", "jax", "keras"} <= {case.framework for case in CASES}
    facts = [json.loads(case.facts_path.read_text()) for case in CASES]
    systems = {(doc.get("os") or {}).get("system") for doc in facts}
    assert {"Linux", "Windows"} <= systems
    assert any((doc.get("os") or {}).get("wsl") for doc in facts)


def test_totals_count_false_alarms_and_caught_errors():
    # Score a healthy case and a failing one against made-up answers to see the totals move.
    from hwcheck.recommendation import Finding, Recommendation

    healthy = next(case for case in CASES if case.healthy)
    failing = next(case for case in CASES if case.exit_status == 1)
    alarm = Recommendation("float32", "cpu", False, findings=(Finding("x", "error", "boom"),))
    quiet = Recommendation("float32", "cpu", False)
    result = totals([judge(healthy, alarm), judge(failing, quiet)])
    assert result.false_alarms == 1 and result.healthy == 1
    assert result.errors == 1 and result.errors_caught == 0 and result.right == 0
