"""The `hwcheck` command line: parses arguments and maps errors to exit statuses."""

from __future__ import annotations

import argparse
import sys

from hwcheck import __version__
from hwcheck.commands import config, doctor, inventory, nfd, report
from hwcheck.errors import InputError

EXIT_OK, EXIT_FINDING_ERROR, EXIT_BAD_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="hwcheck",
        description="Which precision should this machine train in, and exactly how?",
    )
    parser.add_argument("--version", action="version", version=f"hwcheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (doctor, report, config, inventory, nfd):
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 fine, 1 error finding, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return args.run(args)
    except InputError as error:
        print(f"hwcheck: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `hwcheck doctor | head` closed the pipe early: not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK
