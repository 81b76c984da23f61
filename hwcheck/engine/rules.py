"""Loads policy rules (TOML in rules/policy/ plus site files) and compiles their CEL."""

from __future__ import annotations

import os
import re
from collections.abc import Container, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwcheck.base.errors import InputError
from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import content_key, policy_files, read_toml
from hwcheck.engine.cel import cel
from hwcheck.engine.limits import MAX_EXPRESSION_CHARS, MAX_SITE_ENTRIES, cost_problem
from hwcheck.facts import schema_error, schema_message, schema_path

if TYPE_CHECKING:
    from jsonschema_rs import ValidationError

RULE_KEYS = frozenset(
    (
        "id",
        "disabled",
        "when",
        "message",
        "source",
        "policy",
        "device",
        "runtime",
        "priority",
        "why_not",
        "severity",
        "remedy",
        "decided_by",
    )
)
# "{expression}" in a message is a CEL expression; "{{" and "}}" are literal braces.
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]+)\}")


# NamedTuples rather than dataclasses: importing dataclasses costs doctor ~7 ms.
class Template(NamedTuple):
    """A message whose {placeholders} are CEL expressions, compiled when first rendered."""

    source: str
    origin: str
    what: str
    parts: tuple[str | Placeholder, ...]

    def compile_all(self) -> None:
        """Compile every placeholder now, so a bad one fails at load time."""
        for part in self.parts:
            if isinstance(part, Placeholder):
                part.program(self)


class Placeholder:
    """One {expression} in a message."""

    __slots__ = ("expression", "compiled")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.compiled: Any = None

    def program(self, template: Template) -> Any:
        """The compiled CEL program (compiled once, on first use)."""
        if self.compiled is None:
            self.compiled = _compile(
                self.expression, Path(template.origin), f"{template.what} placeholder {{{self.expression}}}"
            )
        return self.compiled


class Rule(NamedTuple):
    """One rule: a condition and either a policy decision or a finding."""

    id: str
    when: Any
    message: Template
    origin: str
    source: str | None = None
    policy: str | None = None
    device: str | None = None
    runtime: str | None = None  # the runtime a GPU policy targets (rocm); None: by the device
    priority: int = 0
    why_not: dict[str, Template] = {}  # shared default: read, never mutated
    severity: str | None = None
    remedy: Template | None = None
    # The facts an error rests on (rules/knowledge/unknowns.toml paths): unknown, it is a warning.
    decided_by: tuple[str, ...] = ()

    @property
    def decides_policy(self) -> bool:
        """Whether this rule chooses a policy (rather than reporting a finding)."""
        return self.policy is not None


class RuleSet:
    """Derived variables and rules, in evaluation order, with site overrides applied."""

    def __init__(self) -> None:
        self.derive: dict[str, tuple[Any, str]] = {}
        self.rules: dict[str, Rule] = {}

    @property
    def policy_rules(self) -> list[Rule]:
        """Policy rules, highest priority first (file order breaks ties)."""
        chosen = [rule for rule in self.rules.values() if rule.decides_policy]
        return sorted(chosen, key=lambda rule: -rule.priority)

    @property
    def finding_rules(self) -> list[Rule]:
        """Finding rules in file order."""
        return [rule for rule in self.rules.values() if not rule.decides_policy]


def shipped_rule_files() -> list[Path]:
    """The policy rule files that come with hwcheck."""
    return [Path(path) for path in policy_files()]


def load_rules(rule_files: Iterable[str | os.PathLike[str]] = ()) -> RuleSet:
    """The shipped rules, then each site rule file extending or overriding them by id.

    Loaded rule sets are kept per process while their files' bytes are unchanged: an
    inventory or a training script asks many times, and compiling costs ~4 ms. The key
    is the content, not the modification time, so an edit that keeps the size and
    restores the time is still seen.
    """
    shipped = tuple(shipped_rule_files())
    site = tuple(Path(path) for path in rule_files)
    contents = tuple(content_key(path) for path in (*shipped, *site))
    return _load(shipped, site, contents)


@lru_cache(maxsize=8)
def _load(shipped: tuple[Path, ...], site: tuple[Path, ...], _contents: tuple[Any, ...]) -> RuleSet:
    ruleset = RuleSet()
    for path in shipped:
        _add_file(ruleset, path, site=False)
    for path in site:
        _add_file(ruleset, path, site=True)
    # Shipped rules are checked by the test suite (tests/test_rule_names.py,
    # tests/test_rule_limits.py): checking them here would cost every doctor run ~7 ms
    # for files that cannot have changed.
    site_origins = {str(path) for path in site}
    check_costs(ruleset, site_origins)
    if site_origins:
        check_variables(ruleset, site_origins)
    return ruleset


