"""The `hwcheck` command line: parses arguments and maps errors to exit statuses."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading

from hwcheck.base import __version__
from hwcheck.base.children import install_signal_handlers, restore_signal_handlers
from hwcheck.base.errors import InputError
from hwcheck.base.numbers import whole_or_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_FINDING_ERROR, EXIT_BAD_INPUT = 0, 1, 2

# Each is a module in hwcheck.commands; only the one being run is imported, so
# `hwcheck doctor` never pays for the emitter's or the inventory's imports.
COMMANDS = ("doctor", "report", "config", "inventory", "nfd", "bench")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, sized without importing shutil (~4 ms of every run)."""

    def __init__(self, prog: str, **options: Any) -> None:
        options.setdefault("width", _terminal_columns() - 2)
        super().__init__(prog, **options)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with hwcheck's help formatter, for the top level and each subcommand."""

    def __init__(self, *args: Any, **options: Any) -> None:
        options.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **options)


def _terminal_columns() -> int:
    # What shutil.get_terminal_size reads: COLUMNS, else the terminal, else 80.
    columns = whole_or_none(os.environ.get("COLUMNS", "").strip())
    if columns is not None:
        return max(columns, 20)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 80
    except (OSError, ValueError):
        return 80


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or just `only` when given."""
    parser = ArgumentParser(
        prog="hwcheck",
        description="Which precision should this machine train in, and exactly how?",
    )
    parser.add_argument("--version", action="version", version=f"hwcheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in COMMANDS:
        if only is None or name == only:
            importlib.import_module(f"hwcheck.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 fine, 1 error finding, 2 bad input)."""
    argv = sys.argv[1:] if argv is None else argv
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)  # only the main thread may set signal handlers
    # SIGINT, SIGTERM, SIGHUP: kill every child's process group, then unwind (base/children.py).
    replaced = install_signal_handlers()
    try:
        return _main(argv)
    finally:
        restore_signal_handlers(replaced)


def _main(argv: list[str]) -> int:
    # Building every subcommand's options costs ~5 ms; `hwcheck doctor` needs only its own.
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # The subcommand's usage, not the top level's: `doctor --policy` is a mistake about doctor.
        _subcommand_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        status = args.run(args)
        sys.stdout.flush()  # a full disk shows here, not in the interpreter's exit
        return status
    except InputError as error:
        from hwcheck.base.safe import terminal_text

        # The message names a file or value the user or another machine chose: it may hold escapes.
        print(f"hwcheck: error: {terminal_text(error)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `hwcheck doctor | head` closed the pipe early: not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK
    except OSError as error:
        from hwcheck.base.safe import terminal_text

        # `hwcheck doctor --json > /dev/full`: one line, not a traceback.
        where = error.filename or "standard output"
        print(
            f"hwcheck: error: cannot write {terminal_text(where)}: {error.strerror or error}", file=sys.stderr
        )
        _discard_stdout()
        return EXIT_BAD_INPUT


def _subcommand_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand `args` ran, or the top-level one when none was named."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and args.command in action.choices:
            return action.choices[args.command]
    return parser


def _discard_stdout() -> None:
    # Output still buffered would fail again when the interpreter flushes it at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
