"""An inventory as JSON and as CSV (the same content, one record per row)."""

from __future__ import annotations

import csv
import io
from typing import Any

from hwcheck.base import __version__
from hwcheck.base.safe import csv_cell, json_text
from hwcheck.inventory.frameworks import installed_versions
from hwcheck.inventory.merge import Inventory
from hwcheck.inventory.node_class import NodeClass
from hwcheck.inventory.reports import NodeReport

INVENTORY_FORMAT = 1
CSV_COLUMNS = (
    "record",
    "class",
    "nodes",
    "gpus",
    "cpu",
    "cpu_flags",
    "driver",
    "tensorflow",
    "torch",
    "jax",
    "keras",
    "tpu",
    "policy",
    "device",
    "loss_scaling",
    "runs_well",
    "per_class_gain",
    "host",
    "source",
    "node_id",
    "time",
    "finding",
    "severity",
    "message",
    "remedy",
    "reason",
    "workload",
    "framework",
    "variant",
    "speedup",
    "group",
    "component",
    "version",
    "ready",
    "failing",
    "warnings",
)


def inventory_document(inventory: Inventory) -> dict[str, Any]:
    """The inventory as a JSON-ready dict."""
    cluster = inventory.cluster
    gains = {c.id for c in inventory.gains}
    readiness = inventory.readiness
    return {
        "inventory_format": INVENTORY_FORMAT,
        "hwcheck_version": __version__,
        "summary": {
            "reports_read": inventory.reports_read,
            "nodes": inventory.nodes,
            "classes": len(inventory.classes),
            "rejected": len(inventory.rejected),
            "superseded": len(inventory.superseded),
            "ready_nodes": len(readiness[True]),
            "not_ready_nodes": len(readiness[False]),
            "readiness_unknown_nodes": len(readiness[None]),
        },
        "cluster": {
            "frameworks": sorted({node_class.framework for node_class in inventory.classes}),
            "policy": cluster.policy,
            "loss_scaling": cluster.loss_scaling,
            "reasons": cluster.reasons,
            "limited_by": cluster.limited_by,
        },
        "classes": [_class_document(c, c.id in gains) for c in inventory.classes],
        "per_class_gains": [
            {"class": c.id, "policy": c.policy, "cluster_policy": cluster.policy} for c in inventory.gains
        ],
        "error_nodes": [
            {
                **_node_document(node),
                "class": node_class.id,
                "findings": [{"id": f[0], "message": f[2], "remedy": f[3]} for f in node.errors],
            }
            for node, node_class in inventory.error_nodes
        ],
        "version_drift": [
            {
                "group": drift.group,
                "what": drift.what,
                "component": drift.component,
                "versions": [{"version": version, "nodes": list(nodes)} for version, nodes in drift.versions],
            }
            for drift in inventory.drift
        ],
        "job_groups": [
            {
                "name": group.name,
                "hosts": list(group.patterns),
                "unmatched": [pattern for name, pattern in inventory.unmatched if name == group.name],
            }
            for group in inventory.job_groups
        ],
        "rejected": [{"source": r.source, "reason": r.reason} for r in inventory.rejected],
        "superseded": [
            {"host": s.dropped.host, "kept": s.kept.source, "dropped": s.dropped.source, "reason": s.reason()}
            for s in inventory.superseded
        ],
    }


def inventory_json(inventory: Inventory) -> str:
    """The inventory as JSON text: exact for json.loads, safe to print."""
    return json_text(inventory_document(inventory))


