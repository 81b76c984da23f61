"""An inventory as JSON, as CSV (the same content, one record per row) and as a rich table."""

from __future__ import annotations

import csv
import io
from typing import Any

from hwcheck.base import __version__
from hwcheck.base.safe import csv_cell, json_text, terminal_text
from hwcheck.inventory.frameworks import cluster_frameworks, framework_build, framework_label
from hwcheck.inventory.merge import Inventory, NodeClass
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
)
# How many rows of each long list the terminal shows; --json and --csv list all.
TERMINAL_ROWS = 20
# How many nodes one drift line names per version; --json and --csv name all.
NODES_SHOWN = 8


def inventory_document(inventory: Inventory) -> dict[str, Any]:
    """The inventory as a JSON-ready dict."""
    cluster = inventory.cluster
    gains = {c.id for c in inventory.gains}
    return {
        "inventory_format": INVENTORY_FORMAT,
        "hwcheck_version": __version__,
        "summary": {
            "reports_read": inventory.reports_read,
            "nodes": inventory.nodes,
            "classes": len(inventory.classes),
            "rejected": len(inventory.rejected),
            "superseded": len(inventory.superseded),
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
            writer.writerow({"record": "node", "class": node_class["id"], **member})
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


def render_inventory(inventory: Inventory, console: Any = None) -> None:
    """Print the class table, the shared policy, gains, error nodes, rejects and duplicates.

    Everything here comes from reports other machines wrote: each string goes through
    terminal_text into a Text, never into markup.
    """
    if console is None:
        from hwcheck.render.console import output

        with output() as console:
            render_inventory(inventory, console)
        return
    from rich.table import Table
    from rich.text import Text

    console.print(
        Text(
            f"hwcheck inventory: {inventory.nodes} nodes in {len(inventory.classes)} classes "
            f"from {inventory.reports_read} reports ({len(inventory.rejected)} rejected, "
            f"{len(inventory.superseded)} superseded)",
            style="bold",
        )
    )
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("class", no_wrap=True)
    table.add_column("nodes", justify="right", no_wrap=True)
    # Long names fold onto the next line rather than end in "…": a cut id or model is unreadable.
    table.add_column("hardware", overflow="fold")
    table.add_column("driver, framework build", overflow="fold")
    table.add_column("policy", no_wrap=True)
    table.add_column("findings (nodes)", overflow="fold")
    measured = any(node_class.speedups for node_class in inventory.classes)
    if measured:
        table.add_column("measured speed-up over float32 (nodes)")
    for node_class in inventory.classes:
        hardware = node_class.hardware
        machine = Text(terminal_text(hardware.gpu_text() + (f", TPU {hardware.tpu}" if hardware.tpu else "")))
        machine.append("\n" + terminal_text(hardware.cpu_text()))
        if hardware.cpu_flags:
            machine.append("\n" + terminal_text(" ".join(hardware.cpu_flags)), style="dim")
        software = Text(terminal_text(hardware.driver_text()))
        software.append("\n" + terminal_text(framework_build(node_class)))
        policy = Text(terminal_text(node_class.policy or "no advice"), style="bold")
        if node_class.device:
            policy.append("\non the " + terminal_text(node_class.device.upper()))
        policy.append("\nfor " + terminal_text(framework_label(node_class.framework)))
        cells = [
            Text(terminal_text(node_class.id)),
            str(len(node_class.nodes)),
            machine,
            software,
            policy,
            _findings_cell(node_class),
        ]
        table.add_row(*cells, *([_speedups_cell(node_class)] if measured else []))
    console.print(table)
    console.print()

    cluster = inventory.cluster
    headline = Text("Cluster policy: ", style="bold")
    headline.append(terminal_text(cluster.policy or "none"), style="bold green")
    if cluster.policy:
        headline.append(" (loss scaling on)" if cluster.loss_scaling else " (no loss scaling)")
        headline.append(terminal_text(f" for {cluster_frameworks(inventory)}"))
    console.print(headline)
    from hwcheck.base.wrap import wrap_text

    for reason in cluster.reasons:
        for part in wrap_text(terminal_text(reason), console.width, "       ", "  why: "):
            console.print(Text(part), soft_wrap=True)
    if inventory.gains:
        console.print(Text("A per-class policy would help:", style="bold"))
        for node_class in inventory.gains:
            count = len(node_class.nodes)
            gain = terminal_text(
                f"{node_class.label()}: {node_class.policy} on its own "
                f"({count} node{'s' if count != 1 else ''})"
            )
            for part in wrap_text(gain, console.width, "    ", "  "):
                console.print(Text(part), soft_wrap=True)

    _print_list(
        console,
        "Nodes with errors",
        [
            f"{node.name} [{node_class.id}]: " + "; ".join(f"{f[0]}: {f[2]}" for f in node.errors)
            for node, node_class in inventory.error_nodes
        ],
        style="red",
    )
    _print_list(
        console,
        "Version drift between nodes that train together",
        [drift.describe(limit=NODES_SHOWN) for drift in inventory.drift],
        style="yellow",
    )
    _print_list(
        console,
        "Job group hosts without a report",
        [f"{name}: {pattern}" for name, pattern in inventory.unmatched],
        style="yellow",
    )
    _print_list(
        console, "Rejected reports", [f"{r.source}: {r.reason}" for r in inventory.rejected], style="red"
    )
    _print_list(
        console,
        "Superseded duplicates",
        [f"{s.dropped.source} ({s.dropped.name}): {s.reason()}" for s in inventory.superseded],
        style="yellow",
    )


def _findings_cell(node_class: NodeClass) -> Any:
    from rich.text import Text

    from hwcheck.render.terminal import SEVERITY_STYLE

    cell = Text()
    infos = 0
    for finding in node_class.findings:
        if finding.severity == "info":
            infos += 1
            continue
        mark, style = SEVERITY_STYLE.get(finding.severity, ("?", ""))
        cell.append(terminal_text(f"{mark.split()[0]} {finding.id} ({finding.nodes})") + "\n", style=style)
    if infos:
        cell.append(f"{infos} info", style="dim")
    cell.rstrip()
    return cell


def _speedups_cell(node_class: NodeClass) -> Any:
    """One line per measured workload: "mlp (torch, GPU): mixed_bfloat16 8.08x, float32+tf32 4.04x (2)"."""
    from rich.text import Text

    lines: dict[tuple[str, str, str], list[str]] = {}
    counts: dict[tuple[str, str, str], int] = {}
    for measured in node_class.speedups:
        key = (measured.workload, measured.framework, measured.device)
        lines.setdefault(key, []).append(f"{measured.variant} {measured.speedup:.2f}x")
        counts[key] = max(counts.get(key, 0), measured.nodes)
    return Text(
        "\n".join(
            terminal_text(f"{workload} ({framework}, {device.upper()}): {', '.join(parts)} ({counts[key]})")
            for key, parts in lines.items()
            for workload, framework, device in [key]
        )
    )


def _print_list(console: Any, title: str, lines: list[str], *, style: str) -> None:
    from rich.text import Text

    if not lines:
        return
    console.print()
    console.print(Text(f"{title} ({len(lines)}):", style=f"bold {style}"))
    from hwcheck.base.wrap import wrap_text

    for line in lines[:TERMINAL_ROWS]:
        # Wrapped under its indent on a terminal; one line each in a pipe (its width is
        # unbounded there), so `| grep` finds a report with its reason.
        for part in wrap_text(terminal_text(line), console.width, "    ", "  "):
            console.print(Text(part), soft_wrap=True)
    if len(lines) > TERMINAL_ROWS:
        console.print(Text(f"  ... and {len(lines) - TERMINAL_ROWS} more (--json lists all)", style="dim"))


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
    }
