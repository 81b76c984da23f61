"""The decision for a machine, remembered in the private cache by everything it was computed from.

Loading the CEL extension and compiling the rules costs doctor ~25 ms a run, more than half
of its budget, and compiled CEL programs cannot be stored (they do not pickle, and the
library offers no other form). What can be stored is what evaluate() returns for one
context: a pure function of the context's variables (everything a rule can read), the
rules files, hwcheck, Python and CEL (cache_key's stamp) and the engine's own code.
An entry is named by all of them, so any change to any of them misses and evaluates again.

Two lookups lead to it. `advise` names the advice by the facts and probe answers themselves,
the options, every rules and knowledge file and the code that turns facts into a context:
a hit skips building the context, whose knowledge tables cost doctor ~6 ms a run, and
holds the name of the decision entry (read and checked as any). On a miss, `decide` names
the decision by the context, so facts that differ only where no rule reads share it.
"""

from __future__ import annotations

import json
import os

from hwcheck.base.tables import (
    cache_key,
    cached_document,
    file_key,
    policy_files,
    rules_files,
    store_document,
)
from hwcheck.engine.outcome import (
    BACKENDS,
    DEVICES,
    FRAMEWORKS,
    MEASURABLE,
    POLICIES,
    RUNTIMES,
    SEVERITIES,
    Finding,
    Reason,
    decision_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from hwcheck.engine.question import Question

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where the code and data that turn a context into a decision live, besides the rules:
# the engine and the devices plug-ins it loops over, the base it reads files and versions
# with, and the schema site rules meet.
CODE_DIRS = ("engine", "devices", "base", os.path.join("facts", "schema"))
# ... and facts into a context: the knowledge readers, the probes' names, the facts model
# (bench results are read through it), and the recommendation that holds the decision.
ADVICE_CODE_DIRS = (*CODE_DIRS, "knowledge", "probes", "facts", "recommendation")
# Facts no rule variable is built from, and that change from one run to the next (free host
# memory): naming the advice by them would miss the cache on every run.
UNREAD_FACTS = ("memory",)


def advise(question: Question) -> dict[str, Any]:
    """decide(build_context(facts, ...), rule_files), without the context when these facts were seen."""
    facts, probes, framework, prefer, rule_files = question
    key = advice_key(question)
    if key is not None:
        # Only advice without unknown deciding facts is stored, so a hit needs no check for them
        # (which loads every knowledge table).
        remembered = _advice(cached_document(key), key)
        if remembered is not None:
            return remembered
    from hwcheck.engine.unknowns import has_unknowns

    if has_unknowns(facts, framework):
        # Errors resting on unknown facts are settled by evaluating other facts: not one context's decision.
        from hwcheck.engine.evaluate import evaluate_facts

        return evaluate_facts(question)
    from hwcheck.engine.context import build_context  # with the knowledge tables: ~6 ms

    context = build_context(facts, probes=probes, framework=framework, prefer=prefer)
    fields, decision = _decide(context, tuple(rule_files))
    if key is not None and decision is not None:
        target = {"framework": fields["framework"], "backend": fields["backend"]}
        store_document(key, {"key": key, "decision": decision, **target, "apply": list(fields["apply"])})
    return fields


def _added_plugins() -> list[str]:
    """The device plug-ins registered beyond the built-in ones (none where hwcheck.devices was never
    imported: registering one imports it, so a remembered advice costs no import to check)."""
    import sys

    devices = sys.modules.get("hwcheck.devices")
    if devices is None:
        return []
    return sorted(plugin.name for plugin in devices.PLUGINS if plugin.name not in devices.BUILT_IN)


def advice_key(question: Question) -> str | None:
    """The cache key of the advice for this question; None when it cannot be named safely."""
    facts, probes, framework, prefer, rule_files = question
    # What build_context reads of the probes: each one's status and reason, never its time.
    answers = None if probes is None else {name: _answer(status) for name, status in probes.items()}
    read = {name: value for name, value in facts.items() if name not in UNREAD_FACTS}
    inputs: dict[str, Any] = {"facts": read, "probes": answers, "framework": framework, "prefer": prefer}
    added = _added_plugins()
    if added:
        inputs["plugins"] = added  # their namespaces are in the context the advice is decided on
    return _key("advice", inputs, [*rules_files(), *rule_files], _code_stamp(ADVICE_CODE_DIRS))


def decide(context: dict[str, Any], rule_files: Iterable[str | os.PathLike[str]] = ()) -> dict[str, Any]:
    """evaluate(load_rules(rule_files), context), from the cache when the same inputs were seen."""
    return _decide(context, tuple(rule_files))[0]


def decision_key(context: dict[str, Any], rule_files: Iterable[str | os.PathLike[str]] = ()) -> str | None:
    """The cache key of the decision for `context`; None when it cannot be named safely."""
    return _key("decision", context, [*policy_files(), *rule_files], _code_stamp())


def _decide(
    context: dict[str, Any], site: tuple[str | os.PathLike[str], ...]
) -> tuple[dict[str, Any], str | None]:
    """The decision's fields, and the key of the cache entry that holds them (None when none does)."""
    key = decision_key(context, site)
    target = {"framework": context["framework"], "backend": context["backend"]}
    if key is not None:
        remembered = _fields(cached_document(key), key, target)
        if remembered is not None:
            return remembered, key
    # Imported here: a remembered decision needs neither the rules loader nor CEL (~25 ms).
    from hwcheck.engine.evaluate import evaluate
    from hwcheck.engine.rules import load_rules

    fields = evaluate(load_rules(site), context)
    # A rule error may come from the clock (an expression past its time limit): never remembered.
    if key is None or any(finding.id == "rule-error" for finding in fields["findings"]):
        return fields, None
    store_document(key, _entry(fields, key))
    return fields, key


def _key(kind: str, inputs: Any, paths: list[Any], code: str) -> str | None:
    files = [(os.fspath(path), file_key(path)) for path in paths]
    if any(content is None for _, content in files):
        return None  # unreadable: loading the rules says what is wrong
    try:
        variables = json.dumps(_checked(inputs), sort_keys=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None  # a value JSON cannot write exactly: evaluated every time
    names = "\0".join(f"{path}\0{content}" for path, content in files)
    # surrogatepass: a fact may carry a lone surrogate (a file name read as bytes), and must still hash.
    parts = (
        names.encode("utf-8", "surrogatepass"),
        code.encode(),
        variables.encode("utf-8", "surrogatepass"),
    )
    return cache_key(kind, *parts)


def _answer(status: Any) -> Any:
    return [status.get("status"), status.get("reason")] if isinstance(status, dict) else status


def _code_stamp(directories: tuple[str, ...] = CODE_DIRS) -> str:
    # An editable install changes the code without changing the version: each file's
    # size and modification time stand for its contents.
    stamps = []
    try:
        for directory in directories:
            with os.scandir(os.path.join(PACKAGE, directory)) as entries:
                for entry in entries:
                    if entry.name.endswith((".py", ".json")):
                        info = entry.stat()
                        stamps.append(f"{directory}/{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    except OSError:
        return ""
    return "\0".join(sorted(stamps))


def _checked(value: Any, depth: int = 0) -> Any:
    """`value` itself when JSON writes it exactly as the rules read it; raises TypeError otherwise."""
    # json.dumps would turn {1: x} into {"1": x}: a context holding any such value is not named.
    if depth > 64:
        raise TypeError("nested too deeply")
    if value is None or type(value) in (str, int, float, bool):
        return value
    if type(value) is dict:
        for name, item in value.items():
            if type(name) is not str:
                raise TypeError(f"key {name!r} is not text")
            _checked(item, depth + 1)
        return value
    if type(value) in (list, tuple):
        for item in value:
            _checked(item, depth + 1)
        return value
    raise TypeError(f"{type(value).__name__} has no exact JSON form")


def _entry(fields: dict[str, Any], key: str) -> dict[str, Any]:
    return {
        "key": key,
        "policy": fields["policy"],
        "device": fields["device"],
        "runtime": fields["runtime"],
        "tf32": fields["tf32"],
        "fp8": dict(fields["fp8"]),
        "measure": {"candidates": list(fields["measure"]["candidates"]), "why": fields["measure"]["why"]},
        "reasons": [list(reason) for reason in fields["reasons"]],
        "findings": [list(finding) for finding in fields["findings"]],
        "rejected": {policy: list(why) for policy, why in fields["rejected"].items()},
    }


def _advice(entry: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The decision's fields from an advice entry and the decision entry it names, or None."""
    if entry is None or entry.get("key") != key:
        return None
    decision, framework, backend, apply = (
        entry.get(name) for name in ("decision", "framework", "backend", "apply")
    )
    if not isinstance(decision, str) or framework not in FRAMEWORKS or backend not in BACKENDS:
        return None
    if not isinstance(apply, list) or not all(isinstance(line, str) for line in apply):
        return None
    target = {"framework": framework, "backend": backend}
    return _fields(cached_document(decision), decision, target, tuple(apply))


def _fields(
    entry: dict[str, Any] | None, key: str, target: dict[str, str], apply: tuple[str, ...] | None = None
) -> dict[str, Any] | None:
    """The decision's fields from a cache entry, or None when the entry is not exactly one.

    `apply` are the lines an advice entry remembered; without them they are written afresh.
    """
    if entry is None or entry.get("key") != key:
        return None
    policy, device, tf32 = entry.get("policy"), entry.get("device"), entry.get("tf32")
    reasons, findings, rejected = entry.get("reasons"), entry.get("findings"), entry.get("rejected")
    runtime = entry.get("runtime")
    if (
        policy not in POLICIES
        or device not in DEVICES
        or runtime not in RUNTIMES
        or not isinstance(tf32, bool)
    ):
        return None
    if not isinstance(reasons, list) or not isinstance(findings, list) or not isinstance(rejected, dict):
        return None
    if not all(_texts(reason, 2, 2) for reason in reasons) or not all(_finding(f) for f in findings):
        return None
    if not all(name in POLICIES and _texts(why, 1, 1) for name, why in rejected.items()):
        return None
    fp8 = entry.get("fp8")
    if not isinstance(fp8, dict) or not _fp8(fp8):
        return None
    measure = entry.get("measure")
    if not isinstance(measure, dict) or not _measure(measure):
        return None
    if apply is None:
        from hwcheck.engine.native import apply_lines  # with the frameworks table it reads

        # Written fresh: the lines come from rules/knowledge/frameworks.toml, outside the decision's key.
        apply = apply_lines({**decision_of(policy, device, tf32, runtime), **target})
    return dict(
        policy=policy,
        device=device,
        runtime=runtime,
        loss_scaling=policy == "mixed_float16",
        reasons=tuple(Reason(*reason) for reason in reasons),
        findings=tuple(Finding(*finding) for finding in findings),
        framework=target["framework"],
        rejected={name: tuple(why) for name, why in rejected.items()},
        backend=target["backend"],
        tf32=tf32,
        apply=apply,
        fp8=dict(fp8),
        measure={"candidates": list(measure["candidates"]), "why": measure["why"]},
    )


def _measure(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"candidates", "why"}
        and isinstance(value["candidates"], list)
        and all(name in MEASURABLE for name in value["candidates"])
        and isinstance(value["why"], str)
    )


def _fp8(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) - {"recipes"} == {"available", "reason", "recipe"}
        and (value["available"] is None or isinstance(value["available"], bool))
        and isinstance(value["reason"], str)
        and isinstance(value["recipe"], str)
        and _recipes(value.get("recipes", {}))
    )


def _recipes(value: Any) -> bool:
    """fp8.recipes: recipe -> {available, reason, source} (hwcheck/engine/low_precision.py)."""
    return isinstance(value, dict) and all(
        isinstance(name, str)
        and isinstance(row, dict)
        and set(row) == {"available", "reason", "source"}
        and (row["available"] is None or isinstance(row["available"], bool))
        and isinstance(row["reason"], str)
        and isinstance(row["source"], str)
        for name, row in value.items()
    )


def _texts(value: Any, least: int, most: int) -> bool:
    return isinstance(value, list) and least <= len(value) <= most and all(isinstance(v, str) for v in value)


def _finding(value: Any) -> bool:
    if not isinstance(value, list) or len(value) != 5 or value[1] not in SEVERITIES:
        return False
    texts, optional = (value[0], value[2]), value[3:]
    return all(isinstance(v, str) for v in texts) and all(v is None or isinstance(v, str) for v in optional)
