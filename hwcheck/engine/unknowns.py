"""Known, absent, unknown: an error rests only on facts hwcheck read.

A fact is unknown when its section is there but the key is not (a probe could not read it,
a facts file leaves it out); rules/knowledge/unknowns.toml lists the facts an error may rest
on, what each means and the command that reads it. An error rule names its deciding facts
(`decided_by`). When one of them is unknown, the rules are evaluated again with each value
the fact may take: an error that holds for every value stays an error; one that holds for
some only becomes a warning naming what could not be read and the command that settles it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable

from hwcheck import knowledge
from hwcheck.engine.outcome import SEVERITIES, Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.engine.rules import Rule, RuleSet

# Each unknown fact is tried with at most this many values (the table's are fewer).
MAX_VALUES = 8


def _holders(facts: Any, path: str, vendor: str | None) -> tuple[list[dict[str, Any]], str]:
    """The objects that hold the fact's last key (every element of a list on the way), and that key."""
    *steps, key = path.split(".")
    current: list[Any] = [facts]
    for step in steps:
        listed = step.endswith("[]")
        name = step.removesuffix("[]")
        found: list[Any] = []
        for node in current:
            value = node.get(name) if isinstance(node, dict) else None
            if listed and isinstance(value, list):
                found.extend(item for item in value if isinstance(item, dict))
            elif not listed and isinstance(value, dict):
                found.append(value)
        current = found
    holders = [node for node in current if isinstance(node, dict)]
    if vendor is not None:
        holders = [node for node in holders if _of_vendor(node, vendor)]
    return holders, key


def _of_vendor(node: dict[str, Any], vendor: str) -> bool:
    # A GPU or PCI device of a vendor: the facts' vendor name, or its PCI vendor id.
    return node.get("vendor") == vendor or str(
        node.get("vendor_id") or ""
    ).lower() == knowledge.pci_vendor_id(vendor)


