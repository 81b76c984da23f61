"""`hwcheck inventory --html`: the inventory as one self-contained page to send or look at.

The page loads nothing: no script, no font, no stylesheet or image from anywhere, and its
Content-Security-Policy says so to the browser too. Every string that came from a report
(host names, model names, versions, findings, file names) goes through `_text`, which
escapes it for element content and attribute values alike.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

from hwcheck.base import __version__
from hwcheck.inventory.frameworks import cluster_frameworks, framework_build, framework_label
from hwcheck.inventory.merge import Inventory
from hwcheck.inventory.node_class import ClassSpeedup, NodeClass
from hwcheck.inventory.software import COMPONENTS

# Nothing may be fetched; inline styles only (the page has no script at all).
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; color: #1b1f24;
       padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35em .6em; border-bottom: 1px solid #eaeef2; }
th { background: #f6f8fa; }
td.count { text-align: right; font-variant-numeric: tabular-nums; font-weight: 600; }
.summary span { display: inline-block; margin-right: 1.4em; }
.summary b { font-size: 1.3em; }
.policy { font-weight: 600; font-family: ui-monospace, monospace; }
.shared { background: #dafbe1; padding: .5em .8em; border-radius: 6px; }
.error { color: #cf222e; }
.warning { color: #9a6700; }
.dim { color: #57606a; font-size: .9em; }
.drift { color: #9a6700; font-weight: 600; }
svg text { font: 12px system-ui, sans-serif; fill: #1b1f24; }
"""
# The chart: one bar per measured speed-up, scaled to the largest (never less than 2x wide).
BAR_HEIGHT, BAR_GAP, LABEL_WIDTH, PLOT_WIDTH = 18, 6, 380, 420


def inventory_html(inventory: Inventory) -> str:
    """The whole page: summary, cluster policy, classes, errors, version drift, speed-ups, rejects."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_text(CONTENT_SECURITY_POLICY)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>hwcheck inventory</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>hwcheck inventory</h1>",
        _summary(inventory),
        _cluster(inventory),
        _classes(inventory),
        _error_nodes(inventory),
        _node_warnings(inventory),
        _drift(inventory),
        _speedups(inventory),
        _rejected(inventory),
        f'<p class="dim">Written by hwcheck {_text(__version__)}.</p>',
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def version_drift(inventory: Inventory) -> dict[tuple[str, str], Counter[str]]:
    """Nodes per version of each piece of software that must agree across a job, per GPU vendor.

    Like is compared with like: an Apple node's software is not drift against an NVIDIA node's.
    Nodes without the software (a CPU node has no driver) are not counted: that is no drift.
    """
    found: dict[tuple[str, str], Counter[str]] = {}
    for node_class in inventory.classes:
        vendor = vendor_of(node_class)
        for node in node_class.nodes:
            for component, version in node.software:
                found.setdefault((component, vendor), Counter())[version] += 1
    order = {component: number for number, component in enumerate(COMPONENTS)}
    return dict(sorted(found.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0][1])))


def vendor_of(node_class: NodeClass) -> str:
    """The accelerator vendor of a class's nodes ("CPU only" without one), for comparing like with like."""
    hardware = node_class.hardware
    if hardware.macos:
        return "Apple"
    if hardware.intel_runtime:
        return "Intel"
    if hardware.rocm or any(group.arch for group in hardware.gpus):
        return "AMD"
    if hardware.gpus:
        return "NVIDIA"
    return "TPU" if hardware.tpu else "CPU only"


def _text(value: Any) -> str:
    # One escape for content and attributes: quotes too, so a value never leaves its attribute.
    return escape(str(value), quote=True)


def _summary(inventory: Inventory) -> str:
    readiness = inventory.readiness
    figures = [
        ("nodes", inventory.nodes),
        ("ready to train", len(readiness[True]) - len(inventory.warned)),
        ("ready with warnings", 0 if inventory.strict else len(inventory.warned)),
        ("not ready", len(readiness[False]) + (len(inventory.warned) if inventory.strict else 0)),
        ("classes", len(inventory.classes)),
        ("reports read", inventory.reports_read),
        ("rejected", len(inventory.rejected)),
        ("superseded", len(inventory.superseded)),
    ]
    cells = "".join(
        f'<span id="summary-{_text(name.replace(" ", "-"))}"><b>{number}</b> {_text(name)}</span>'
        for name, number in figures
    )
    return f'<p class="summary">{cells}</p>'


