"""One report in an inventory: read, validated, and reduced to what the merge needs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hwcheck.errors import InputError
from hwcheck.facts import SCHEMA_VERSION, read_json, schema_problem
from hwcheck.inventory.classes import HardwareClass, hardware_class

# (id, severity, message, remedy), as in the report.
FindingRow = tuple[str, str, str, str | None]
REPORT_KEYS = ("schema_version", "facts", "recommendation")
# Top-level keys of a facts file (hwcheck/schema/facts.schema.json).
FACTS_KEYS = frozenset(
    {"cpu", "gpus", "nvidia_driver", "pci", "cuda", "cudnn", "tpu", "frameworks", "os", "python"}
)


@dataclass(frozen=True)
class Rejected:
    """A report that could not be merged (or a Ray node that gave none), and why."""

    source: str
    reason: str


@dataclass
class NodeReport:
    """One node's report, reduced: identity, hardware class, and the recommendation."""

    source: str
    host: str | None
    time: datetime | None
    hardware: HardwareClass
    policy: str | None
    device: str | None
    loss_scaling: bool | None
    findings: tuple[FindingRow, ...] = ()
    node_id: str | None = None

    @property
    def identity(self) -> tuple[str, str]:
        """Two reports with the same identity describe the same node (the newer one counts)."""
        if self.host is None:  # redacted or unstamped: the file is all we know
            return ("source", self.source)
        return (self.host, self.node_id or "")

    @property
    def name(self) -> str:
        """How the node is shown: its host name, else where its report came from."""
        return self.host if self.host is not None else self.source

    @property
    def errors(self) -> tuple[FindingRow, ...]:
        """The error-level findings."""
        return tuple(finding for finding in self.findings if finding[1] == "error")


def read_report(path: str | Path) -> dict[str, Any]:
    """Read and validate one report file; InputError names the file and the problem."""
    document = read_json(path)
    problem = report_problem(document)
    if problem:
        raise InputError(path, problem)
    return document


def report_problem(document: Any) -> str | None:
    """Why `document` is not a usable hwcheck report, or None when it is one."""
    if not isinstance(document, dict):
        return f"not a hwcheck report: expected a JSON object, got {_json_type(document)}"
    if not any(key in document for key in REPORT_KEYS):
        return "not a hwcheck report: a JSON object without schema_version, facts or recommendation"
    version = document.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        return f"schema_version {version!r} is not supported (this hwcheck reads {SCHEMA_VERSION})"
    if "facts" not in document and FACTS_KEYS.intersection(document):
        return "a facts file, not a report: make reports with `hwcheck report -o FILE`"
    problem = schema_problem(document, "report")
    if problem:
        return f"not a valid report: {problem}"
    if document.get("time") is not None and parse_time(document["time"]) is None:
        return f"time: {document['time']!r} is not an ISO 8601 date-time"
    return None


def parse_time(text: str) -> datetime | None:
    """A report's time as an aware datetime (UTC when it names no zone); None if unreadable."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Summarizer:
    """Reduces valid reports to NodeReports, sharing equal classes and findings between nodes."""

    def __init__(self) -> None:
        # Thousands of nodes share a handful of classes and finding texts; keeping one
        # copy of each keeps a 50,000-report merge small.
        self._shared: dict[Any, Any] = {}

    def summarize(self, report: dict[str, Any], source: str, *, node_id: str | None = None) -> NodeReport:
        """The NodeReport of a report that passed report_problem()."""
        recommendation = report.get("recommendation") or {}
        findings = tuple(
            self._share((f["id"], f["severity"], f["message"], f.get("remedy")))
            for f in recommendation.get("findings") or ()
        )
        time = report.get("time")
        return NodeReport(
            source=source,
            host=report.get("host"),
            time=parse_time(time) if time else None,
            hardware=self._share(hardware_class(report["facts"])),
            policy=recommendation.get("policy"),
            device=recommendation.get("device"),
            loss_scaling=recommendation.get("loss_scaling"),
            findings=self._share(findings),
            node_id=node_id,
        )

    def _share(self, value: Any) -> Any:
        return self._shared.setdefault(value, value)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")
