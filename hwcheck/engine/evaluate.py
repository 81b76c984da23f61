"""Applies a loaded rule set to a built context: the policy decision and the findings."""

from __future__ import annotations

import time
from typing import Any

import hwcheck.engine.low_precision as low_precision
from hwcheck.base.inputs import MAX_MESSAGE
from hwcheck.engine.cel import FUNCTIONS, cel
from hwcheck.engine.context import build_context
from hwcheck.engine.limits import MAX_DERIVED_SIZE, oversized, too_many_elements
from hwcheck.engine.native import api_gaps, apply_lines
from hwcheck.engine.outcome import MEASURABLE, POLICIES, SEVERITIES, Finding, Reason, decision_of
from hwcheck.engine.question import Question
from hwcheck.engine.rules import Rule, RuleSet, Template, load_rules
from hwcheck.engine.unknowns import settle

# An expression slower than this (CPU seconds) is reported (and treated as failed); once
# expressions have taken BUDGET_SECONDS together, the rest are skipped. The load-time limits keep
# each expression far below (limits.py); these catch whatever they miss, because the
# CEL extension cannot be interrupted once it runs.
SLOW_SECONDS = 0.25
# A filled message or remedy is cut to MAX_MESSAGE: a placeholder over 100,000 GPUs must not
# make a report that inventory refuses.
BUDGET_SECONDS = 2.0


def evaluate(ruleset: RuleSet, context: dict[str, Any]) -> dict[str, Any]:
    """Apply a loaded rule set to a built context: the Recommendation's fields (for context's framework)."""
    run = _Run(context)
    derived: dict[str, Any] = {}
    run.set("derived", derived)
    for name, (program, origin) in ruleset.derive.items():
        value = run.value(program, f"derive.{name}", origin)
        if oversized(value):
            too_big = f"its value holds more than {MAX_DERIVED_SIZE} elements"
            run.report_error(f"derive.{name}", origin, too_big)
            value = None
        derived[name] = value
        run.set("derived", derived)

    chosen = next((rule for rule in ruleset.policy_rules if run.holds(rule)), None)
    if chosen is None:
        # Only reachable when site rules disabled every fallback: stay safe.
        chosen_policy, device, runtime = "float32", "cpu", None
        reasons: tuple[Reason, ...] = (
            Reason("no-policy-rule", "No policy rule matched these facts; float32 runs anywhere."),
        )
        rejected: dict[str, tuple[str, ...]] = {}
    else:
        chosen_policy, device, runtime = chosen.policy or "float32", chosen.device or "cpu", chosen.runtime
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

    decision = decision_of(chosen_policy, device, False, runtime)
    # TF32 is a math mode of NVIDIA's GPUs: the derive says whether these GPUs may use it.
    tf32 = device == "gpu" and decision["runtime"] == "cuda" and derived.get("tf32_allowed") is True
    # FP8 training: the derives of rules/policy/policy.toml say whether, why and how.
    fp8: dict[str, Any] = {
        # null: unknown, a fact that decides it could not be read (fp8_undecided says which way).
        "available": None if derived.get("fp8_undecided") is True else derived.get("fp8_available") is True,
        "reason": _text_or_empty(derived.get("fp8_reason")),
        "recipe": _text_or_empty(derived.get("fp8_recipe")),
    }
    # The recipes table is Transformer Engine's for NVIDIA's compute capabilities: FP8 on AMD GPUs
    # (fp8_amd) is Transformer Engine for ROCm's, which the table does not describe.
    amd = derived.get("fp8_amd") is True
    fp8["recipes"] = {} if amd else low_precision.recipes(context["gpu"], derived, fp8)
    decision = decision_of(chosen_policy, device, tf32, decision["runtime"])
    measure = measure_of(derived, decision["runtime"])
    target = {"framework": context["framework"], "backend": context["backend"]}
    # The APIs this advice uses that the installed framework predates (frameworks.toml [[feature]]).
    decision.update(api_gaps({**decision, **target, "fp8": fp8["available"]}, _installed_versions(context)))
    loss_scaling = decision["loss_scaling"]
    run.set("decision", decision)
    findings = [
        Finding(
            id=rule.id,
            severity=rule.severity or "info",
            message=run.render(rule.message),
            remedy=(run.render(rule.remedy) or None) if rule.remedy else None,
            source=rule.source,
        )
        for rule in ruleset.finding_rules
        if run.holds(rule)
    ]
    findings.extend(run.errors)
    skipped = run.skipped_finding()
    if skipped is not None:
        findings.append(skipped)
    findings.sort(key=lambda finding: -SEVERITIES.index(finding.severity))
    return dict(
        policy=chosen_policy,
        device=device,
        runtime=decision["runtime"],
        loss_scaling=loss_scaling,
        reasons=reasons,
        findings=tuple(findings),
        framework=target["framework"],
        rejected=rejected,
        backend=target["backend"],
        tf32=tf32,
        apply=apply_lines({**decision, **target}),
        fp8=fp8,
        measure=measure,
    )