def expressions(ruleset: RuleSet, origins: Container[str] | None = None) -> Iterable[tuple[str, str, str]]:
    """Each expression of the rule set (only those from `origins`): (expression, origin, what)."""
    for name, (program, origin) in ruleset.derive.items():
        if origins is None or origin in origins:
            yield program.source, origin, f"derive.{name}"
    for rule in ruleset.rules.values():
        if origins is not None and rule.origin not in origins:
            continue
        yield rule.when.source, rule.origin, f"rule {rule.id}: condition"
        for template in (rule.message, rule.remedy, *rule.why_not.values()):
            if template is None:
                continue
            for part in template.parts:
                if isinstance(part, Placeholder):
                    yield part.expression, rule.origin, f"{template.what} placeholder {{{part.expression}}}"


def check_costs(ruleset: RuleSet, origins: Container[str] | None = None) -> None:
    """Reject an expression that could take long to evaluate (only those from `origins`)."""
    for expression, origin, what in expressions(ruleset, origins):
        problem = cost_problem(expression)
        if problem is not None:
            raise InputError(origin, f"{what}: {problem}")


def check_variables(ruleset: RuleSet, origins: Container[str] | None = None) -> None:
    """Reject an expression that reads a variable rules are not given (only those from `origins`).

    Derive expressions may read the derived names evaluated before them; conditions and
    messages read every derived name, and finding rules the decision too.
    """

    # Imported here: only site files are checked at run time, and doctor's budget is tight.
    from hwcheck.engine.names import AnyKeys

    def wanted(origin: str) -> bool:
        return origins is None or origin in origins

    from hwcheck.engine.vocabulary import shape

    context = shape("context")
    decision = shape("decision")["decision"]
    derived: dict[str, Any] = {}
    for name, (program, origin) in ruleset.derive.items():
        if wanted(origin):
            _reject_unknown(program.source, {**context, "derived": derived}, Path(origin), f"derive.{name}")
        derived[name] = AnyKeys()
    for rule in ruleset.rules.values():
        if not wanted(rule.origin):
            continue
        allowed = {**context, "derived": derived}
        if not rule.decides_policy:
            allowed["decision"] = decision
        path = Path(rule.origin)
        _reject_unknown(rule.when.source, allowed, path, f"rule {rule.id}")
        for template in (rule.message, rule.remedy, *rule.why_not.values()):
            if template is None:
                continue
            for part in template.parts:
                if isinstance(part, Placeholder):
                    _reject_unknown(part.expression, allowed, path, template.what)


def _reject_unknown(expression: str, allowed: dict[str, Any], path: Path, what: str) -> None:
    from hwcheck.engine.cel import FUNCTIONS
    from hwcheck.engine.names import CEL_FUNCTIONS, first_unknown, unknown_function

    known = CEL_FUNCTIONS | set(FUNCTIONS)
    # Functions first: a misspelt macro (`exist`) leaves its variable unbound, which would name that instead.
    problem = unknown_function(expression, known) or first_unknown(expression, allowed)
    if problem is None:
        return
    if problem.startswith("unknown variable decision") and "decision" not in allowed:
        problem += " (only finding rules read the decision: policy rules and derive expressions make it)"
    raise InputError(path, f"{what}: {problem}")


def _add_file(ruleset: RuleSet, path: Path, *, site: bool) -> None:
    document = read_toml(path)
    if site:
        # Before the schema check, which alone takes seconds over a few megabytes of rules.
        parts = (document.get("rule"), document.get("derive"))
        entries = sum(len(part) for part in parts if isinstance(part, (list, dict)))
        if entries > MAX_SITE_ENTRIES:
            problem = f"{entries} rules and derive entries (limit {MAX_SITE_ENTRIES} in one file)"
            raise InputError(path, problem)
    # A site file is checked against the whole schema; shipped files only when the
    # cheap shape check fails (jsonschema_rs costs ~35 ms to import, doctor's budget is ~90).
    if site or not _plausible(document):
        _check_schema(document, path)
    if not site and not isinstance((document.get("meta") or {}).get("title"), str):
        # Optional for site files; a shipped file says what it is and where its advice comes from.
        raise InputError(path, "meta.title: a shipped rules file needs a [meta] table with a title")
    for name, expression in (document.get("derive") or {}).items():
        ruleset.derive[name] = (_compile(expression, path, f"derive.{name}"), str(path))
    seen: set[str] = set()
    for entry in document.get("rule") or []:
        rule_id = entry["id"]
        if rule_id in seen:
            raise InputError(path, f"rule {rule_id}: the id is used twice in this file")
        seen.add(rule_id)
        if entry.get("disabled"):
            if rule_id not in ruleset.rules:
                raise InputError(path, f"rule {rule_id}: disables a rule that does not exist")
            del ruleset.rules[rule_id]
            continue
        rule = _rule(entry, path)
        if site:
            for template in (rule.message, rule.remedy, *rule.why_not.values()):
                if template is not None:
                    template.compile_all()
        ruleset.rules[rule_id] = rule


