"""Merging reports: newest report per node, nodes grouped into classes, the shared policy."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.inventory.classes import HardwareClass, SpeedupKey, measured_speedups
from hwcheck.inventory.cluster import SHARED_PREFERENCE, ClusterPolicy, shared_policy
from hwcheck.inventory.drift import JobGroup, VersionDrift, find_drift, unmatched
from hwcheck.inventory.node_class import ClassFinding, ClassSpeedup, NodeClass
from hwcheck.inventory.reports import NodeReport, Rejected, Summarizer, read_report

# The exit status of a gate that failed (inventory --strict), as doctor's (commands/doctor.py).
EXIT_GATE = 3
ClassKey = tuple[HardwareClass, str | None, str | None]
# (facts, probes, framework, recommended policy) -> the policies such a class runs well
RunsWell = Callable[[dict[str, Any], dict[str, Any], str, str | None], tuple[str, ...]]


@dataclass
class Superseded:
    """A report that lost to a newer one for the same node."""

    kept: NodeReport
    dropped: NodeReport

    def reason(self) -> str:
        """Why `dropped` does not count."""
        kept, dropped = self.kept, self.dropped
        if dropped.time is None and kept.time is not None:
            return f"has no time; {kept.source} ({_when(kept.time)}) counts"
        if kept.time == dropped.time:
            return f"same time as {kept.source}, which was read later and counts"
        return f"older ({_when(dropped.time)}) than {kept.source} ({_when(kept.time)})"


@dataclass
class Inventory:
    """The merged picture of a cluster."""

    classes: list[NodeClass]
    cluster: ClusterPolicy
    rejected: list[Rejected]
    superseded: list[Superseded]
    reports_read: int
    drift: list[VersionDrift] = field(default_factory=list)
    job_groups: tuple[JobGroup, ...] = ()
    # (job group, host or pattern) that no merged report matched
    unmatched: list[tuple[str, str]] = field(default_factory=list)
    # inventory --strict: a node that warns or drifts is not ready, and the exit status says so
    strict: bool = False

    @property
    def nodes(self) -> int:
        """Nodes merged (after duplicates were dropped)."""
        return sum(len(c.nodes) for c in self.classes)

    @property
    def gains(self) -> list[NodeClass]:
        """Classes that would train in a better policy with a per-class setting."""
        return [c for c in self.classes if c.policy is not None and c.policy != self.cluster.policy]

    @property
    def error_nodes(self) -> list[tuple[NodeReport, NodeClass]]:
        """Nodes with error-level findings and their class, by name."""
        found = [(node, c) for c in self.classes for node in c.nodes if node.errors]
        return sorted(found, key=lambda pair: pair[0].name)

    @cached_property  # the classes are complete when the merge returns the inventory
    def readiness(self) -> dict[bool | None, list[NodeReport]]:
        """The nodes by readiness, by name: True ready, False not, None unknown (nothing advised)."""
        found: dict[bool | None, list[NodeReport]] = {True: [], False: [], None: []}
        for node_class in self.classes:
            for node in node_class.nodes:
                found[node.readiness["ready"]].append(node)
        return {state: sorted(nodes, key=lambda node: node.name) for state, nodes in found.items()}

    @cached_property
    def drifted(self) -> dict[str, list[str]]:
        """Node name -> the components whose version differs from another node's of its group."""
        found: dict[str, list[str]] = defaultdict(list)
        for drift in self.drift:
            for _version, nodes in drift.versions:
                for name in nodes:
                    if drift.component not in found[name]:
                        found[name].append(drift.component)
        return dict(found)

    def cautions(self, node: NodeReport) -> list[str]:
        """What keeps a node without errors from being plainly ready: its node checks that warn,
        and each component whose version drifts from its group's ("NCCL drift")."""
        return [*node.readiness["warnings"], *(f"{c} drift" for c in self.drifted.get(node.name, ()))]

    @cached_property
    def warned(self) -> list[NodeReport]:
        """The nodes without errors that warn or drift, by name: "ready with warnings", or under
        --strict not ready."""
        return [node for node in self.readiness[True] if self.cautions(node)]

    def node_state(self, node: NodeReport) -> dict[str, Any]:
        """The node's readiness as the inventory reports it: its report's, with `drift` added and,
        under --strict, `ready` false where it warns or drifts."""
        state = {**node.readiness, "drift": list(self.drifted.get(node.name, ()))}
        if self.strict and state["ready"] is True and self.cautions(node):
            state["ready"] = False
        return state

    @property
    def gate_failed(self) -> bool:
        """--strict: a node is not plainly ready (an error, a warning, drift, no advice) or a job
        group's host has no report."""
        unready = self.readiness[False] or self.readiness[None] or self.warned
        return self.strict and bool(unready or self.unmatched)

    @property
    def exit_status(self) -> int:
        """1 when any report was rejected; else 3 when --strict failed; 0 when all merged."""
        if self.rejected:
            return 1
        return EXIT_GATE if self.gate_failed else 0


