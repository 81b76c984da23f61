"""Scores hwcheck against the corpus of real machines: one verdict per case, and the totals.

Each case is a facts file in cases/ (reconstructed from a public issue) and a table in
cases.toml with the right answer. hwcheck advises the case the way `hwcheck doctor --facts`
does (same loader, same rules, exit status 1 when a finding is error-level) and the verdict
compares that with the answer. Shared by tests/test_corpus.py and benchmarks/corpus_score.py.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from hwcheck.commands import read_machine, recommend_for
from hwcheck.recommendation import DEVICES, FRAMEWORKS, POLICIES, Recommendation

CORPUS = Path(__file__).resolve().parent
CASES_DIR = CORPUS / "cases"
ANSWERS_FILE = CORPUS / "cases.toml"
# The atlas's cases (tests/corpus/atlas/*.toml), one file per group of classes, same tables.
ATLAS_ANSWERS = CORPUS / "atlas"

# Keras 3 runs on a backend; hwcheck checks the backend's build (recorded as `backend`).
CASE_FRAMEWORKS = (*FRAMEWORKS, "keras")
REQUIRED_KEYS = (
    "source",
    "framework",
    "class",
    "what_happened",
    "healthy",
    "exit_status",
    "policy",
    "device",
    "must_mention",
)


class Case(NamedTuple):
    """One machine of the corpus and the right answer for it."""

    name: str
    facts_path: Path
    source: str
    framework: str
    backend: str
    bug_class: str
    what_happened: str
    healthy: bool
    exit_status: int
    policy: str | None
    device: str | None
    must_mention: tuple[str, ...]
    # FP8 training available there (recommendation.fp8): true, false, "unknown" (null), or None: not said.
    fp8: bool | str | None = None

    @property
    def hwcheck_framework(self) -> str:
        """The --framework hwcheck is run with: the backend for Keras 3 cases."""
        return self.backend if self.framework == "keras" else self.framework


class Verdict(NamedTuple):
    """How hwcheck's answer for one case compares with the right one."""

    case: Case
    exit_status: int
    policy: str
    device: str
    problems: tuple[str, ...]

    @property
    def right(self) -> bool:
        """Exit status, policy, device and the words the finding must contain all match."""
        return not self.problems

    @property
    def error_caught(self) -> bool:
        """A case where training fails got exit status 1."""
        return self.case.exit_status == 1 and self.exit_status == 1

    @property
    def false_alarm(self) -> bool:
        """A healthy setup got an error-level finding."""
        return self.case.healthy and self.exit_status == 1


class Totals(NamedTuple):
    """The corpus score."""

    cases: int
    right: int
    errors: int
    errors_caught: int
    healthy: int
    false_alarms: int


def load_cases(answers_file: Path | None = None, cases_dir: Path = CASES_DIR) -> list[Case]:
    """Every case of cases.toml and the atlas's files, checked; raises ValueError naming the case."""
    files = [answers_file] if answers_file else [ANSWERS_FILE, *sorted(ATLAS_ANSWERS.glob("*.toml"))]
    cases: dict[str, Case] = {}
    for path in files:
        with path.open("rb") as handle:
            answers = tomllib.load(handle)
        for name, table in answers.items():
            if name in cases:
                raise ValueError(f"{path.name} [{name}]: a case of that name is already in another file")
            cases[name] = _case(name, table, cases_dir)
    return list(cases.values())