def evaluate_facts(question: Question) -> dict[str, Any]:
    """evaluate(load_rules(rule_files), build_context(facts, ...)), with the errors that rest on
    unknown facts settled."""
    facts, probes, framework, prefer, rule_files = question
    ruleset = load_rules(rule_files)
    fields = evaluate(ruleset, build_context(facts, probes=probes, framework=framework, prefer=prefer))

    def evaluate_world(world: dict[str, Any]) -> dict[str, Any]:
        context = build_context(world, probes=probes, framework=fields["framework"], prefer=prefer)
        return evaluate(ruleset, context)

    return settle(fields, facts, ruleset, evaluate_world)


def measure_of(derived: dict[str, Any], runtime: str) -> dict[str, Any]:
    """What hwcheck doctor --measure would bench for the decided runtime, and why (the derives say).

    measure_candidates and measure_why map runtimes to bench variants and a sentence; a runtime
    they do not name, or anything not of that shape, is nothing to measure.
    """
    candidates, why = derived.get("measure_candidates"), derived.get("measure_why")
    chosen = candidates.get(runtime) if isinstance(candidates, dict) else None
    names = [name for name in chosen if name in MEASURABLE] if isinstance(chosen, list) else []
    reason = why.get(runtime) if isinstance(why, dict) and names else ""
    return {"candidates": list(dict.fromkeys(names)), "why": reason if isinstance(reason, str) else ""}


def _installed_versions(context: dict[str, Any]) -> dict[str, str | None]:
    """The installed release of each package a [[feature]] row can name."""
    return {
        "torch": context["torch"]["version"],
        "keras": context["keras"]["version"],
        "tensorflow": context["tf"]["version"],
        "jax": context["jax"]["version"],
        # The trainers, by the package their facts are kept under (lightning, transformers, ...).
        **{row["package"]: row["version"] for row in context["trainers"].values()},
    }


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
        self.seconds = 0.0
        self.skipped = 0

    def set(self, name: str, value: Any) -> None:
        """Give rules the variable `name` (derived, decision)."""
        self.values[name] = value
        self.environment.add_variable(name, value)

    def holds(self, rule: Rule) -> bool:
        """Whether the rule's condition is true; a condition over missing facts is not."""
        value = self.value(rule.when, f"rule {rule.id}", rule.origin)
        if value is not None and not isinstance(value, bool):
            detail = f"its condition gave {value!r}, not true or false"
            self.report_error(f"rule {rule.id}", rule.origin, detail)
        return value is True

    def value(self, program: Any, what: str, origin: str) -> Any:
        """The expression's value, or None when it failed (a rule error unless facts were missing)."""
        if self.seconds > BUDGET_SECONDS:
            self.skipped += 1
            return None
        too_long = too_many_elements(program.source, self.values)
        if too_long is not None:
            self.report_error(what, origin, too_long)
            return None
        # CPU time of this thread, not wall time: the extension holds the GIL while it runs, so
        # this is the expression's own cost, and a machine busy with other work cannot make a
        # rule look slow (and be dropped) on one run and not the next.
        start = time.thread_time()
        try:
            value = program.execute(self.environment)
        except Exception as error:  # CEL raises TypeError, KeyError, RuntimeError, ...
            # Only a failing expression pays for the name reader's import.
            from hwcheck.engine.names import reads_missing

            if not reads_missing(program.source, self.values):
                self.report_error(what, origin, _first_sentence(error))
            value = None
        finally:
            elapsed = time.thread_time() - start
            self.seconds += elapsed
        if elapsed > SLOW_SECONDS:
            self.report_error(what, origin, f"it took {elapsed:.2f} s to evaluate (limit {SLOW_SECONDS} s)")
            return None
        return value

    def skipped_finding(self) -> Finding | None:
        """The rule error saying how many expressions the spent time budget skipped, if any."""
        if not self.skipped:
            return None
        return Finding(
            id="rule-error",
            severity="warning",
            message=(
                f"rules took {self.seconds:.1f} s to evaluate (budget {BUDGET_SECONDS} s): "
                f"{self.skipped} expressions were skipped and treated as not holding."
            ),
            remedy="Find the slow site rule (HWCHECK_RULES, --rules) and simplify it.",
        )

    def render(self, template: Template) -> str:
        """Fill a message's {placeholders}, cut to MAX_MESSAGE characters."""
        text = "".join(
            part
            if isinstance(part, str)
            else _format(self.value(part.program(template), template.what, template.origin))
            for part in template.parts
        )
        return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."

    def report_error(self, what: str, origin: str, detail: str) -> None:
        """Add a rule-error warning: the expression failed, or was not allowed to decide."""
        self.errors.append(
            Finding(
                id="rule-error",
                severity="warning",
                message=f"{origin}: {what}: {detail}; the rule was treated as not holding.",
                remedy="Fix the rule; a fact that may be unknown can be tested against null first.",
            )
        )


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


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