class Merger:
    """Takes reports one at a time (memory stays per node, not per report) and merges them."""

    def __init__(self, framework: str | None = None) -> None:
        # `framework` re-advises every report for that framework (inventory --framework); None
        # keeps the advice each report carries, for the framework it names.
        self.framework = framework
        self._summarizer = Summarizer()
        self._nodes: dict[tuple[str, str], NodeReport] = {}
        self._dropped: dict[tuple[str, str], list[NodeReport]] = defaultdict(list)
        # inventory --framework: the newest report of each node so far, advised again in finish().
        self._pending: dict[tuple[str, str], tuple[NodeReport, dict[str, Any], str, str | None]] = {}
        # The bench speed-ups of the report that counts for each node.
        self._speedups: dict[tuple[str, str], dict[SpeedupKey, float]] = {}
        # One report's facts per class: the engine is asked what else the class runs well.
        self._examples: dict[ClassKey, tuple[dict[str, Any], dict[str, Any], str]] = {}
        self.rejected: list[Rejected] = []
        self.reports_read = 0

    def add_files(self, paths: Iterable[Path | Rejected]) -> None:
        """Read, validate and add each report file; a bad one is rejected, never fatal."""
        for path in paths:
            if isinstance(path, Rejected):
                self.rejected.append(path)
                continue
            try:
                report = read_report(path)
            except InputError as error:
                self.reject(str(path), error.problem)
            else:
                self.add(report, str(path))

    def reject(self, source: str, reason: str) -> None:
        """Record a report (or a Ray node) that could not be merged."""
        self.reports_read += 1
        # One line per rejection whatever the report held: a key with a newline is named, not split.
        self.rejected.append(Rejected(source, " ".join(reason.splitlines()) or "rejected"))

    def add(self, report: dict[str, Any], source: str, *, node_id: str | None = None) -> None:
        """Add a report already checked by report_problem(); the newest per node counts."""
        self.reports_read += 1
        if self.framework is None:
            self._merge(report, source, node_id)
            return
        # Advising again costs the rules engine: only the newest report of each node is, in finish().
        node = self._summarizer.summarize(report, source, node_id=node_id)
        current = self._pending.get(node.identity)
        if current is None or _newer(node, current[0]):
            if current is not None:
                self._dropped[node.identity].append(current[0])
            self._pending[node.identity] = (node, report, source, node_id)
        else:
            self._dropped[node.identity].append(node)

    def _merge(self, report: dict[str, Any], source: str, node_id: str | None) -> None:
        node = self._summarizer.summarize(report, source, node_id=node_id)
        key = (node.hardware, node.policy, node.device)
        if key not in self._examples:
            framework = (report.get("recommendation") or {}).get("framework") or "tensorflow"
            self._examples[key] = (report["facts"], report.get("probes") or {}, framework)
        identity = node.identity
        current = self._nodes.get(identity)
        if current is None:
            self._nodes[identity] = node
        elif _newer(node, current):
            self._nodes[identity] = node
            self._dropped[identity].append(current)
        else:
            self._dropped[identity].append(node)
        if self._nodes[identity] is node:
            self._speedups[identity] = measured_speedups(report)

    def finish(
        self,
        runs_well: RunsWell | None = None,
        job_groups: tuple[JobGroup, ...] = (),
        *,
        strict: bool = False,
    ) -> Inventory:
        """Group the nodes into classes, derive the shared policy, find version drift.

        `job_groups` are those of `--group`: drift is sought within each; without them,
        within each set of nodes with the same hardware.
        """
        runs_well = runs_well or engine_runs_well()
        for _, report, source, node_id in self._pending.values():
            self._merge(readvised(report, str(self.framework)), source, node_id)
        self._pending.clear()
        groups: dict[ClassKey, list[NodeReport]] = defaultdict(list)
        for node in self._nodes.values():
            groups[(node.hardware, node.policy, node.device)].append(node)
        ordered = sorted(groups.items(), key=lambda item: _class_order(item[0], item[1]))
        classes = []
        for number, (key, nodes) in enumerate(ordered, start=1):
            hardware, policy, device = key
            facts, probes, framework = self._examples[key]
            classes.append(
                NodeClass(
                    id=f"C{number}",
                    hardware=hardware,
                    policy=policy,
                    device=device,
                    loss_scaling=nodes[0].loss_scaling,
                    nodes=sorted(nodes, key=lambda node: node.name),
                    runs_well=runs_well(facts, probes, framework, policy),
                    findings=_class_findings(nodes),
                    speedups=_class_speedups([self._speedups.get(node.identity) or {} for node in nodes]),
                    framework=framework,
                )
            )
        superseded = [
            Superseded(self._nodes[identity], dropped)
            for identity, drops in self._dropped.items()
            for dropped in drops
        ]
        return Inventory(
            classes=classes,
            cluster=shared_policy(classes),
            rejected=self.rejected,
            superseded=sorted(superseded, key=lambda s: (s.kept.name, s.dropped.source)),
            reports_read=self.reports_read,
            drift=find_drift(classes, job_groups),
            job_groups=job_groups,
            unmatched=unmatched(classes, job_groups),
            strict=strict,
        )