def _cluster(inventory: Inventory) -> str:
    cluster = inventory.cluster
    scaling = ""
    if cluster.policy:
        scaling = " (loss scaling on)" if cluster.loss_scaling else " (no loss scaling)"
    reasons = "".join(f"<li>{_text(reason)}</li>" for reason in cluster.reasons)
    gains = ""
    if inventory.gains:
        items = "".join(
            f"<li>{_text(c.label())}: <span class='policy'>{_text(c.policy)}</span> on its own "
            f"({len(c.nodes)} node{'s' if len(c.nodes) != 1 else ''})</li>"
            for c in inventory.gains
        )
        gains = f"<p>A per-class policy would help:</p><ul>{items}</ul>"
    return (
        "<h2>Policy the cluster can share</h2>"
        f'<p class="shared" id="cluster-policy">Cluster policy: '
        f'<span class="policy">{_text(cluster.policy or "none")}</span>{_text(scaling)} for '
        f'<span class="framework">{_text(cluster_frameworks(inventory))}</span></p>'
        f"<ul>{reasons}</ul>{gains}"
    )


def _classes(inventory: Inventory) -> str:
    rows = "".join(_class_row(node_class) for node_class in inventory.classes)
    return (
        "<h2>Hardware classes</h2>"
        '<table id="classes"><thead><tr><th>class</th><th>nodes</th><th>hardware</th>'
        "<th>driver, framework build</th><th>policy, and whose</th><th>findings (nodes)</th><th>members</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _class_row(node_class: NodeClass) -> str:
    hardware = node_class.hardware
    machine = _text(hardware.gpu_text() + (f", TPU {hardware.tpu}" if hardware.tpu else ""))
    machine += f"<br>{_text(hardware.cpu_text())}"
    if hardware.cpu_flags:
        machine += f'<br><span class="dim">{_text(" ".join(hardware.cpu_flags))}</span>'
    software = f"{_text(hardware.driver_text())}<br>{_text(framework_build(node_class))}"
    policy = f'<span class="policy">{_text(node_class.policy or "no advice")}</span>'
    if node_class.device:
        policy += f"<br>on the {_text(node_class.device.upper())}"
    policy += f'<br>for <span class="framework">{_text(framework_label(node_class.framework))}</span>'

    findings = "<br>".join(
        f'<span class="{_text(f.severity)}" title="{_text(f.message)}">{_text(f.id)}</span> ({f.nodes})'
        for f in node_class.findings
    )
    members = ", ".join(_text(node.name) for node in node_class.nodes)
    return (
        f'<tr id="class-{_text(node_class.id)}"><td>{_text(node_class.id)}</td>'
        f'<td class="count">{len(node_class.nodes)}</td><td>{machine}</td><td>{software}</td>'
        f'<td>{policy}</td><td>{findings or "none"}</td><td class="dim">{members}</td></tr>'
    )


def _node_warnings(inventory: Inventory) -> str:
    if not inventory.warned:
        return ""
    rows = "".join(
        f"<tr><td>{_text(node.name)}</td><td>{_text(', '.join(inventory.cautions(node)))}</td></tr>"
        for node in inventory.warned
    )
    title = "Not ready under --strict" if inventory.strict else "Ready with warnings"
    return (
        f"<h2>{title}</h2>"
        '<table id="node-warnings"><thead><tr><th>node</th><th>node checks that warn, version drift</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _error_nodes(inventory: Inventory) -> str:
    if not inventory.error_nodes:
        return "<h2>Nodes with errors</h2><p>None.</p>"
    rows = "".join(
        f'<tr><td class="error">{_text(node.name)}</td><td>{_text(node_class.id)}</td><td>'
        + "<br>".join(
            f"<b>{_text(finding[0])}</b>: {_text(finding[2])}"
            + (f'<br><span class="dim">{_text(finding[3])}</span>' if finding[3] else "")
            for finding in node.errors
        )
        + "</td></tr>"
        for node, node_class in inventory.error_nodes
    )
    return (
        "<h2>Nodes with errors</h2>"
        '<table id="error-nodes"><thead><tr><th>node</th><th>class</th><th>errors and fixes</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _drift(inventory: Inventory) -> str:
    rows = []
    for (component, vendor), versions in version_drift(inventory).items():
        listed = ", ".join(f"{_text(version)} ({count})" for version, count in versions.most_common())
        mark = '<span class="drift">drift</span>' if len(versions) > 1 else "one version"
        rows.append(
            f"<tr><td>{_text(component)}</td><td>{_text(vendor)}</td><td>{mark}</td><td>{listed}</td></tr>"
        )
    within = "".join(
        f"<tr><td>{_text(drift.group)}</td><td>{_text(drift.what)}</td><td>{_text(drift.component)}</td><td>"
        + "<br>".join(f"{_text(version)}: {_text(', '.join(nodes))}" for version, nodes in drift.versions)
        + "</td></tr>"
        for drift in inventory.drift
    )
    together = "job group" if inventory.job_groups else "same hardware"
    groups = (
        '<table id="group-drift"><thead><tr><th>group</th><th></th><th>software</th>'
        f"<th>versions: nodes</th></tr></thead><tbody>{within}</tbody></table>"
        if within
        else f"<p>No drift within any {together}.</p>"
    )
    missing = "".join(f"<li>{_text(name)}: {_text(pattern)}</li>" for name, pattern in inventory.unmatched)
    return (
        "<h2>Version drift</h2>"
        '<table id="drift"><thead><tr><th>software</th><th>nodes with</th><th></th><th>versions (nodes)</th>'
        "</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        f"<h3>Between nodes that train together ({together})</h3>{groups}"
        + (f'<p>Job group hosts without a report:</p><ul id="unmatched">{missing}</ul>' if missing else "")
    )


def _speedups(inventory: Inventory) -> str:
    bars = [(c, m) for c in inventory.classes for m in c.speedups]
    if not bars:
        return (
            "<h2>Measured speed-ups over float32</h2><p>No report carries a current bench result "
            "(<code>hwcheck report --bench FILE</code>).</p>"
        )
    return f"<h2>Measured speed-ups over float32</h2>{speedup_chart(bars)}"


def speedup_chart(bars: list[tuple[NodeClass, ClassSpeedup]]) -> str:
    """An inline SVG bar chart: one bar per class and measured variant, with the 1x line marked."""
    top = max(2.0, *(m.speedup for _, m in bars))
    height = len(bars) * (BAR_HEIGHT + BAR_GAP) + 30
    width = LABEL_WIDTH + PLOT_WIDTH + 70
    one = LABEL_WIDTH + PLOT_WIDTH / top
    shapes = []
    for row, (node_class, measured) in enumerate(bars):
        y = row * (BAR_HEIGHT + BAR_GAP) + 6
        runtime = f"{measured.framework}, {measured.device.upper()}"
        label = f"{node_class.id} {measured.workload} ({runtime}): {measured.variant}"
        length = max(1.0, PLOT_WIDTH * measured.speedup / top)
        colour = "#2da44e" if measured.speedup >= 1 else "#cf222e"
        nodes = f"{measured.nodes} node{'s' if measured.nodes != 1 else ''}"
        shapes.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 13}" text-anchor="end">{_text(label)}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{BAR_HEIGHT}" fill="{colour}">'
            f"<title>{_text(label)}: {measured.speedup:.2f}x ({nodes})</title></rect>"
            f'<text x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 13}">{measured.speedup:.2f}x</text>'
        )
    axis_y = len(bars) * (BAR_HEIGHT + BAR_GAP) + 10
    shapes.append(
        f'<line x1="{one:.1f}" y1="0" x2="{one:.1f}" y2="{axis_y}" stroke="#57606a" stroke-dasharray="4 3"/>'
        f'<text x="{one:.1f}" y="{axis_y + 14}" text-anchor="middle">1x (float32)</text>'
    )
    return (
        f'<svg id="speedups" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="measured speed-ups over float32">'
        f"{''.join(shapes)}</svg>"
    )


def _rejected(inventory: Inventory) -> str:
    if not inventory.rejected and not inventory.superseded:
        return ""
    items = [f"<li>{_text(r.source)}: {_text(r.reason)}</li>" for r in inventory.rejected]
    items += [
        f'<li class="dim">{_text(s.dropped.source)} ({_text(s.dropped.name)}): '
        f"superseded, {_text(s.reason())}</li>"
        for s in inventory.superseded
    ]
    return f'<h2>Rejected and superseded reports</h2><ul id="rejected">{"".join(items)}</ul>'
