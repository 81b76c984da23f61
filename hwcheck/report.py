"""The JSON report: what doctor --json prints and `hwcheck report` writes."""

from __future__ import annotations

import json
import os
from datetime import UTC
from pathlib import Path
from typing import Any

from hwcheck import __version__
from hwcheck.facts import SCHEMA_VERSION
from hwcheck.recommendation import Recommendation

# Fields that identify one physical machine or board; --redact removes them.
IDENTIFYING_GPU_FIELDS = ("uuid", "serial", "pci_bus_id")


def build_report(
    facts: dict[str, Any],
    probes: dict[str, dict[str, Any]],
    recommendation: Recommendation | None,
    *,
    stamped: bool = False,
    redact: bool = False,
) -> dict[str, Any]:
    """Assemble a report; `stamped` adds the time and host an inventory needs."""
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "hwcheck_version": __version__,
    }
    if stamped:
        import socket
        from datetime import datetime

        report["time"] = datetime.now(UTC).isoformat(timespec="seconds")
        report["host"] = None if redact else socket.gethostname()
    report["facts"] = redacted_facts(facts) if redact else facts
    report["probes"] = probes
    report["recommendation"] = recommendation.to_dict() if recommendation else None
    if redact:
        report["redacted"] = True
    return report


def redacted_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """A copy of `facts` without GPU UUIDs, serials and bus ids, or the interpreter's path."""
    import copy

    clean = copy.deepcopy(facts)
    for gpu in clean.get("gpus") or []:
        for key in IDENTIFYING_GPU_FIELDS:
            gpu.pop(key, None)
    python = clean.get("python")
    if isinstance(python, dict):
        python.pop("executable", None)
    return clean


def to_json(report: dict[str, Any]) -> str:
    """The report as pretty-printed JSON text ending in a newline."""
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename, so readers never see half."""
    import tempfile

    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=directory, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_output(path: str | Path, text: str) -> None:
    """write_atomic for a file the user named: a failure is an InputError naming the file."""
    from hwcheck.errors import InputError

    try:
        write_atomic(path, text)
    except OSError as error:
        raise InputError(path, f"cannot write: {error.strerror or error}") from None