def readvised(report: dict[str, Any], framework: str) -> dict[str, Any]:
    """`report` with its recommendation made again for `framework` from its own facts (and bench results)."""
    from hwcheck.recommendation import recommend

    facts = dict(report["facts"])
    if report.get("bench") and not facts.get("measurements"):
        facts["measurements"] = {"bench": list(report["bench"])}  # measured here: the rules read it
    advice = recommend(facts, probes=report.get("probes") or None, framework=framework)
    return {**report, "recommendation": advice.to_dict()}


def engine_runs_well(rule_files: Iterable[str | Path] = ()) -> RunsWell:
    """The policies a class runs well, asking the rules engine under each 16-bit preference."""
    files = tuple(rule_files)

    def runs_well(
        facts: dict[str, Any], probes: dict[str, Any], framework: str, policy: str | None
    ) -> tuple[str, ...]:
        if policy is None:
            return ("float32",)
        from hwcheck.recommendation import PREFERENCES, recommend

        found = {policy, "float32"}
        for prefer in PREFERENCES:
            found.add(
                recommend(facts, probes=probes, framework=framework, prefer=prefer, rule_files=files).policy
            )
        return tuple(p for p in SHARED_PREFERENCE if p in found)

    return runs_well


def _newer(candidate: NodeReport, current: NodeReport) -> bool:
    # A report without a time is the oldest; on a tie the one read later wins.
    if candidate.time is None:
        return current.time is None
    return current.time is None or candidate.time >= current.time


def _class_order(key: ClassKey, nodes: list[NodeReport]) -> tuple[Any, ...]:
    hardware, policy, device = key
    return (
        -len(nodes),
        hardware.gpu_text(),
        hardware.cpu_text(),
        hardware.driver_text(),
        hardware.tensorflow_text(),
        policy or "",
        device or "",
    )


def _class_findings(nodes: list[NodeReport]) -> list[ClassFinding]:
    counts: Counter[str] = Counter()
    first: dict[str, tuple[str, str, str, str | None]] = {}
    for node in nodes:
        for finding in {f[0]: f for f in node.findings}.values():
            counts[finding[0]] += 1
            first.setdefault(finding[0], finding)
    severity_rank = {"error": 0, "warning": 1, "info": 2}
    found = [ClassFinding(*first[ident], nodes=count) for ident, count in counts.items()]
    return sorted(found, key=lambda f: (severity_rank.get(f.severity, 3), f.id))


def _class_speedups(measured: list[dict[SpeedupKey, float]]) -> list[ClassSpeedup]:
    from statistics import median

    gathered: dict[SpeedupKey, list[float]] = defaultdict(list)
    for speedups in measured:
        for key, value in speedups.items():
            gathered[key].append(value)
    return [
        ClassSpeedup(*key, speedup=round(median(values), 3), nodes=len(values))
        for key, values in sorted(gathered.items())
    ]


def _when(moment: datetime | None) -> str:
    return moment.isoformat() if moment else "no time"