def _case(name: str, table: dict[str, Any], cases_dir: Path) -> Case:
    missing = [key for key in REQUIRED_KEYS if key not in table]
    if missing:
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: missing {', '.join(missing)}")
    framework = table["framework"]
    if framework not in CASE_FRAMEWORKS:
        raise ValueError(
            f"{ANSWERS_FILE.name} [{name}]: framework {framework!r} is not one of {CASE_FRAMEWORKS}"
        )
    backend = table.get("backend", "")
    if framework == "keras" and backend not in FRAMEWORKS:
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: a keras case needs backend = one of {FRAMEWORKS}")
    if table["exit_status"] not in (0, 1):
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: exit_status must be 0 or 1")
    if table["healthy"] and table["exit_status"] != 0:
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: a healthy case has exit_status 0")
    if table.get("policy") not in (None, *POLICIES):
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: unknown policy {table['policy']!r}")
    if table.get("device") not in (None, *DEVICES):
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: unknown device {table['device']!r}")
    if table.get("fp8") not in (None, True, False, "unknown"):
        raise ValueError(f'{ANSWERS_FILE.name} [{name}]: fp8 must be true, false or "unknown"')
    if not str(table["source"]).startswith("https://"):
        raise ValueError(f"{ANSWERS_FILE.name} [{name}]: source must be an https URL")
    return Case(
        name=name,
        facts_path=cases_dir / f"{name}.json",
        source=table["source"],
        framework=framework,
        backend=backend,
        bug_class=table["class"],
        what_happened=table["what_happened"],
        healthy=bool(table["healthy"]),
        exit_status=int(table["exit_status"]),
        policy=table.get("policy"),
        device=table.get("device"),
        must_mention=tuple(table["must_mention"]),
        fp8=table.get("fp8"),
    )


def advise(case: Case) -> Recommendation:
    """hwcheck's recommendation for the case, taken as `hwcheck doctor --facts FILE` takes it."""
    args = argparse.Namespace(facts=str(case.facts_path), cpuinfo=None, rules=[], prefer=None, timeout=5.0)
    machine = read_machine(args)
    return recommend_for(args, machine.facts, machine.probes, framework=case.hwcheck_framework)


def exit_status(recommendation: Recommendation) -> int:
    """The exit status `hwcheck doctor` gives for this recommendation."""
    return 1 if recommendation.has_errors else 0


def judge(case: Case, recommendation: Recommendation) -> Verdict:
    """Compare hwcheck's recommendation for `case` with the right answer."""
    status = exit_status(recommendation)
    problems = []
    if status != case.exit_status:
        problems.append(f"exit status {status}, expected {case.exit_status}")
    if case.policy and recommendation.policy != case.policy:
        problems.append(f"policy {recommendation.policy}, expected {case.policy}")
    if case.device and recommendation.device != case.device:
        problems.append(f"device {recommendation.device}, expected {case.device}")
    expected_fp8 = None if case.fp8 == "unknown" else case.fp8
    if case.fp8 is not None and recommendation.fp8["available"] is not expected_fp8:
        problems.append(f"FP8 available {recommendation.fp8['available']}, expected {case.fp8}")
    text = _relevant_text(case, recommendation).lower()
    absent = [word for word in case.must_mention if word.lower() not in text]
    if absent:
        problems.append(f"{_relevant_name(case)} do not mention {', '.join(absent)}")
    return Verdict(case, status, recommendation.policy, recommendation.device, tuple(problems))


def _relevant_text(case: Case, recommendation: Recommendation) -> str:
    """Where the words must appear: the errors for a failing machine, the warnings for a
    degraded one, anything hwcheck says for a healthy one."""
    if case.exit_status == 1:
        severities: tuple[str, ...] = ("error",)
    elif not case.healthy:
        severities = ("warning", "error")
    else:
        severities = ("info", "warning", "error")
    parts = [f"{f.message} {f.remedy or ''}" for f in recommendation.findings if f.severity in severities]
    if case.healthy:
        parts += [reason.message for reason in recommendation.reasons]
    if case.fp8 is not None:
        parts.append(recommendation.fp8["reason"])
        parts += [recipe["reason"] for recipe in recommendation.fp8.get("recipes", {}).values()]
    return "\n".join(parts)


def _relevant_name(case: Case) -> str:
    if case.exit_status == 1:
        return "the error findings"
    return "the warnings" if not case.healthy else "the findings and reasons"


def score_all(cases: list[Case]) -> list[Verdict]:
    """A verdict for every case."""
    return [judge(case, advise(case)) for case in cases]


def totals(verdicts: list[Verdict]) -> Totals:
    """Right answers, real errors caught of all, false alarms on healthy setups."""
    return Totals(
        cases=len(verdicts),
        right=sum(v.right for v in verdicts),
        errors=sum(v.case.exit_status == 1 for v in verdicts),
        errors_caught=sum(v.error_caught for v in verdicts),
        healthy=sum(v.case.healthy for v in verdicts),
        false_alarms=sum(v.false_alarm for v in verdicts),
    )