def inventory_csv(inventory: Inventory) -> str:
    """The inventory as CSV: a `record` column says what each row is.

    Text cells are terminal-safe and never start a spreadsheet formula (a leading
    =, +, -, @, tab or CR gets a ' in front); numbers and booleans are written as they are.
    """
    buffer = io.StringIO()
    writer = _CsvWriter(buffer)
    writer.writeheader()
    document = inventory_document(inventory)
    cluster = document["cluster"]
    writer.writerow(
        {
            "record": "cluster",
            "policy": cluster["policy"],
            "loss_scaling": cluster["loss_scaling"],
            "reason": " ".join(cluster["reasons"]),
        }
    )
    for node_class in document["classes"]:
        text = node_class["description"]
        writer.writerow(
            {
                "record": "class",
                "class": node_class["id"],
                "nodes": node_class["nodes"],
                "gpus": text["gpus"],
                "cpu": text["cpu"],
                "cpu_flags": " ".join(text["cpu_flags"]),
                "driver": text["driver"],
                "tensorflow": text["tensorflow"],
                "torch": text["torch"],
                "jax": text["jax"],
                "keras": text["keras"],
                "tpu": text["tpu"],
                "policy": node_class["policy"],
                "device": node_class["device"],
                "loss_scaling": node_class["loss_scaling"],
                "runs_well": " ".join(node_class["runs_well"]),
                "per_class_gain": node_class["per_class_gain"],
            }
        )
        for finding in node_class["findings"]:
            writer.writerow(
                {
                    "record": "class_finding",
                    "class": node_class["id"],
                    "nodes": finding["nodes"],
                    "finding": finding["id"],
                    "severity": finding["severity"],
                    "message": finding["message"],
                    "remedy": finding["remedy"],
                }
            )
        for measured in node_class["measured_speedups"]:
            writer.writerow({"record": "class_speedup", "class": node_class["id"], **measured})
        for member in node_class["members"]:
            checks = {key: " ".join(member[key]) for key in ("failing", "warnings")}
            writer.writerow({"record": "node", "class": node_class["id"], **member, **checks})
    for node in document["error_nodes"]:
        for finding in node["findings"]:
            writer.writerow(
                {
                    "record": "error",
                    "class": node["class"],
                    "host": node["host"],
                    "source": node["source"],
                    "node_id": node["node_id"],
                    "time": node["time"],
                    "finding": finding["id"],
                    "severity": "error",
                    "message": finding["message"],
                    "remedy": finding["remedy"],
                }
            )
    for drift in document["version_drift"]:
        for listed in drift["versions"]:
            for host in listed["nodes"]:
                row = {"group": drift["group"], "component": drift["component"], "version": listed["version"]}
                writer.writerow({"record": "drift", "host": host, **row})
    for group in document["job_groups"]:
        for pattern in group["unmatched"]:
            writer.writerow({"record": "unmatched", "group": group["name"], "host": pattern})
    for rejected in document["rejected"]:
        writer.writerow({"record": "rejected", **rejected})
    for superseded in document["superseded"]:
        writer.writerow(
            {
                "record": "superseded",
                "host": superseded["host"],
                "source": superseded["dropped"],
                "reason": superseded["reason"],
            }
        )
    return buffer.getvalue()


class _CsvWriter:
    """csv.DictWriter that writes booleans as JSON does (true/false), None as empty, text as csv_cell."""

    def __init__(self, buffer: io.StringIO) -> None:
        self._writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")

    def writeheader(self) -> None:
        self._writer.writeheader()

    def writerow(self, row: dict[str, Any]) -> None:
        self._writer.writerow(
            {
                key: str(value).lower() if isinstance(value, bool) else csv_cell(value)
                for key, value in row.items()
            }
        )


def _class_document(node_class: NodeClass, gain: bool) -> dict[str, Any]:
    hardware = node_class.hardware
    return {
        "id": node_class.id,
        "nodes": len(node_class.nodes),
        "framework": node_class.framework,
        "policy": node_class.policy,
        "device": node_class.device,
        "loss_scaling": node_class.loss_scaling,
        "runs_well": list(node_class.runs_well),
        "per_class_gain": gain,
        "description": {
            "gpus": hardware.gpu_text(),
            "cpu": hardware.cpu_text(),
            "cpu_flags": list(hardware.cpu_flags),
            "driver": hardware.driver_text(),
            "tensorflow": hardware.tensorflow_text(),
            "torch": installed_versions(node_class, "torch"),
            "jax": installed_versions(node_class, "jax"),
            "keras": installed_versions(node_class, "keras"),
            "tpu": hardware.tpu,
        },
        "hardware": hardware.to_dict(),
        "findings": [
            {"id": f.id, "severity": f.severity, "message": f.message, "remedy": f.remedy, "nodes": f.nodes}
            for f in node_class.findings
        ],
        "measured_speedups": [
            {
                "workload": m.workload,
                "framework": m.framework,
                "device": m.device,
                "variant": m.variant,
                "speedup": m.speedup,
                "nodes": m.nodes,
            }
            for m in node_class.speedups
        ],
        "members": [_node_document(node) for node in node_class.nodes],
    }


def _node_document(node: NodeReport) -> dict[str, Any]:
    return {
        "host": node.name,
        "source": node.source,
        "node_id": node.node_id,
        "time": node.time.isoformat() if node.time else None,
        **node.readiness,
    }
