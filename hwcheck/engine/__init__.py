"""The rules engine: facts in, a Recommendation out, all advice read from rules/."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hwcheck.engine.cel import cel
from hwcheck.engine.context import build_context
from hwcheck.engine.rules import Rule, RuleSet, Template, load_rules
from hwcheck.recommendation import (
    FRAMEWORKS,
    POLICIES,
    PREFERENCES,
    SEVERITIES,
    Finding,
    Reason,
    Recommendation,
)
from hwcheck.versions import major, major_minor, version_at_least, version_less

# Functions rule conditions may call besides CEL's own.
FUNCTIONS = {
    "version_less": version_less,
    "version_at_least": version_at_least,
    "major": major,
    "major_minor": major_minor,
}


def recommend(
    facts: dict[str, Any],
    *,
    probes: dict[str, dict[str, Any]] | None = None,
    framework: str = "tensorflow",
    prefer: str | None = None,
    rule_files: Iterable[str | Path] = (),
) -> Recommendation:
    """Evaluate the shipped and site rules over `facts` and return the recommendation."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}")
    if prefer is not None and prefer not in PREFERENCES:
        raise ValueError(f"unknown preference {prefer!r}; expected one of {', '.join(PREFERENCES)}")
    ruleset = load_rules(rule_files)
    context = build_context(facts, probes=probes, framework=framework, prefer=prefer)
    return evaluate(ruleset, context, framework=framework)


def evaluate(ruleset: RuleSet, context: dict[str, Any], *, framework: str) -> Recommendation:
    """Apply a loaded rule set to a built context."""
    environment = cel().Context(variables=context, functions=FUNCTIONS)
    derived: dict[str, Any] = {}
    environment.add_variable("derived", derived)
    for name, (program, _origin) in ruleset.derive.items():
        derived[name] = _run(program, environment, default=None)
        environment.add_variable("derived", derived)

    chosen = next((r for r in ruleset.policy_rules if _holds(r, environment)), None)
    if chosen is None:
        # Only reachable when site rules disabled every fallback: stay safe.
        chosen_policy, device = "float32", "cpu"
        reasons: tuple[Reason, ...] = (
            Reason("no-policy-rule", "No policy rule matched these facts; float32 runs anywhere."),
        )
        rejected: dict[str, tuple[str, ...]] = {}
    else:
        chosen_policy, device = chosen.policy or "float32", chosen.device or "cpu"
        reasons = (Reason(chosen.id, render(chosen.message, environment)),)
        rejected = {
            policy: (render(template, environment),)
            for policy, template in chosen.why_not.items()
            if policy != chosen_policy
        }
        for policy in POLICIES:
            if policy != chosen_policy and policy not in rejected:
                rejected[policy] = (
                    f"rule {chosen.id} chose {chosen_policy} for this machine ({reasons[0].message})",
                )

    loss_scaling = chosen_policy == "mixed_float16"
    environment.add_variable(
        "decision", {"policy": chosen_policy, "device": device, "loss_scaling": loss_scaling}
    )
    findings = [
        Finding(
            id=rule.id,
            severity=rule.severity or "info",
            message=render(rule.message, environment),
            remedy=render(rule.remedy, environment) if rule.remedy else None,
            source=rule.source,
        )
        for rule in ruleset.finding_rules
        if _holds(rule, environment)
    ]
    findings.sort(key=lambda finding: -SEVERITIES.index(finding.severity))
    return Recommendation(
        policy=chosen_policy,
        device=device,
        loss_scaling=loss_scaling,
        reasons=reasons,
        findings=tuple(findings),
        framework=framework,
        rejected=rejected,
    )


def render(template: Template, environment: Any) -> str:
    """Fill a message's {placeholders} from the evaluation environment."""
    return "".join(
        part if isinstance(part, str) else _format(_run(part.program(template), environment, default=None))
        for part in template.parts
    )


def _holds(rule: Rule, environment: Any) -> bool:
    return _run(rule.when, environment, default=False) is True


def _run(program: Any, environment: Any, *, default: Any) -> Any:
    # A condition over a missing fact (an unknown field in a site rule, a null
    # compared with a number) counts as not holding: advice never crashes on
    # a sparse facts document.
    try:
        return program.execute(environment)
    except Exception:
        return default


def _format(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_format(item) for item in value) or "none"
    return str(value)
