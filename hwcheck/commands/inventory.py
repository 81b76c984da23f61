"""`hwcheck inventory`: merge many machines' reports into classes and one cluster policy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hwcheck.base.errors import InputError
from hwcheck.commands.options import MAX_PROBE_SECONDS, seconds

if TYPE_CHECKING:
    from hwcheck.inventory.drift import JobGroup
    from hwcheck.inventory.reports import Rejected

# Longer than any node takes to start Python and probe: beyond it, the node is lost.
MAX_NODE_SECONDS = 86400.0


def job_group(text: str) -> JobGroup:
    """An argparse type for --group (imported only when given: `hwcheck doctor` never loads the inventory)."""
    from hwcheck.inventory.drift import job_group as parse

    return parse(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the inventory subcommand."""
    parser = subparsers.add_parser(
        "inventory",
        help="merge reports into hardware classes and a cluster-wide policy",
        description="Merge `hwcheck report` files (files, directories searched for *.json, "
        "globs; - reads more paths from standard input) or probe every node of a Ray "
        "cluster. Shows hardware classes with their policy and findings, the policy every "
        "node can share, and nodes with errors. Exit 0 all merged, 1 a report was rejected "
        "(or a Ray node failed), 2 bad usage, 3 with --strict a node not plainly ready.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="report files, directories, globs or -")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the inventory as JSON")
    output.add_argument("--csv", action="store_true", help="print the inventory as CSV")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write the inventory as one self-contained HTML page (classes, policies, errors, "
        "version drift, a chart of the measured speed-ups; loads nothing from the network); - prints it",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="probe every alive node of the Ray cluster at ADDRESS (default: auto, the "
        "cluster this machine belongs to); needs pip install '.[ray]' (from a checkout of hwcheck) "
        "on every node",
    )
    parser.add_argument(
        "--node-timeout",
        type=seconds(MAX_NODE_SECONDS),
        default=120.0,
        metavar="SECONDS",
        help="with --ray: how long to wait for each node's report (default 120)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds(MAX_PROBE_SECONDS),
        default=5.0,
        metavar="SECONDS",
        help="with --ray: deadline for each probe on a node (default 5)",
    )
    parser.add_argument(
        "--group",
        metavar="NAME=HOST,...",
        action="append",
        type=job_group,
        default=[],
        help="nodes that train together (repeatable): NCCL, driver, CUDA and framework versions "
        "that differ between them are listed with the nodes; hosts may use * and ?. Without it, "
        "nodes with the same hardware are compared",
    )
    parser.add_argument(
        "--rules",
        metavar="FILE",
        action="append",
        default=[],
        help="site rules used to tell which policies each class runs well (repeatable; "
        "HWCHECK_RULES adds more)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="count a node that warns (a node check such as peer-to-peer NCCL would hang on) or "
        "whose versions drift from its group's as not ready, and exit 3 unless every node is ready "
        "(no error, no warning, no drift, advised) and every --group host has a report",
    )
    from hwcheck.commands.options import add_framework_option

    add_framework_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Merge the reports and print the inventory; exit 1 when any report was rejected."""
    from hwcheck.commands import site_rule_files
    from hwcheck.inventory.merge import Merger, engine_runs_well
    from hwcheck.inventory.output import inventory_csv, inventory_json
    from hwcheck.inventory.sources import report_paths
    from hwcheck.inventory.table import render_inventory

    if not args.paths and args.ray is None:
        raise InputError(
            "hwcheck inventory",
            "name report files, directories or globs (- reads them from standard input), or use --ray",
        )
    # --framework: every report's advice is made again for it, from the report's facts.
    merger = Merger(framework=args.framework)
    paths: list[Path | Rejected] = []
    if args.paths:
        paths = list(report_paths(args.paths, sys.stdin))
        if not paths and "-" in args.paths:
            raise InputError("standard input", "no report paths were given")
        merger.add_files(paths)
    if args.ray is not None:
        from hwcheck.inventory.ray_collect import collect_from_ray

        collect_from_ray(merger, args.ray, node_timeout=args.node_timeout, probe_timeout=args.timeout)
    inventory = merger.finish(
        engine_runs_well(site_rule_files(args)), job_groups=tuple(args.group), strict=args.strict
    )
    if args.html:
        from hwcheck.inventory.html import inventory_html
        from hwcheck.render.report import write_output

        # Never written over one of the reports or rules files it was made from.
        reports = [p for p in paths if isinstance(p, Path)]
        write_output(args.html, inventory_html(inventory), inputs=[*reports, *site_rule_files(args)])
        if args.html == "-":
            return inventory.exit_status
    if args.json:
        sys.stdout.write(inventory_json(inventory))
    elif args.csv:
        sys.stdout.write(inventory_csv(inventory))
    else:
        render_inventory(inventory)
    return inventory.exit_status
