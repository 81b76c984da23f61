"""`hwcheck report`: write the JSON report an inventory merges."""

from __future__ import annotations

import argparse
import sys

from hwcheck.commands import add_framework_option, add_machine_options, read_machine, recommend_for


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the report subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="write the JSON report for an inventory",
        description="Write this machine's report (facts, probe statuses, recommendation, "
        "time and host) atomically to FILE, or to standard output with -o -.",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write ('-' for standard output); %%N in the name becomes the short host "
        "name, as in Slurm's file patterns (srun ... hwcheck report -o 'reports/%%N.json')",
    )
    parser.add_argument(
        "--redact", action="store_true", help="leave out the host name, GPU UUIDs and serials"
    )
    add_framework_option(parser)
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Build the stamped report and write it; the exit status follows the findings."""
    from hwcheck.report import build_report, to_json, write_output

    facts, probes = read_machine(args)
    recommendation = recommend_for(args, facts, probes, framework=args.framework)
    text = to_json(build_report(facts, probes, recommendation, stamped=True, redact=args.redact))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_output(output_path(args.output), text)
    return 1 if recommendation.has_errors else 0


def output_path(pattern: str) -> str:
    """The file name with %N replaced by the short host name (srun expands it only in its own options)."""
    if "%N" not in pattern:
        return pattern
    import socket

    return pattern.replace("%N", socket.gethostname().split(".")[0])
