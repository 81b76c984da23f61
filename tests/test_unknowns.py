"""Known, absent, unknown: an error rests only on facts hwcheck read.

For every shipped error rule, a test machine that fires it (a profile, a fixture facts file or
a corpus case) is taken, the facts that decide the rule (its `decided_by`) are made unknown one
at a time, and the result must be a warning that names what could not be read and the command
that settles it, never the error; or, where the error holds whatever the fact is, still the
error. A new error rule is covered by the same test, and fails it until it names its deciding
facts and some test machine fires it.
"""

from __future__ import annotations

import copy
import json
import tomllib
from functools import cache
from typing import Any, NamedTuple

import pytest
from corpus.score import load_cases
from profiles import PROFILES

from conftest import FIXTURES, ROOT
from hwcheck import knowledge
from hwcheck.engine.rules import load_rules
from hwcheck.engine.unknowns import candidates, is_unknown, unknown_facts, with_value
from hwcheck.facts import load_facts
from hwcheck.recommendation import recommend

ERROR_RULES = sorted(
    (rule for rule in load_rules().finding_rules if rule.severity == "error"), key=lambda rule: rule.id
)


class Machine(NamedTuple):
    name: str
    facts: dict[str, Any]
    framework: str | None
    prefer: str | None
    probes: dict[str, dict[str, Any]] | None


@cache
def machines() -> tuple[Machine, ...]:
    """Every test machine: the profiles, the fixture facts files and the corpus cases."""
    found = [Machine(p.name, p.facts, p.framework, p.prefer, p.probes) for p in PROFILES]
    for path in sorted((FIXTURES / "facts").glob("*.json")):
        found.append(Machine(path.name, json.loads(path.read_text()), None, None, None))
    for case in load_cases():
        found.append(Machine(case.name, load_facts(case.facts_path), case.hwcheck_framework, None, None))
    return tuple(found)


def advise(machine: Machine, facts: dict[str, Any] | None = None):
    return recommend(
        machine.facts if facts is None else facts,
        probes=machine.probes,
        framework=machine.framework,
        prefer=machine.prefer,
    )


@cache
def first_firing() -> dict[str, Machine]:
    """Error rule id -> the first test machine on which it is an error (each machine advised once)."""
    found: dict[str, Machine] = {}
    for machine in machines():
        for finding in advise(machine).findings:
            if finding.severity == "error":
                found.setdefault(finding.id, machine)
    return found


def firing(rule_id: str) -> Machine | None:
    """The first test machine on which the rule is an error."""
    return first_firing().get(rule_id)


