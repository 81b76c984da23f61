"""`hwcheck doctor`: check this machine and say which precision to train in."""

from __future__ import annotations

import argparse
import sys

from hwcheck.commands import (
    add_framework_option,
    add_machine_options,
    also,
    read_machine,
    recommend_for,
    word,
)
from hwcheck.recommendation import POLICIES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the doctor subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="check the machine and recommend a precision",
        description="Probe GPUs, CUDA/cuDNN, the CPU, TPUs and frameworks, and recommend a precision "
        "(compute dtype, loss scaling, TF32) with the reasons and the lines that apply it in your "
        "framework. Exit 0 fine, 1 an error-level finding, 2 bad input.",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report instead")
    parser.add_argument(
        "--why-not",
        choices=POLICIES,
        type=word("policy", POLICIES),
        metavar="POLICY",
        help=f"explain why POLICY ({', '.join(POLICIES)}) was not chosen" + also("policy", POLICIES),
    )
    add_framework_option(parser)
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Probe, recommend, print; exit 1 when a finding is error-level."""
    facts, probes, *_ = read_machine(args)
    recommendation = recommend_for(args, facts, probes, framework=args.framework)
    if args.json:
        from hwcheck.render.report import build_report, to_json

        report = build_report(facts, probes, recommendation)
        if args.why_not:
            report["why_not"] = {
                "policy": args.why_not,
                "reasons": recommendation.why_not(args.why_not),
            }
        sys.stdout.write(to_json(report))
    else:
        from hwcheck.render.terminal import render_doctor

        render_doctor(facts, probes, recommendation, why_not=args.why_not)
    return 1 if recommendation.has_errors else 0
