"""One report in an inventory: read, validated, and reduced to what the merge needs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import MAX_MESSAGE
from hwcheck.facts import SCHEMA_VERSION, read_json, schema_problem
from hwcheck.inventory.classes import HardwareClass, hardware_class
from hwcheck.inventory.software import Software, installed_frameworks, node_software

# (id, severity, message, remedy), as in the report.
FindingRow = tuple[str, str, str, str | None]
REPORT_KEYS = ("schema_version", "facts", "recommendation")
# Top-level keys of a facts file (hwcheck/facts/schema/facts.schema.json).
# Longest host, CPU or TPU name taken: a DNS name has at most 253 characters, and a longer
# cell breaks CSV readers (Python's stops at 128 KiB). Finding text: base.inputs.MAX_MESSAGE.
MAX_NAME = 256
# Clocks of cluster nodes drift; a report a little ahead of this machine is still taken.
MAX_CLOCK_SKEW = timedelta(days=1)
FACTS_KEYS = frozenset(
    {"cpu", "gpus", "nvidia_driver", "pci", "cuda", "cudnn", "rocm", "tpu", "frameworks", "os", "python"}
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
    fingerprint: str | None = None
    software: Software = ()  # versions that must agree across a job (inventory/software.py)
    # The frameworks the facts record as installed (facts.installed), a version read or not.
    frameworks: tuple[str, ...] = ()

    @property
    def identity(self) -> tuple[str, str]:
        """Two reports with the same identity describe the same node (the newer one counts)."""
        if self.fingerprint:  # the machine itself, redacted or not, whatever its host is called
            # Ray nodes sharing one machine (and its machine id) are still nodes of their own.
            return ("fingerprint", f"{self.fingerprint} {self.node_id or ''}")
        if self.host is None:  # an older report, redacted or unstamped: the file is all we know
            return ("source", self.source)
        return (self.host, self.node_id or "")

    @property
    def name(self) -> str:
        """How the node is shown: its host name, else where its report came from."""
        return self.host if self.host is not None else self.source

    @cached_property  # read by every view of the inventory; the findings never change after reading
    def readiness(self) -> dict[str, Any]:
        """Whether training can start on the node, from its findings (recommendation/readiness.py);
        `ready` None where its report advised nothing."""
        from hwcheck.recommendation.readiness import readiness

        return readiness(None if self.policy is None else ((f[0], f[1]) for f in self.findings))

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
    if version != SCHEMA_VERSION or isinstance(version, bool):
        return f"schema_version {short_repr(version)} is not supported (this hwcheck reads {SCHEMA_VERSION})"
    if "facts" not in document and FACTS_KEYS.intersection(document):
        return "a facts file, not a report: make reports with `hwcheck report -o FILE`"
    problem = schema_problem(document, "report")
    if problem:
        return f"not a valid report: {problem}"
    problem = _overlong_text(document)
    if problem:
        return problem
    time = document.get("time")
    if time is not None:
        moment = parse_time(time)
        if moment is None:
            return f"time: {short_repr(time)} is not an ISO 8601 date-time"
        # The newest report of a host counts: one dated ahead would hide every real one to come.
        if moment > datetime.now(UTC) + MAX_CLOCK_SKEW:
            return (
                f"time: {short_repr(time)} is in the future (more than a day ahead of this machine's clock)"
            )
    return None


def _overlong_text(report: dict[str, Any]) -> str | None:
    # Text the inventory shows in every format; the schema bounds GPU names and versions only.
    facts = report["facts"]
    fields = [
        ("host", report.get("host"), MAX_NAME),
        ("facts.cpu.model", (facts.get("cpu") or {}).get("model"), MAX_NAME),
        ("facts.cpu.arch", (facts.get("cpu") or {}).get("arch"), MAX_NAME),
        ("facts.tpu.type", (facts.get("tpu") or {}).get("type"), MAX_NAME),
    ]
    for number, finding in enumerate((report.get("recommendation") or {}).get("findings") or ()):
        for key in ("id", "message", "remedy"):
            fields.append((f"recommendation.findings[{number}].{key}", finding.get(key), MAX_MESSAGE))
    for where, value, limit in fields:
        if isinstance(value, str) and len(value) > limit:
            return f"{where}: {short_repr(value, 40)} is longer than {limit} characters"
    return None


def short_repr(value: Any, limit: int = 60) -> str:
    """repr(value) cut to about `limit` characters, for a value quoted in a one-line reason."""
    if isinstance(value, int) and value.bit_length() > 4 * limit:
        # repr() of an integer of more than 4,300 digits raises, and a shorter one is no better.
        return f"an integer of {value.bit_length() * 30103 // 100000 + 1} digits or so"
    try:
        text = repr(value[: limit + 1] if isinstance(value, (str, bytes)) else value)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit + 2 else text[:limit] + "..."


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
            fingerprint=report.get("fingerprint"),
            software=self._share(node_software(report["facts"])),
            frameworks=self._share(installed_frameworks(report["facts"])),
        )

    def _share(self, value: Any) -> Any:
        return self._shared.setdefault(value, value)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")
