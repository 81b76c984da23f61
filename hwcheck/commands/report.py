"""`hwcheck report`: write the JSON report an inventory merges."""

from __future__ import annotations

import argparse
import sys

from hwcheck.commands import add_machine_options, read_machine, recommend_for


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the report subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="write the JSON report for an inventory",
        description="Write this machine's report (facts, probe statuses, recommendation, "
        "time and host) atomically to FILE, or to standard output with -o -.",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write")
    parser.add_argument(
        "--redact", action="store_true", help="leave out the host name, GPU UUIDs and serials"
    )
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Build the stamped report and write it; the exit status follows the findings."""
    from hwcheck.report import build_report, to_json, write_atomic

    facts, probes = read_machine(args)
    recommendation = recommend_for(args, facts, probes)
    text = to_json(
        build_report(facts, probes, recommendation, stamped=True, redact=args.redact)
    )
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            write_atomic(args.output, text)
        except OSError as error:
            from hwcheck.errors import InputError

            raise InputError(args.output, f"cannot write: {error.strerror or error}") from None
    return 1 if recommendation.has_errors else 0
