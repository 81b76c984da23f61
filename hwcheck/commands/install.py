"""`hwcheck install`: the pip and uv commands for the build of a framework that runs this machine."""

from __future__ import annotations

import argparse
import sys

from hwcheck.commands import read_machine
from hwcheck.commands.options import add_machine_options, word

PACKAGES = ("torch", "jax", "tensorflow")
UNWRAPPED = 1_000_000


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the install subcommand."""
    parser = subparsers.add_parser(
        "install",
        help="print the pip and uv commands for the build that runs this machine's accelerators",
        description="Print the exact pip and uv commands for the PyTorch, JAX or TensorFlow build "
        "that runs this machine's accelerators: the CUDA variant by compute capability and driver, "
        "the ROCm index by gfx target, XPU, or the CPU, with the reason; when no current release "
        "runs the GPU, the last one that did. Prints only; installs nothing. Exit 0, or 1 when no "
        "build in hwcheck's tables runs the GPUs.",
    )
    parser.add_argument(
        "package",
        choices=PACKAGES,
        type=word("framework", PACKAGES),
        help="torch (also pytorch), jax or tensorflow (also tf)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read the machine, choose the build, print the commands (or the plan as JSON)."""
    from hwcheck.recommendation.install import install_plan

    facts, *_ = read_machine(args)
    plan = install_plan(facts, args.package)
    if args.json:
        from hwcheck.base.safe import json_text

        sys.stdout.write(json_text(plan))
    else:
        from hwcheck.base.safe import terminal_text
        from hwcheck.base.wrap import terminal_width, wrap_shell, wrap_text

        # The reason as shell comments that fit the terminal, the commands continued with a
        # backslash: the block still pastes as it is. In a pipe (no COLUMNS), whole lines.
        width = terminal_width(default=UNWRAPPED)
        print("\n".join(wrap_text(terminal_text(plan["why"]), width, "# ")))
        if plan["pip"]:
            for command in (plan["pip"], plan["uv"]):
                print("\n".join(wrap_shell(command, width)))
    return 0 if plan["pip"] else 1
