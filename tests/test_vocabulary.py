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
        "run: python -m hwcheck.engine.vocabulary --markdown, and paste it into docs/rules.md"
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
