"""An inventory in the terminal: the class table, the readiness, the shared policy and the lists."""

from __future__ import annotations

from typing import Any

from hwcheck.base.safe import terminal_text
from hwcheck.inventory.frameworks import cluster_frameworks, framework_build, framework_label
from hwcheck.inventory.merge import Inventory
from hwcheck.inventory.node_class import NodeClass

# How many rows of each long list the terminal shows; --json and --csv list all.
TERMINAL_ROWS = 20
# How many nodes one drift line names per version; --json and --csv name all.
NODES_SHOWN = 8
# Below this width the findings leave the table for a list under it: a column narrow enough to
# fit 80 columns would fold rule ids in half, and an id cut in two cannot be searched for.
FINDINGS_IN_TABLE_COLUMNS = 120


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
    console.print(Text(terminal_text(readiness_line(inventory))))
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("class", no_wrap=True)
    table.add_column("nodes", justify="right", no_wrap=True)
    # Long names fold onto the next line rather than end in "…": a cut id or model is unreadable.
    table.add_column("hardware", overflow="fold")
    table.add_column("driver, framework build", overflow="fold")
    table.add_column("policy", no_wrap=True)
    findings_in_table = console.width >= FINDINGS_IN_TABLE_COLUMNS
    if findings_in_table:
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
            *([_findings_cell(node_class)] if findings_in_table else []),
        ]
        table.add_row(*cells, *([_speedups_cell(node_class)] if measured else []))
    console.print(table)
    if not findings_in_table:
        _print_findings_by_class(console, inventory)
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
        "Node checks that warn",
        [
            f"{node.name}: " + ", ".join(node.readiness["warnings"])
            for node in inventory.readiness[True]
            if node.readiness["warnings"]
        ],
        style="yellow",
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


def readiness_line(inventory: Inventory) -> str:
    """E.g. "Ready to train: 2 of 3 nodes (1 not ready: its errors are listed below)"."""
    readiness = inventory.readiness
    ready, not_ready, unknown = (len(readiness[state]) for state in (True, False, None))
    notes = []
    if not_ready:
        notes.append(f"{not_ready} not ready: {'its' if not_ready == 1 else 'their'} errors are listed below")
    if unknown:
        reports = "its report has" if unknown == 1 else "their reports have"
        notes.append(f"{unknown} unknown: {reports} no advice")
    line = f"Ready to train: {ready} of {inventory.nodes} node{'s' if inventory.nodes != 1 else ''}"
    return line + (f" ({'; '.join(notes)})" if notes else "")


def _print_findings_by_class(console: Any, inventory: Inventory) -> None:
    """The findings column as lines under the table, wrapped between words, never inside an id."""
    from rich.text import Text

    from hwcheck.base.wrap import wrap_text

    lines = []
    for node_class in inventory.classes:
        cell = _findings_cell(node_class).plain
        if cell:
            # A no-break space keeps each mark, id and count together when the line wraps.
            items = [item.replace(" ", "\u00a0") for item in cell.split("\n")]
            lines.append(f"{node_class.id}: " + ", ".join(items))
    if not lines:
        return
    console.print(Text("Findings by class (nodes)", style="bold"))
    for line in lines:
        for part in wrap_text(terminal_text(line), console.width, "    ", "  "):
            console.print(Text(part), soft_wrap=True)


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