def _plausible(document: dict[str, Any]) -> bool:
    if not set(document) <= {"meta", "derive", "rule"} or not isinstance(document.get("meta", {}), dict):
        return False
    if not isinstance(document.get("derive", {}), dict):
        return False
    rules = document.get("rule", [])
    if not isinstance(rules, list):
        return False
    for entry in rules:
        if not isinstance(entry, dict) or not set(entry) <= RULE_KEYS:
            return False
        if not isinstance(entry.get("id"), str):
            return False
        if entry.get("disabled"):
            continue
        if not all(isinstance(entry.get(key), str) for key in ("when", "message")):
            return False
        if ("policy" in entry) == ("severity" in entry):
            return False
        if "policy" in entry and not isinstance(entry.get("priority"), int):
            return False
        if not isinstance(entry.get("decided_by", []), list):
            return False
    return True


def _check_schema(document: dict[str, Any], path: Path) -> None:
    try:
        error = schema_error(document, "rules")
    except RecursionError:
        raise InputError(path, "nested too deeply") from None
    if error is None:
        return
    where = error.instance_path
    if len(where) >= 2 and where[0] == "rule" and isinstance(where[1], int):
        entry = document["rule"][where[1]]
        rule_id = entry.get("id") if isinstance(entry, dict) else None
        label = f"rule {rule_id}" if isinstance(rule_id, str) else f"rule #{where[1] + 1}"
        field = f"{schema_path(where[2:])}: " if len(where) > 2 else ""
        raise InputError(path, f"{label}: {field}{_schema_message(error)}")
    raise InputError(path, f"{schema_path(where)}: {_schema_message(error)}")


def _schema_message(error: ValidationError) -> str:
    if error.kind.name == "oneOf":
        return (
            "a rule needs when, message and either policy + device + priority (a policy rule) "
            "or severity (a finding), or disabled = true"
        )
    unexpected = getattr(error.kind, "unexpected", None)
    if error.kind.name == "additionalProperties" and unexpected:
        names = ", ".join(repr(name) for name in unexpected)
        return f"unknown key ({names} {'was' if len(unexpected) == 1 else 'were'} unexpected)"
    return schema_message(error)


def _rule(entry: dict[str, Any], path: Path) -> Rule:
    rule_id = entry["id"]

    def template(text: str, what: str) -> Template:
        return _template(text, path, f"rule {rule_id}: {what}")

    return Rule(
        id=rule_id,
        when=_compile(entry["when"], path, f"rule {rule_id}: condition"),
        message=template(entry["message"], "message"),
        origin=str(path),
        source=entry.get("source"),
        policy=entry.get("policy"),
        device=entry.get("device"),
        runtime=entry.get("runtime"),
        priority=entry.get("priority", 0),
        why_not={
            policy: template(text, f"why_not.{policy}")
            for policy, text in (entry.get("why_not") or {}).items()
        },
        severity=entry.get("severity"),
        remedy=template(entry["remedy"], "remedy") if entry.get("remedy") else None,
        decided_by=tuple(entry.get("decided_by") or ()),
    )


def _compile(expression: str, path: Path, what: str) -> Any:
    if len(expression) > MAX_EXPRESSION_CHARS:
        # Checked before compiling: a long enough operator chain overflows the parser's stack.
        length = f"the expression is {len(expression)} characters long (limit {MAX_EXPRESSION_CHARS})"
        raise InputError(path, f"{what}: {length}")
    try:
        return cel().compile(expression)
    except Exception as error:  # the CEL parser raises ValueError, but be sure
        detail = " ".join(str(error).split())
        if len(detail) > 200:
            detail = detail[:197] + "..."
        raise InputError(path, f"{what} is not valid CEL: {detail}") from None


def _template(text: str, path: Path, what: str) -> Template:
    # Placeholders compile lazily: only the messages of rules that hold are rendered,
    # and compiling all of them would cost doctor ~5 ms. Site files compile eagerly.
    parts: list[Any] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        parts.append(text[position : match.start()])
        token = match.group(0)
        if token in ("{{", "}}"):
            parts.append(token[0])
        else:
            parts.append(Placeholder(match.group(1)))
        position = match.end()
    parts.append(text[position:])
    if "{" in "".join(p for p in parts if isinstance(p, str) and p not in ("{", "}")):
        raise InputError(path, f"{what}: unbalanced brace (write {{{{ or }}}} for a literal one)")
    return Template(
        source=text, origin=str(path), what=what, parts=tuple(part for part in parts if part != "")
    )