def is_unknown(facts: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether the fact of a [[fact]] row is unknown in `facts` (its section there, its value not)."""
    holders, key = _holders(facts, row["path"], row.get("vendor"))
    if not holders:
        return False  # the section is absent: nothing there to be unknown
    required = row.get("requires")
    if required:
        needed, needed_key = _holders(facts, required, None)
        wanted = row.get("requires_value")
        if not any(
            holder.get(needed_key) == wanted if wanted is not None else holder.get(needed_key)
            for holder in needed
        ):
            return False  # the fact means something only beside another one that is not set
    unless = row.get("unless")
    if unless:
        settled, settled_key = _holders(facts, unless, None)
        pattern = row.get("unless_pattern")
        if settled and all(
            holder.get(settled_key) is not None
            and (not pattern or re.search(pattern, str(holder[settled_key])))
            for holder in settled
        ):
            return False
    return any(_missing(holder, key, row) for holder in holders)


# Tables that give a fact from another one the holder carries (`unless_named`): a GPU's name.
_NAMED = {"amd_gpu_name": lambda holder: knowledge.amd_target_by_name(holder.get("name"))}


def _missing(holder: dict[str, Any], key: str, row: dict[str, Any]) -> bool:
    """Whether this holder lacks the fact: its key absent (or null where null means unknown), and no
    table gives it from what the holder does carry."""
    absent = key not in holder or (bool(row.get("null_unknown")) and holder[key] is None)
    named = _NAMED.get(str(row.get("unless_named") or ""))
    return absent and not (named is not None and named(holder))


def unknown_facts(facts: dict[str, Any], backend: str) -> dict[str, dict[str, Any]]:
    """path -> [[fact]] row, for each fact that matters to `backend` and is unknown in `facts`."""
    return {
        row["path"]: row
        for row in knowledge.unknowable_facts()
        if backend in row.get("backends", (backend,)) and is_unknown(facts, row)
    }


def unknown_variable(facts: dict[str, Any], backend: str) -> dict[str, str]:
    """The rule variable `unknown`: each unknown deciding fact's path -> what could not be read."""
    return {path: str(row["what"]) for path, row in unknown_facts(facts, backend).items()}


def candidates(row: dict[str, Any]) -> list[Any]:
    """The values the fact may take: the table's, and null where it may be absent."""
    values = list(row.get("values") or ())[:MAX_VALUES]
    return ([None] if row.get("may_be_absent") else []) + values


def with_value(facts: dict[str, Any], row: dict[str, Any], value: Any) -> dict[str, Any]:
    """A copy of `facts` in which the fact of `row` is `value` wherever it was unknown."""
    world = copy.deepcopy(facts)
    holders, key = _holders(world, row["path"], row.get("vendor"))
    for holder in holders:
        if _missing(holder, key, row):
            holder[key] = value
    return world


def settle(
    fields: dict[str, Any],
    facts: dict[str, Any],
    ruleset: RuleSet,
    evaluate_world: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """`fields` with each error that rests on an unknown fact made a warning that says what to run.

    `evaluate_world(facts)` gives the evaluation's fields for other facts (the same rules,
    framework and options). An error rule that holds here only because of an unknown, or that
    would hold for some value of it, becomes that warning; one that holds whatever it is stays.
    """
    unknown = unknown_facts(facts, fields["backend"])
    if not unknown:
        return fields
    worlds: dict[tuple[str, str], dict[str, Any]] = {}

    def error_in(path: str, value: Any, rule_id: str) -> Finding | None:
        key = (path, json.dumps(value))
        if key not in worlds:
            worlds[key] = evaluate_world(with_value(facts, unknown[path], value))
        return _error(worlds[key]["findings"], rule_id)

    findings = list(fields["findings"])
    for rule in ruleset.finding_rules:
        deciding = [path for path in _decided_by(rule) if path in unknown]
        if rule.severity != "error" or not deciding:
            continue
        here = _error(findings, rule.id)
        worlds_of_rule = ((path, value) for path in deciding for value in candidates(unknown[path]))
        assumed: tuple[str, Any] | None = None
        example = here
        if here is not None:
            # An error whatever the unknown facts are rests on what is known: it stays.
            if all(error_in(path, value, rule.id) is not None for path, value in worlds_of_rule):
                continue
        else:
            for path, value in worlds_of_rule:
                example = error_in(path, value, rule.id)
                if example is not None:
                    assumed = (path, value)
                    break
        if example is None:
            continue  # no value the fact may take makes it an error
        warning = _warning(example, [unknown[path] for path in deciding], assumed)
        findings = [warning if finding is here else finding for finding in findings]
        if here is None:
            findings.append(warning)
    findings.sort(key=lambda finding: -SEVERITIES.index(finding.severity))
    return {**fields, "findings": tuple(findings)}


def _decided_by(rule: Rule) -> tuple[str, ...]:
    return tuple(rule.decided_by or ())


def _error(findings: Any, rule_id: str) -> Finding | None:
    return next((f for f in findings if f.id == rule_id and f.severity == "error"), None)


def _warning(error: Finding, rows: list[dict[str, Any]], assumed: tuple[str, Any] | None) -> Finding:
    """The warning an error becomes when facts that decide it are unknown."""
    what = " and ".join(str(row["what"]) for row in rows)
    runs = "; ".join(dict.fromkeys(str(row["run"]) for row in rows))
    if assumed is None:
        because = f"{what} could not be read, so this is not certain"
    else:
        because = f"{what} could not be read, and this holds if {assumed[0]} is {_shown(assumed[1])}"
    message = f"{because[0].upper()}{because[1:]}: {error.message}"
    remedy = f"Run {runs} to settle it" + (f"; if it confirms this: {error.remedy}" if error.remedy else ".")
    return Finding(id=error.id, severity="warning", message=message, remedy=remedy, source=error.source)


def _shown(value: Any) -> str:
    if value is None:
        return "null (absent)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def has_unknowns(facts: dict[str, Any], framework: str | None) -> bool:
    """Whether a fact that may decide an error is unknown for the runtime that would run `framework`."""
    from hwcheck.engine.native import target

    return bool(unknown_facts(facts, target(facts, framework).backend))
