"""`hwcheck nfd`: write this node's Node Feature Discovery labels (a features.d file)."""

from __future__ import annotations

import argparse

from hwcheck.base.errors import InputError
from hwcheck.commands import input_files, read_machine, recommend_for
from hwcheck.commands.options import add_framework_option, add_machine_options, seconds

# NFD writes the expiry as a timestamp; a year is longer than any label should outlive its node.
MAX_TTL_SECONDS = 366 * 86400.0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the nfd subcommand."""
    from hwcheck.inventory.nfd import DEFAULT_FEATURE_FILE, DEFAULT_NAMESPACE

    parser = subparsers.add_parser(
        "nfd",
        help="write Node Feature Discovery labels for Kubernetes",
        description="Probe this node, recommend a policy, and write the labels (policy, "
        "device, GPU compute capability, bf16/TF32/AMX support) as an NFD local feature file, "
        "atomically. Exit 0 written, 1 written but an error-level finding, 2 bad input.",
    )
    parser.add_argument(
        "-o",
        "--output",
        default=DEFAULT_FEATURE_FILE,
        metavar="PATH",
        help=f"the feature file; - for standard output (default {DEFAULT_FEATURE_FILE})",
    )
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help=f"label namespace (default {DEFAULT_NAMESPACE}, which nfd-master always allows)",
    )
    parser.add_argument(
        "--ttl",
        type=seconds(MAX_TTL_SECONDS),
        metavar="SECONDS",
        help="let NFD drop the labels this long after writing unless they are rewritten",
    )
    add_framework_option(parser)
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Probe, recommend, write the feature file; exit 1 when a finding is error-level."""
    from hwcheck.inventory.nfd import feature_file_text, namespace_problem, node_labels
    from hwcheck.render.report import say_written, write_output

    problem = namespace_problem(args.namespace)
    if problem:
        raise InputError("--namespace", problem)
    facts, probes, *_ = read_machine(args)
    recommendation = recommend_for(args, facts, probes, framework=args.framework)
    text = feature_file_text(
        node_labels(facts, recommendation), namespace=args.namespace, ttl_seconds=args.ttl
    )
    # The temporary file is ".NAME.*.tmp" beside the target: NFD skips dot files. An existing
    # feature file keeps its mode, so a non-root NFD worker can still read it.
    write_output(args.output, text, inputs=input_files(args))
    say_written(args.output, "the Node Feature Discovery labels")
    return 1 if recommendation.has_errors else 0
