"""`hwcheck doctor`: check this machine and say which precision to train in."""

from __future__ import annotations

import sys

from hwcheck.commands import read_machine, recommend_for
from hwcheck.recommendation import POLICIES

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from hwcheck.commands import Arguments

# The forms nearly every run takes: read without argparse (see quick_arguments).
QUICK_FORMS = (["doctor"], ["doctor", "--json"])


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the doctor subcommand."""
    from hwcheck.commands.options import add_framework_option, add_machine_options, also, word

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


def quick_arguments(argv: list[str]) -> SimpleNamespace | None:
    """The arguments the parser gives `hwcheck doctor [--json]`, read without it; None for any other form.

    Importing argparse, its translations and building doctor's options cost ~5 ms of a run
    that takes ~35; every other form goes through the parser, which also says what is wrong
    with it. tests/test_options.py holds both readings of these forms equal.
    """
    if argv not in QUICK_FORMS:
        return None
    from types import SimpleNamespace

    from hwcheck.probes import DEFAULT_TIMEOUT

    return SimpleNamespace(
        command="doctor",
        json=argv == ["doctor", "--json"],
        why_not=None,
        framework=None,
        facts=None,
        cpuinfo=None,
        rules=[],
        prefer=None,
        timeout=DEFAULT_TIMEOUT,
        run=run,
    )


def run(args: Arguments) -> int:
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
