"""The declared rule vocabulary (rules/vocabulary.toml) says exactly what build_context makes.

Checked over every replayed machine in tests/fixtures/facts (see its README for each one's
source), for each framework the advice can be for, and over an empty machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

import pytest

from conftest import FIXTURES, ROOT
from hwcheck.base.errors import InputError
from hwcheck.engine import vocabulary
from hwcheck.engine.context import build_context
from hwcheck.engine.rules import check_variables, load_rules

REPLAYS = sorted((FIXTURES / "facts").glob("*.json"))
FRAMEWORKS = (None, "tensorflow", "keras", "torch", "jax")


@cache
def replayed(path: str, framework: str | None) -> tuple[tuple[str, ...], frozenset[str]]:
    facts = json.loads(open(path, encoding="utf-8").read()) if path else {}
    found, seen = vocabulary.problems(build_context(facts, framework=framework))
    return tuple(found), frozenset(seen)


@pytest.mark.parametrize("path", [*REPLAYS, ""], ids=[*(path.name for path in REPLAYS), "empty"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_variable_a_replay_makes_is_declared_with_its_type(path, framework):
    found, _ = replayed(str(path), framework)
    assert not found


def test_every_declared_variable_is_made_on_some_replay():
    seen: set[str] = set()
    for path in [*REPLAYS, ""]:
        for framework in FRAMEWORKS:
            seen |= replayed(str(path), framework)[1]
    assert set(vocabulary.variables("context")) - seen == set()


def test_the_check_catches_an_undeclared_variable_and_a_wrong_type():
    context = build_context({})
    context["gpu"] = {**context["gpu"], "count": "8", "made_up": 1}
    found, _ = vocabulary.problems(context)
    assert "gpu.count: string, declared int" in found
    assert "gpu.made_up: not declared (int)" in found


def test_the_variable_table_in_docs_rules_md_is_the_generated_one():
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert vocabulary.table_in(page) == vocabulary.markdown(), (
        "run: python -m hwcheck.engine.vocabulary --update docs/rules.md"
    )


def test_the_table_is_printed_by_the_module():
    done = subprocess.run(
        [sys.executable, "-m", "hwcheck.engine.vocabulary", "--markdown"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert done.stdout == vocabulary.markdown()
    assert "`driver.newest_tensorflow` (string or null)" in done.stdout
    assert "`accelerators.count` (int)" in done.stdout


def test_update_rewrites_only_the_table(tmp_path):
    page = tmp_path / "rules.md"
    stale = vocabulary.markdown().replace("(int)", "(number)")
    page.write_text(f"# Rules\n\nBefore.\n\n{stale}\nAfter.\n", encoding="utf-8")
    assert vocabulary.main(["--update", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == f"# Rules\n\nBefore.\n\n{vocabulary.markdown()}\nAfter.\n"
    (tmp_path / "plain.md").write_text("no table\n", encoding="utf-8")
    assert vocabulary.main(["--update", str(tmp_path / "plain.md")]) == 2


def test_loading_rules_never_builds_a_context():
    # The declaration replaces evaluating an empty machine: rules.py does not import context.py.
    code = (
        "import sys; from hwcheck.engine.rules import load_rules, check_variables; "
        "check_variables(load_rules()); print('hwcheck.engine.context' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    "condition",
    [
        "accelerators.count > 0",
        "driver.newest_tensorflow != null",
        "probes.cpu.status == 'ok'",
        "env.HOME != ''",
    ],
)
def test_a_site_rule_reading_a_declared_variable_loads(tmp_path, condition):
    site = tmp_path / "site.toml"
    site.write_text(f'[[rule]]\nid = "site-x"\nwhen = "{condition}"\nmessage = "m"\nseverity = "info"\n')
    check_variables(load_rules([site]))


@pytest.mark.parametrize(
    ("condition", "problem"),
    [
        ("probes.gpux.status == 'ok'", "unknown variable probes.gpux"),
        ("measure.cpu.verdictt == ''", "unknown variable measure.cpu.verdictt"),
        ("gpu.count.value > 0", "gpu.count is a number, with no fields"),
    ],
)
def test_a_site_rule_reading_an_undeclared_variable_is_refused(tmp_path, condition, problem):
    site = tmp_path / "site.toml"
    site.write_text(f'[[rule]]\nid = "site-x"\nwhen = "{condition}"\nmessage = "m"\nseverity = "info"\n')
    with pytest.raises(InputError, match=problem):
        load_rules([site])


def test_the_declaration_is_well_formed():
    names = [variable.name for _, _, members in vocabulary.groups() for variable in members]
    assert len(names) == len(set(names)), "a variable is declared twice"
    for meaning, _, members in vocabulary.groups():
        assert meaning.strip() and members
        for variable in members:
            assert variable.type in (*vocabulary.EMPTY, "map"), variable
            assert variable.made_by in ("context", "derive", "decision"), variable
            assert variable.type == "map" or (variable.keys is None and variable.values is None), variable
            if vocabulary.EACH in variable.name:  # a field under a map's keys: the map names them
                parent = variable.name.split(f".{vocabulary.EACH}", 1)[0]
                assert vocabulary.variables()[parent].keys, variable


def test_the_decision_finding_rules_read_is_the_declared_one(tmp_path):
    # A site finding rule holds only when the decision has exactly the declared fields, and its
    # message reads every one of them (a missing one would be a rule-error warning instead).
    from hwcheck.recommendation import recommend

    declared = sorted(vocabulary.shape("decision")["decision"])
    types = vocabulary.variables("decision")
    message = "|".join(
        f"{{size(decision.{name})}}"
        if types[f"decision.{name}"].type == "list of string"
        else f"{{decision.{name}}}"
        for name in declared
    )
    site = tmp_path / "site.toml"
    site.write_text(
        f'[[rule]]\nid = "site-decision"\nwhen = "size(decision) == {len(declared)}"\n'
        f'message = "{message}"\nseverity = "info"\n'
    )
    facts = json.loads((FIXTURES / "facts" / "a100-sxm4x4-tf216.json").read_text(encoding="utf-8"))
    findings = {finding.id: finding.message for finding in recommend(facts, rule_files=[site]).findings}
    assert "rule-error" not in findings
    assert findings["site-decision"].split("|")[declared.index("policy")] == "mixed_bfloat16"
