"""The rules engine: site rules, overrides, malformed rule files, advice living in data."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.engine.rules import load_rules, shipped_rule_files
from hwcheck.recommendation import recommend

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")
SITE_RULE = """
[meta]
title = "Site policy"

[[rule]]
id = "site-no-consumer-gpus"
severity = "error"
when = "gpu.names.exists(n, n.contains('GeForce'))"
message = "Consumer GPUs are not allowed for training here: {gpu.models}."
remedy = "Use the A100 partition."

[[rule]]
id = "gpu-bf16"
when = "derived.gpu_usable && gpu.bf16"
policy = "mixed_float16"
device = "gpu"
priority = 80
message = "Site policy: all models are validated in float16 ({gpu.weakest})."
"""


def geforce_facts() -> dict:
    facts = json.loads((FIXTURES / "facts/a100-sxm4x4-tf216.json").read_text())
    facts["gpus"] = [{"name": "NVIDIA GeForce RTX 3090"}]
    return facts


def test_every_shipped_rules_file_validates_against_the_schema():
    from hwcheck.base.tables import read_toml
    from hwcheck.facts import schema_problem

    files = shipped_rule_files()
    assert {path.name for path in files} >= {"policy.toml", "findings.toml"}
    for path in files:
        assert schema_problem(read_toml(path), "rules") is None, path.name


def test_every_shipped_rule_has_a_message_and_policy_rules_explain_alternatives():
    rules = load_rules().rules.values()
    for rule in rules:
        assert rule.message.source.strip()
        for template in (rule.message, rule.remedy, *rule.why_not.values()):
            if template is not None:
                template.compile_all()  # raises InputError on a bad placeholder
        if rule.decides_policy and rule.id not in ("gpu-unknown-capability",):
            assert len(rule.why_not) >= 2 or rule.policy == "float32", rule.id


def test_site_rule_adds_a_finding_and_overrides_by_id(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(SITE_RULE)
    recommendation = recommend(geforce_facts(), rule_files=[site])
    assert recommendation.policy == "mixed_float16"  # the overridden gpu-bf16
    assert recommendation.reasons[0].message.startswith("Site policy")
    assert recommendation.has_errors
    assert "site-no-consumer-gpus" in {finding.id for finding in recommendation.findings}


def test_site_rules_from_the_environment_and_the_command_line(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(SITE_RULE)
    from_env = run_hwcheck("doctor", "--json", "--facts", A100, env={"HWCHECK_RULES": str(site)})
    assert json.loads(from_env.stdout)["recommendation"]["policy"] == "mixed_float16"
    from_flag = run_hwcheck("doctor", "--json", "--facts", A100, "--rules", str(site))
    assert json.loads(from_flag.stdout)["recommendation"]["policy"] == "mixed_float16"


def test_a_site_file_can_switch_a_shipped_rule_off(tmp_path):
    site = tmp_path / "quiet.toml"
    site.write_text('[meta]\ntitle = "quiet"\n[[rule]]\nid = "gpu-xla"\ndisabled = true\n')
    ids = {f.id for f in recommend(json.loads(open(A100).read()), rule_files=[site]).findings}
    assert "gpu-xla" not in ids and "gpu-tensor-core-shapes" in ids


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r1"\nseverity = "info"\nwhen = "gpu.count >"\n'
            'message = "m"\n',
            "rule r1: condition is not valid CEL",
        ),
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r2"\nseverity = "info"\nwhen = "true"\n'
            'message = "count {gpu.count +}"\n',
            "rule r2: message placeholder {gpu.count +}",
        ),
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r3"\nseverity = "fatal"\nwhen = "true"\nmessage = "m"\n',
            'rule r3: severity: "fatal" is not one of "info", "warning" or "error"',
        ),
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r4"\nseverity = "info"\nwhen = "true"\n'
            'message = "m"\nremdy = "typo"\n',
            "rule r4: unknown key ('remdy' was unexpected)",
        ),
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r5"\nwhen = "true"\nmessage = "m"\n',
            "rule r5: a rule needs when, message and either policy",
        ),
        (
            '[meta]\ntitle = "x"\n[[rule]]\nid = "r6"\ndisabled = true\n',
            "rule r6: disables a rule that does not exist",
        ),
        ('[meta\ntitle = "x"\n', "malformed TOML"),
        (
            '[[rule]]\nid = "r7"\nseverity = "info"\nwhen = "gpu.cout > 0"\nmessage = "m"\n',
            "rule r7: unknown variable gpu.cout (did you mean gpu.count?)",
        ),
    ],
    ids=["cel", "placeholder", "severity", "typo-key", "no-kind", "disable-unknown", "toml", "typo-variable"],
)
def test_malformed_site_rules_exit_2_naming_file_and_rule(tmp_path, body, expected):
    site = tmp_path / "site.toml"
    site.write_text(body)
    with pytest.raises(InputError) as error:
        load_rules([site])
    assert str(site) in str(error.value) and expected in str(error.value)
    result = run_hwcheck("doctor", "--facts", A100, "--rules", str(site))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"hwcheck: error: {error.value}"]


def test_missing_site_rules_file(tmp_path):
    result = run_hwcheck("doctor", "--facts", A100, "--rules", str(tmp_path / "none.toml"))
    assert result.returncode == 2 and "none.toml: no such file" in result.stderr


def test_changing_advice_is_editing_rules_only(tmp_path):
    # A copy of the package whose shipped policy data is edited: no Python changes.
    shutil.copytree(ROOT / "hwcheck", tmp_path / "hwcheck")
    shutil.copytree(ROOT / "rules", tmp_path / "rules")
    policy = tmp_path / "rules/policy/nvidia.toml"
    text = policy.read_text()
    assert 'id = "gpu-bf16"\nwhen = "derived.gpu_usable && gpu.bf16"\npolicy = "mixed_bfloat16"' in text
    policy.write_text(
        text.replace(
            'id = "gpu-bf16"\nwhen = "derived.gpu_usable && gpu.bf16"\npolicy = "mixed_bfloat16"',
            'id = "gpu-bf16"\nwhen = "derived.gpu_usable && gpu.bf16"\npolicy = "mixed_float16"',
        )
    )
    result = run_hwcheck("doctor", "--json", "--facts", A100, env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert json.loads(result.stdout)["recommendation"]["policy"] == "mixed_float16"


def test_broken_shipped_rules_file_is_reported_not_crashed(tmp_path):
    shutil.copytree(ROOT / "hwcheck", tmp_path / "hwcheck")
    shutil.copytree(ROOT / "rules", tmp_path / "rules")
    policy = tmp_path / "rules/policy/nvidia.toml"
    policy.write_text(policy.read_text().replace("priority = 80", 'priority = "high"'))
    result = run_hwcheck("doctor", "--facts", A100, env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 2
    assert 'nvidia.toml: rule gpu-bf16: priority: "high" is not of type "integer"' in result.stderr


def test_recommendation_api_is_small_and_plain():
    import hwcheck

    recommendation = hwcheck.recommend_policy(json.loads(open(A100).read()))
    assert str(recommendation) == recommendation.policy == "mixed_bfloat16"
    assert recommendation.why_not("mixed_bfloat16") == []
    assert set(hwcheck.__all__) == {
        "Finding",
        "Recommendation",
        "__version__",
        "bench",
        "probe",
        "recommend_policy",
        # the trainers' one-line settings
        "precision",
        "training_arguments",
        "accelerate_mixed_precision",
        "deepspeed_config",
    }
    with pytest.raises(ValueError):
        hwcheck.recommend_policy({"schema_version": 1}, prefer="float8")
