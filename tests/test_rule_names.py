"""Site rules that read an unknown variable are rejected at load; rule errors at run time are findings."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.engine.cel import cel
from hwcheck.engine.names import ANY_KEY, variable_paths
from hwcheck.engine.rules import check_variables, load_rules
from hwcheck.recommendation import recommend

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")


@pytest.mark.parametrize(
    ("expression", "paths"),
    [
        ("gpu.count > 0", [("gpu", "count")]),
        ("'gpu.cout' + cpu.model", [("cpu", "model")]),  # a string literal is no variable
        ("cpu.model.startsWith('x') && size(gpu.names) > 0", [("cpu", "model"), ("gpu", "names")]),
        ("gpu.names.exists(n, n.contains('GeForce'))", [("gpu", "names")]),
        ("probes.exists(p, probes[p].status == 'timeout')", [("probes",), ("probes", ANY_KEY, "status")]),
        ("tf['version'] != null", [("tf", "version")]),
        ("m.all(k, v, k == v)", [("m",)]),  # the two-variable form binds both
        ("[1].exists(x, x > 0) && x > 1", [("x",)]),  # x is bound only inside the macro
        ("type(gpu.count) == int ? true : false", [("gpu", "count")]),
    ],
)
def test_variable_paths(expression, paths):
    assert list(variable_paths(expression)) == paths


def shipped_expressions() -> list[str]:
    ruleset = load_rules()
    expressions = [program.source for program, _ in ruleset.derive.values()]
    for rule in ruleset.rules.values():
        expressions.append(rule.when.source)
        for template in (rule.message, rule.remedy, *rule.why_not.values()):
            expressions += [
                part.expression for part in (template.parts if template else ()) if not isinstance(part, str)
            ]
    return expressions


def test_the_scan_finds_the_top_level_names_cel_reports_for_every_shipped_expression():
    for expression in shipped_expressions():
        roots = {path[0] for path in variable_paths(expression)}
        reported = set(cel().compile(expression).variables())
        assert roots <= reported, expression
        for name in reported - roots:  # only comprehension variables are left out
            assert re.search(rf"\(\s*{name}\s*,", expression), (expression, name)


def test_every_shipped_rule_reads_only_known_variables():
    check_variables(load_rules())  # origins=None: the shipped files too


SITE = '[[rule]]\nid = "site"\nseverity = "info"\nmessage = "m"\nwhen = "{when}"\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (SITE.format(when="gpu.cout > 0"), "rule site: unknown variable gpu.cout (did you mean gpu.count?)"),
        (
            SITE.format(when="cpu.model.vendor == ''"),
            "unknown variable cpu.model.vendor (cpu.model is a string",
        ),
        (
            SITE.format(when="derived.gpu_usabel"),
            "unknown variable derived.gpu_usabel (did you mean derived.gpu_usable?)",
        ),
        (
            SITE.format(when="probes.gpuu.status == 'ok'"),
            "unknown variable probes.gpuu (did you mean probes.gpu?)",
        ),
        (
            SITE.format(when="true").replace('"m"', '"{tf.verison}"'),
            "rule site: message: unknown variable tf.verison",
        ),
        (
            '[derive]\nmine = "gpu.count > derived.later"\nlater = "1"\n',
            "derive.mine: unknown variable derived.later",
        ),
        (
            '[[rule]]\nid = "p"\npolicy = "float32"\ndevice = "cpu"\npriority = 1\nmessage = "m"\n'
            "when = \"decision.device == 'cpu'\"\n",
            "rule p: unknown variable decision (only finding rules read the decision",
        ),
    ],
    ids=["field", "field-of-a-string", "derived", "probe", "placeholder", "derive-order", "decision"],
)
def test_unknown_variables_in_site_rules_are_one_line_errors(tmp_path, body, expected):
    site = tmp_path / "site.toml"
    site.write_text(body)
    with pytest.raises(InputError) as error:
        load_rules([site])
    assert str(error.value).startswith(f"{site}: ") and expected in str(error.value)


def test_site_rules_read_set_environment_variables_and_need_no_meta(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(SITE.format(when="'HWCHECK_SITE' in env && env.HWCHECK_SITE == '1'"))
    facts = json.loads(open(A100).read())
    assert "site" not in {f.id for f in recommend(facts, rule_files=[site]).findings}
    facts["environment"] = {"HWCHECK_SITE": "1"}
    assert "site" in {f.id for f in recommend(facts, rule_files=[site]).findings}


def test_a_condition_over_a_missing_fact_does_not_hold_silently(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(SITE.format(when="env.UNSET_VARIABLE == '1' || tf.version > 'x' || driver.cuda > 1"))
    recommendation = recommend({"schema_version": 1}, rule_files=[site])
    assert not {"site", "rule-error"} & {f.id for f in recommendation.findings}


@pytest.mark.parametrize(
    ("when", "detail"),
    [("cpu.model > 1", "No such overload"), ("gpu.count", "its condition gave 4, not true or false")],
)
def test_a_failing_site_rule_is_a_rule_error_warning_and_keeps_the_exit_status(tmp_path, when, detail):
    site = tmp_path / "site.toml"
    site.write_text(SITE.format(when=when))
    recommendation = recommend(json.loads(open(A100).read()), rule_files=[site])
    errors = [f for f in recommendation.findings if f.id == "rule-error"]
    assert len(errors) == 1 and errors[0].severity == "warning"
    assert errors[0].message.startswith(f"{site}: rule site: ") and detail in errors[0].message
    assert not recommendation.has_errors
    plain = run_hwcheck("doctor", "--facts", A100)
    with_rule = run_hwcheck("doctor", "--json", "--facts", A100, "--rules", str(site))
    assert with_rule.returncode == plain.returncode == 0
    assert "rule-error" in {f["id"] for f in json.loads(with_rule.stdout)["recommendation"]["findings"]}


def test_a_failing_placeholder_reads_unknown_and_is_reported(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(SITE.format(when="true").replace('"m"', '"model {cpu.model + 1}"'))
    recommendation = recommend(json.loads(open(A100).read()), rule_files=[site])
    assert next(f for f in recommendation.findings if f.id == "site").message == "model unknown"
    assert any("rule site: message" in f.message for f in recommendation.findings if f.id == "rule-error")


def test_a_shipped_file_still_needs_its_meta_title(tmp_path, monkeypatch):
    shipped = tmp_path / "policy.toml"
    shipped.write_text(
        '[[rule]]\nid = "x"\npolicy = "float32"\ndevice = "cpu"\npriority = 0\nwhen = "true"\nmessage = "m"\n'
    )
    monkeypatch.setattr("hwcheck.engine.rules.shipped_rule_files", lambda: [shipped])
    with pytest.raises(InputError, match="meta.title: a shipped rules file needs"):
        load_rules()


# --- issue 21: functions are checked at load like variables ------------------------------


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("versoin_less(tf.version, '2.16')", "unknown function versoin_less (did you mean version_less?)"),
        ("cpu.model.startswith('Intel')", "unknown function startswith (did you mean startsWith?)"),
        ("gpu.names.exist(n, n == 'x')", "unknown function exist (did you mean exists?)"),
        ("lowerAscii(cpu.model) == 'x'", "unknown function lowerAscii"),
    ],
)
def test_a_site_rule_calling_an_unknown_function_is_refused_at_load(tmp_path, when, expected):
    rules = tmp_path / "site.toml"
    rules.write_text(
        f'[[rule]]\nid = "site-typo"\nseverity = "warning"\nwhen = "{when}"\nmessage = "m"\nremedy = "r"\n'
    )
    facts = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")
    result = run_hwcheck("doctor", "--facts", facts, "--rules", str(rules))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"hwcheck: error: {rules}: rule site-typo: {expected}\n"


def test_a_placeholder_calling_an_unknown_function_is_refused(tmp_path):
    rules = tmp_path / "site.toml"
    rules.write_text(
        '[[rule]]\nid = "site-placeholder"\nseverity = "info"\nwhen = "true"\n'
        'message = "{majr(tf.version)}"\nremedy = "r"\n'
    )
    with pytest.raises(InputError, match=r"site-placeholder.*unknown function majr \(did you mean major\?\)"):
        load_rules([rules])


def test_every_function_the_shipped_rules_call_is_known():
    from hwcheck.engine.cel import FUNCTIONS
    from hwcheck.engine.names import CEL_FUNCTIONS, unknown_function
    from hwcheck.engine.rules import expressions

    known = CEL_FUNCTIONS | set(FUNCTIONS)
    assert [
        (what, problem)
        for expression, _, what in expressions(load_rules())
        if (problem := unknown_function(expression, known))
    ] == []
    for name in CEL_FUNCTIONS - {"has", "timestamp", "duration", "type", "dyn"}:
        # Each listed name is one the extension evaluates (an unknown one says "Undefined").
        with pytest.raises(Exception) as caught:
            cel.evaluate(f"{name}(1, 2, 3, 4, 5)", {})
        assert "Undefined variable or function" not in str(caught.value)
