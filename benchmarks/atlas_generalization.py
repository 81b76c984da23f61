"""The atlas's generalization test: what fraction of tracker issues opened after a cutoff, which a
tool reading the machine could have predicted, doctor catches with the classes opened before it.

    python benchmarks/atlas_generalization.py

The sample and its pool are in tests/corpus/generalization/sample.toml (how they were taken is
stated there); each predictable issue has a facts file in cases/ holding only what its thread
states. An issue counts as caught when doctor raises the expected rule as an error, and as
flagged when doctor raises it as a warning naming the fact it could not read; the rule must
belong to an atlas class opened before the cutoff (a class built later cannot count).
"""

from __future__ import annotations

import argparse
import random
import sys
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "corpus" / "generalization" / "sample.toml"
CASES = SAMPLE.parent / "cases"


class Judged(NamedTuple):
    """One sampled issue and what doctor said of its facts."""

    url: str
    opened: str
    predictable: bool
    why: str
    rule: str | None
    severity: str | None  # the expected rule's severity on the facts; None: it did not fire
    eligible: bool  # the rule belongs to a class opened before the cutoff


def load_sample(path: Path = SAMPLE) -> dict[str, Any]:
    """The sample file, checked: its issues are exactly the sample drawn from the pool."""
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    meta, issues = document["meta"], document["issue"]
    urls = [issue["url"] for issue in issues]
    if sorted(urls) != sorted(drawn(meta)):
        raise ValueError(f"{path}: the issues are not random.Random({meta['seed']}).sample(pool)")
    for issue in issues:
        if issue["opened"] < meta["cutoff"]:
            raise ValueError(f"{path}: {issue['url']} opened before the cutoff")
        if issue["predictable"] and not all(key in issue for key in ("facts", "framework", "rule")):
            raise ValueError(f"{path}: predictable {issue['url']} needs facts, framework and rule")
    return document


def drawn(meta: dict[str, Any]) -> list[str]:
    """The sample: random.Random(seed).sample(pool, min(sample_size, len(pool)))."""
    pool = list(meta["pool"])
    return random.Random(meta["seed"]).sample(pool, min(meta["sample_size"], len(pool)))


def judge_all(document: dict[str, Any]) -> list[Judged]:
    """Every sampled issue in the order drawn, the predictable ones run through doctor."""
    sys.path[:0] = [str(ROOT)]
    from hwcheck.knowledge.atlas import load_atlas

    cutoff = document["meta"]["cutoff"]
    eligible_rules = {rule for c in load_atlas().classes if c.opened < cutoff for rule in c.rules}
    by_url = {issue["url"]: issue for issue in document["issue"]}
    judged = []
    for url in drawn(document["meta"]):
        issue = by_url[url]
        rule = issue.get("rule")
        severity = _severity(issue) if issue["predictable"] else None
        judged.append(
            Judged(
                url,
                issue["opened"],
                issue["predictable"],
                issue["why"],
                rule,
                severity,
                rule in eligible_rules,
            )
        )
    return judged


def _severity(issue: dict[str, Any]) -> str | None:
    from hwcheck.commands import read_machine, recommend_for

    args = argparse.Namespace(
        facts=str(CASES / f"{issue['facts']}.json"), cpuinfo=None, rules=[], prefer=None, timeout=5.0
    )
    machine = read_machine(args)
    recommendation = recommend_for(args, machine.facts, machine.probes, framework=issue["framework"])
    severities = [f.severity for f in recommendation.findings if f.id == issue["rule"]]
    return "error" if "error" in severities else "warning" if "warning" in severities else None


def figures(judged: list[Judged]) -> dict[str, int]:
    """Sampled, predictable, caught (an error), flagged (a warning naming the unknown), missed."""
    predictable = [j for j in judged if j.predictable]
    caught = sum(j.eligible and j.severity == "error" for j in predictable)
    flagged = sum(j.eligible and j.severity == "warning" for j in predictable)
    return {
        "sampled": len(judged),
        "predictable": len(predictable),
        "caught": caught,
        "flagged": flagged,
        "missed": len(predictable) - caught - flagged,
    }


def main() -> int:
    """Print each sampled issue's verdict and the figure."""
    judged = judge_all(load_sample())
    for j in judged:
        verdict = "unpredictable" if not j.predictable else f"{j.rule}: {j.severity or 'not raised'}"
        print(f"{j.opened}  {j.url}\n    {verdict}")
    result = figures(judged)
    print(
        f"\n{result['predictable']} of {result['sampled']} predictable; doctor catches {result['caught']} "
        f"as errors, flags {result['flagged']} as warnings naming the unknown fact, misses {result['missed']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
