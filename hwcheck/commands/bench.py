"""`hwcheck bench`: measure training step time per precision and set it beside the recommendation."""

from __future__ import annotations

import argparse
import sys

from hwcheck.commands import input_files
from hwcheck.commands.options import also, seconds, whole_number, word
from hwcheck.measure.rounds import MAX_ROUNDS
from hwcheck.measure.runner import DEFAULT_TIMEOUT, FRAMEWORKS, MAX_STEPS, MAX_TIMEOUT, VARIANT_NAMES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the bench subcommand."""
    parser = subparsers.add_parser(
        "bench",
        help="measure training step time per precision",
        description="Run a short training loop per precision, each in a fresh process, on the device "
        "the recommendation targets: ms/step (median and IQR), speed-up over float32, peak memory, "
        "loss status, and whether the measured best agrees with the recommendation.",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--workload",
        default="mlp",
        choices=("mlp", "conv", "transformer", "lstm", "all"),
        metavar="NAME",
        help="built-in workload: mlp, conv, transformer, lstm or all (default mlp)",
    )
    what.add_argument("--script", metavar="FILE", help="a Python file defining make_step(policy)")
    parser.add_argument(
        "--framework",
        metavar="NAME",
        type=word("framework", FRAMEWORKS),
        help="torch, keras (on KERAS_BACKEND), tensorflow or jax; default: the one a --script imports, "
        "else torch if installed, else keras" + also("framework", FRAMEWORKS),
    )
    parser.add_argument(
        "--policies",
        metavar="LIST",
        type=precisions,
        help="comma list of float32, float32+tf32, mixed_bfloat16, mixed_float16, mixed_float16-noscale"
        + also("precision", VARIANT_NAMES),
    )
    parser.add_argument(
        "--steps",
        type=whole_number(1, MAX_STEPS),
        metavar="N",
        help="timed steps per precision, spread over the rounds (default: enough that each round "
        "lasts 0.2 s, and at least 20)",
    )
    parser.add_argument(
        "--warmup", type=whole_number(1, MAX_STEPS), metavar="N", help="untimed warm-up steps (default 3)"
    )
    parser.add_argument(
        "--rounds",
        type=whole_number(1, MAX_ROUNDS),
        metavar="N",
        help="rounds in which the precisions take turns (default 9, 5 with --quick); "
        "each round's batch of steps lasts at least 0.2 s",
    )
    parser.add_argument(
        "--budget",
        type=seconds(MAX_TIMEOUT),
        metavar="S",
        help="seconds the whole measurement may take, the frameworks' imports included: one process "
        "per precision, fewer steps per round, then fewer rounds, to fit",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="about half the time: 5 rounds after 2 warm-up steps, one process per precision",
    )
    parser.add_argument(
        "--timeout",
        type=seconds(MAX_TIMEOUT),
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help="seconds each precision may run, its start-up included (default 120)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu", "mps", "xpu"),
        default="auto",
        help="gpu: NVIDIA; mps: the Apple GPU; xpu: Intel GPUs (default: auto, the advised device)",
    )
    parser.add_argument("--json", action="store_true", help="print the bench block as JSON")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the bench block as JSON to FILE")
    parser.set_defaults(run=run)


def precisions(text: str) -> str:
    """An argparse type: a comma list of precisions (aliases such as bf16 allowed), as their names."""
    from hwcheck.base.errors import InputError
    from hwcheck.measure.runner import select_variants

    try:
        return ",".join(variant.name for variant in select_variants(text))
    except InputError as error:
        raise argparse.ArgumentTypeError(error.problem) from None


precisions.vocabulary = "precision"  # type: ignore[attr-defined]  # a word option, not a number


def run(args: argparse.Namespace) -> int:
    """Measure, then print the table (or the JSON) and write the file."""
    from hwcheck import bench
    from hwcheck.base.safe import json_text
    from hwcheck.measure.render import ProgressBars, render_bench

    if args.output and args.output != "-":
        from hwcheck.render.report import check_writable, refuse_inputs

        refuse_inputs([args.output], input_files(args))  # before minutes of measuring, not after
        check_writable(args.output)
    options = dict(
        workload=args.workload,
        script=args.script,
        framework=args.framework,
        policies=args.policies,
        steps=args.steps,
        warmup=args.warmup,
        rounds=args.rounds,
        budget=args.budget,
        quick=args.quick,
        timeout=args.timeout,
        device=args.device,
    )
    from hwcheck.render.console import is_terminal

    # Bars are for a person watching a terminal: a pipe, a log file or --json gets none.
    if args.json or not is_terminal(sys.stderr):
        document = bench(**options)
    else:
        with ProgressBars() as bars:
            document = bench(**options, progress=bars)
    text = json_text(document)
    unwritten = None
    if args.output:
        from hwcheck.base.errors import InputError
        from hwcheck.render.report import write_output

        # Written before anything is printed about it; never over the script it measured.
        try:
            write_output(args.output, text, inputs=input_files(args))
        except InputError as error:
            # The folder went away or filled up while measuring: what was measured is still shown.
            unwritten = error
    if args.json:
        sys.stdout.write(text)
    else:
        render_bench(document)
    if unwritten is not None:
        raise unwritten
    return 0
