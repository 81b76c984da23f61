"""Applies a loaded rule set to a built context: the policy decision and the findings."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hwcheck.engine.cel import cel
from hwcheck.engine.context import build_context
from hwcheck.engine.native import apply_lines
from hwcheck.engine.rules import Rule, RuleSet, Template, load_rules
from hwcheck.recommendation import (
    COMPUTE_DTYPES,
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
    framework: str | None = None,
    prefer: str | None = None,
    rule_files: Iterable[str | Path] = (),
) -> Recommendation:
    """Evaluate the shipped and site rules over `facts` and return the recommendation.

    `framework` None picks one from the installed frameworks (and says so in a finding).
    """
    if framework is not None and framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}")
    if prefer is not None and prefer not in PREFERENCES:
        raise ValueError(f"unknown preference {prefer!r}; expected one of {', '.join(PREFERENCES)}")
    ruleset = load_rules(rule_files)
    context = build_context(facts, probes=probes, framework=framework, prefer=prefer)
    return evaluate(ruleset, context)


def evaluate(ruleset: RuleSet, context: dict[str, Any]) -> Recommendation:
    """Apply a loaded rule set to a built context (its `framework` and `backend` say for whom)."""
    run = _Run(context)
    derived: dict[str, Any] = {}
    run.set("derived", derived)
    for name, (program, origin) in ruleset.derive.items():
        derived[name] = run.value(program, f"derive.{name}", origin)
        run.set("derived", derived)

    chosen = next((rule for rule in ruleset.policy_rules if run.holds(rule)), None)
    if chosen is None:
        # Only reachable when site rules disabled every fallback: stay safe.
        chosen_policy, device = "float32", "cpu"
        reasons: tuple[Reason, ...] = (
            Reason("no-policy-rule", "No policy rule matched these facts; float32 runs anywhere."),
        )
        rejected: dict[str, tuple[str, ...]] = {}
    else:
        chosen_policy, device = chosen.policy or "float32", chosen.device or "cpu"
        reasons = (Reason(chosen.id, run.render(chosen.message)),)
        rejected = {
            policy: (run.render(template),)
            for policy, template in chosen.why_not.items()
            if policy != chosen_policy
        }
        for policy in POLICIES:
            if policy != chosen_policy and policy not in rejected:
                rejected[policy] = (
                    f"rule {chosen.id} chose {chosen_policy} for this machine ({reasons[0].message})",
                )

    loss_scaling = chosen_policy == "mixed_float16"
    tf32 = device == "gpu" and derived.get("tf32_allowed") is True
    decision: dict[str, Any] = {
        "policy": chosen_policy,
        "device": device,
        "loss_scaling": loss_scaling,
        "compute_dtype": COMPUTE_DTYPES[chosen_policy],
        # TF32 is a GPU math mode: the derive says whether these GPUs may use it.
        "tf32": tf32,
    }
    run.set("decision", decision)
    findings = [
        Finding(
            id=rule.id,
            severity=rule.severity or "info",
            message=run.render(rule.message),
            remedy=run.render(rule.remedy) if rule.remedy else None,
            source=rule.source,
        )
        for rule in ruleset.finding_rules
        if run.holds(rule)
    ]
    findings.extend(run.errors)
    findings.sort(key=lambda finding: -SEVERITIES.index(finding.severity))
    target = {"framework": context["framework"], "backend": context["backend"]}
    return Recommendation(
        policy=chosen_policy,
        device=device,
        loss_scaling=loss_scaling,
        reasons=reasons,
        findings=tuple(findings),
        framework=target["framework"],
        rejected=rejected,
        backend=target["backend"],
        tf32=tf32,
        apply=apply_lines({**decision, **target}),
    )


class _Run:
    """One evaluation: the CEL environment, and the rule errors met along the way.

    An expression that fails while reading a null or absent fact (a sparse facts
    document, an environment variable that is not set) counts as not holding, and a
    placeholder over one reads "unknown": advice never crashes on missing data. Any
    other failure is a fault in the rule and becomes a rule-error warning finding.
    """

    def __init__(self, context: dict[str, Any]) -> None:
        self.values = dict(context)
        self.environment = cel().Context(variables=context, functions=FUNCTIONS)
        self.errors: list[Finding] = []

    def set(self, name: str, value: Any) -> None:
        """Give rules the variable `name` (derived, decision)."""
        self.values[name] = value
        self.environment.add_variable(name, value)

    def holds(self, rule: Rule) -> bool:
        """Whether the rule's condition is true; a condition over missing facts is not."""
        value = self.value(rule.when, f"rule {rule.id}", rule.origin)
        if value is not None and not isinstance(value, bool):
            self._error(f"rule {rule.id}", rule.origin, f"its condition gave {value!r}, not true or false")
        return value is True

    def value(self, program: Any, what: str, origin: str) -> Any:
        """The expression's value, or None when it failed (a rule error unless facts were missing)."""
        try:
            return program.execute(self.environment)
        except Exception as error:  # CEL raises TypeError, KeyError, RuntimeError, ...
            # Only a failing expression pays for the name reader's import.
            from hwcheck.engine.names import reads_missing

            if not reads_missing(program.source, self.values):
                self._error(what, origin, _first_sentence(error))
            return None

    def render(self, template: Template) -> str:
        """Fill a message's {placeholders}."""
        return "".join(
            part
            if isinstance(part, str)
            else _format(self.value(part.program(template), template.what, template.origin))
            for part in template.parts
        )

    def _error(self, what: str, origin: str, detail: str) -> None:
        self.errors.append(
            Finding(
                id="rule-error",
                severity="warning",
                message=f"{origin}: {what}: {detail}; the rule was treated as not holding.",
                remedy="Fix the rule; a fact that may be unknown can be tested against null first.",
            )
        )


def _first_sentence(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, KeyError):
        text = f"no such key {text}"
    sentence = text.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 200 else sentence[:197] + "..."


def _format(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_format(item) for item in value) or "none"
    return str(value)