def forget(facts: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """A copy of `facts` where the fact of `row` is unknown: its key (and the facts that would settle
    it, `unless` and the name of `unless_named`) taken out wherever it is."""
    document = _without(copy.deepcopy(facts), row["path"])
    if row.get("unless_named"):
        # A table gives the fact from the holder's name (an AMD GPU's marketing name): take that too.
        document = _without(document, row["path"].rsplit(".", 1)[0] + ".name")
    return _without(document, row["unless"]) if row.get("unless") else document


def _without(document: dict[str, Any], path: str) -> dict[str, Any]:
    *steps, key = path.split(".")
    nodes: list[Any] = [document]
    for step in steps:
        name = step.removesuffix("[]")
        nodes = [
            item
            for node in nodes
            if isinstance(node, dict)
            for item in (node.get(name) if step.endswith("[]") else [node.get(name)]) or []
            if isinstance(item, dict)
        ]
    for node in nodes:
        node.pop(key, None)
    return document


def test_every_error_rule_says_which_facts_decide_it():
    for path in sorted((ROOT / "rules" / "policy").glob("*.toml")):
        for entry in tomllib.loads(path.read_text()).get("rule", []):
            if entry.get("severity") != "error":
                continue
            assert "decided_by" in entry, f"{path.name}: rule {entry['id']} names no decided_by"
            for fact in entry["decided_by"]:
                assert knowledge.unknowable_fact(fact), f"{entry['id']}: {fact} is not in unknowns.toml"


def test_every_unknowable_fact_says_what_and_the_command_and_its_source():
    for row in knowledge.unknowable_facts():
        assert row["what"] and row["run"] and candidates(row), row["path"]
        assert row["source"], row["path"]


@pytest.mark.parametrize("rule", [r for r in ERROR_RULES if r.decided_by], ids=lambda rule: rule.id)
def test_an_error_whose_deciding_fact_is_unknown_is_a_warning_that_says_what_to_run(rule):
    machine = firing(rule.id)
    assert machine is not None, f"no test machine fires {rule.id}: add a profile or a corpus case"
    warned, certain = [], []
    for path in rule.decided_by:
        row = knowledge.unknowable_fact(path)
        if not _holders_known(machine.facts, row):
            continue  # the machine does not state this fact: nothing to take away
        facts = forget(machine.facts, row)
        assert is_unknown(facts, row)
        recommendation = advise(machine, facts)
        errors = [f for f in recommendation.findings if f.id == rule.id and f.severity == "error"]
        warnings = [f for f in recommendation.findings if f.id == rule.id and f.severity == "warning"]
        if errors:
            # Still an error: only right when it holds whatever the unknown fact is.
            for value in candidates(row):
                world = advise(machine, with_value(facts, row, value))
                assert any(f.id == rule.id and f.severity == "error" for f in world.findings), (
                    f"{rule.id} on {machine.name} is an error though {path} is unknown, "
                    f"and with {path} = {value!r} it does not hold"
                )
            certain.append(path)
            continue
        if path not in unknown_facts(facts, recommendation.backend):
            continue  # the fact does not matter to the runtime advised (another framework's)
        assert warnings, f"{rule.id} on {machine.name}: with {path} unknown, no warning"
        assert row["run"] in (warnings[0].remedy or ""), warnings[0]
        assert "could not be read" in warnings[0].message
        warned.append(path)
    assert warned or certain, (
        f"{rule.id} on {machine.name}: none of its deciding facts ({', '.join(rule.decided_by)}) "
        "is stated there, so nothing showed what an unknown one does"
    )


def _holders_known(facts: dict[str, Any], row: dict[str, Any]) -> bool:
    # Known: the section is there and the fact is set in it (is_unknown says the contrary).
    return not is_unknown(facts, row) and is_unknown(forget(facts, row), row)


def test_a_torch_without_a_version_is_installed_and_its_rocm_build_counts():
    facts = load_facts(ROOT / "tests" / "corpus" / "cases" / "healthy-amd-rx7900xtx-torch23-rocm60.json")
    del facts["frameworks"]["torch"]["version"]
    recommendation = recommend(facts, framework="torch")
    assert recommendation.device == "gpu" and recommendation.runtime == "rocm"
    assert not any(f.id == "framework-not-installed" for f in recommendation.findings)


def test_a_cuda_torch_of_unknown_cuda_on_an_h100_is_a_gpu_machine_and_fp8_is_unknown():
    facts = {
        "schema_version": 1,
        "gpus": [
            {"index": 0, "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
        ],
        "nvidia_driver": {"version": "550.54.15", "cuda": "12.4"},
        "frameworks": {"torch": {"version": "2.5.1", "cuda_build": True}},
    }
    recommendation = recommend(facts, framework="torch")
    assert (recommendation.policy, recommendation.device) == ("mixed_bfloat16", "gpu")
    assert not recommendation.has_errors
    assert recommendation.fp8["available"] is None
    assert "torch.version.cuda" in recommendation.fp8["reason"]


def test_an_amd_gpu_known_by_name_has_its_gfx_target_known():
    row = knowledge.unknowable_fact("gpus[].arch")
    named = {"schema_version": 1, "gpus": [{"index": 0, "vendor": "amd", "name": "AMD Radeon RX 6600"}]}
    assert not is_unknown(named, row)
    unlisted = {"schema_version": 1, "gpus": [{"index": 0, "vendor": "amd", "name": "AMD Radeon RX 6400"}]}
    assert is_unknown(unlisted, row)
