"""The decision for a context, remembered in the private cache by everything it was computed from.

Loading the CEL extension and compiling the rules costs doctor ~25 ms a run, more than half
of its budget, and compiled CEL programs cannot be stored (they do not pickle, and the
library offers no other form). What can be stored is what evaluate() returns for one
context: a pure function of the context's variables (everything a rule can read), the
rules files' bytes, hwcheck, Python and CEL (cache_key's stamp) and the engine's own code.
An entry is named by all of them, so any change to any of them misses and evaluates again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hwcheck.base.tables import cache_key, cached_document, content_key, policy_files, store_document
from hwcheck.engine.native import apply_lines
from hwcheck.engine.outcome import DEVICES, POLICIES, SEVERITIES, Finding, Reason, decision_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Where the code and data that turn a context into a decision live, besides the rules:
# the engine, the base it reads files and versions with, and the schema site rules meet.
PACKAGE = Path(__file__).parent.parent
CODE_DIRS = (PACKAGE / "engine", PACKAGE / "base", PACKAGE / "facts" / "schema")


def decide(context: dict[str, Any], site_files: Iterable[str | Path] = ()) -> dict[str, Any]:
    """evaluate(load_rules(site_files), context), from the cache when the same inputs were seen."""
    site = tuple(site_files)
    key = decision_key(context, site)
    if key is not None:
        remembered = _fields(cached_document(key), key, context)
        if remembered is not None:
            return remembered
    # Imported here: a remembered decision needs neither the rules loader nor CEL (~25 ms).
    from hwcheck.engine.evaluate import evaluate
    from hwcheck.engine.rules import load_rules

    fields = evaluate(load_rules(site), context)
    # A rule error may come from the clock (an expression past its time limit): never remembered.
    if key is not None and not any(finding.id == "rule-error" for finding in fields["findings"]):
        store_document(key, _entry(fields, key))
    return fields


def decision_key(context: dict[str, Any], site_files: Iterable[str | Path] = ()) -> str | None:
    """The cache key of the decision for `context`; None when it cannot be named safely."""
    paths = [*policy_files(), *(Path(path) for path in site_files)]
    files = [(str(path), content_key(path)) for path in paths]
    contents = [key for _, key in files]
    if any(content is None for content in contents):
        return None  # unreadable: loading the rules says what is wrong
    try:
        variables = json.dumps(_checked(context), sort_keys=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None  # a value JSON cannot write exactly: evaluated every time
    names = "\0".join(f"{path}\0{content}" for path, content in files)
    # surrogatepass: a fact may carry a lone surrogate (a file name read as bytes), and must still hash.
    parts = (
        names.encode("utf-8", "surrogatepass"),
        _code_stamp().encode(),
        variables.encode("utf-8", "surrogatepass"),
    )
    return cache_key("decision", *parts)


def _code_stamp() -> str:
    # An editable install changes the code without changing the version: each file's
    # size and modification time stand for its contents.
    stamps = []
    try:
        for directory in CODE_DIRS:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.name.endswith((".py", ".json")):
                        info = entry.stat()
                        stamps.append(f"{directory.name}/{entry.name}:{info.st_size}:{info.st_mtime_ns}")
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
        "tf32": fields["tf32"],
        "fp8": dict(fields["fp8"]),
        "reasons": [list(reason) for reason in fields["reasons"]],
        "findings": [list(finding) for finding in fields["findings"]],
        "rejected": {policy: list(why) for policy, why in fields["rejected"].items()},
    }


def _fields(entry: dict[str, Any] | None, key: str, context: dict[str, Any]) -> dict[str, Any] | None:
    """The decision's fields from a cache entry, or None when the entry is not exactly one."""
    if entry is None or entry.get("key") != key:
        return None
    policy, device, tf32 = entry.get("policy"), entry.get("device"), entry.get("tf32")
    reasons, findings, rejected = entry.get("reasons"), entry.get("findings"), entry.get("rejected")
    if policy not in POLICIES or device not in DEVICES or not isinstance(tf32, bool):
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
    target = {"framework": context["framework"], "backend": context["backend"]}
    return dict(
        policy=policy,
        device=device,
        loss_scaling=policy == "mixed_float16",
        reasons=tuple(Reason(*reason) for reason in reasons),
        findings=tuple(Finding(*finding) for finding in findings),
        framework=target["framework"],
        rejected={name: tuple(why) for name, why in rejected.items()},
        backend=target["backend"],
        tf32=tf32,
        # Written fresh: the lines come from rules/knowledge/frameworks.toml, outside the key.
        apply=apply_lines({**decision_of(policy, device, tf32), **target}),
        fp8=dict(fp8),
    )


def _fp8(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"available", "reason", "recipe"}
        and isinstance(value["available"], bool)
        and isinstance(value["reason"], str)
        and isinstance(value["recipe"], str)
    )


def _texts(value: Any, least: int, most: int) -> bool:
    return isinstance(value, list) and least <= len(value) <= most and all(isinstance(v, str) for v in value)


def _finding(value: Any) -> bool:
    if not isinstance(value, list) or len(value) != 5 or value[1] not in SEVERITIES:
        return False
    texts, optional = (value[0], value[2]), value[3:]
    return all(isinstance(v, str) for v in texts) and all(v is None or isinstance(v, str) for v in optional)
