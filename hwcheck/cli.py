"""The `hwcheck` command line: parses arguments and maps errors to exit statuses.

Importing this module costs next to nothing: main() imports what a command needs, after
turning off the cycle collector for the start-up (see main).
"""

from __future__ import annotations

import gc
import os
import sys

from hwcheck.base import platform_seam

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

EXIT_OK, EXIT_FINDING_ERROR, EXIT_BAD_INPUT = 0, 1, 2

# Each is a module in hwcheck.commands; only the one being run is imported, so
# `hwcheck doctor` never pays for the emitter's or the inventory's imports.
COMMANDS = ("doctor", "report", "config", "inventory", "nfd", "bench", "fit", "install", "explain")
# The command whose start-up is its whole run (4x a bare interpreter, docs/benchmarks.md): it
# never collects cycles, and as a program it ends as soon as its output is written.
QUICK_COMMANDS = ("doctor",)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered, or just `only` when given."""
    import importlib

    from hwcheck.base import __version__
    from hwcheck.commands.options import ArgumentParser

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
    """Run the command line; returns the exit status (0 fine, 1 error finding, 2 bad input).

    Without `argv` this is the process's own command line (sys.argv), and `hwcheck doctor`
    ends the process once its output is written, without tearing the interpreter down.
    """
    program = argv is None
    if program:
        platform_seam.utf8_when_redirected((sys.stdout, sys.stderr))
    argv = sys.argv[1:] if argv is None else argv
    collecting = gc.isenabled()
    # Starting up allocates tens of thousands of objects that all stay alive: collecting
    # cycles meanwhile cost doctor ~3 ms a run and found none. Long commands collect again
    # once started (_main); a caller in the same process gets the collector back as it was.
    gc.disable()
    try:
        status = _main_with_handlers(argv, collecting)
    finally:
        if collecting:
            gc.enable()
    if program and argv[:1] and argv[0] in QUICK_COMMANDS:
        _end_process(status)
    return status


def _main_with_handlers(argv: list[str], collecting: bool) -> int:
    import threading

    from hwcheck.base.children import install_signal_handlers, restore_signal_handlers

    if threading.current_thread() is not threading.main_thread():
        return _main(argv, collecting)  # only the main thread may set signal handlers
    # SIGINT, SIGTERM, SIGHUP: kill every child's process group, then unwind (base/children.py).
    replaced = install_signal_handlers()
    try:
        return _main(argv, collecting)
    finally:
        restore_signal_handlers(replaced)


def _end_process(status: int) -> None:
    """End the process with `status` now that its output is written, as its exit would.

    The exit handlers run, as the interpreter's own exit runs them (base/children.py kills
    any child a probe left behind), then the process ends without freeing each module and
    object one by one: that teardown cost doctor 19 M instructions (~5 ms) a run. Output
    that cannot be flushed is left to the interpreter's own exit, which reports it.
    """
    import atexit

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    os._exit(status)


def _main(argv: list[str], collecting: bool = False) -> int:
    from hwcheck.base.errors import InputError

    # Building every subcommand's options costs ~5 ms; `hwcheck doctor` needs only its own.
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = _quick_arguments(argv) if only in QUICK_COMMANDS else None
    if args is None:
        parser = build_parser(only)
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            # The subcommand's usage, not the top level's: `doctor --policy` is a mistake about doctor.
            _subcommand_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
        if not getattr(args, "run", None):
            parser.print_help(sys.stderr)
            return EXIT_BAD_INPUT
    if collecting and args.command not in QUICK_COMMANDS:
        gc.enable()  # a bench or an inventory of thousands of reports runs long: collect as usual
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


def _quick_arguments(argv: list[str]) -> Any:
    """doctor's common forms, read without argparse (commands/doctor.py quick_arguments), else None."""
    from hwcheck.commands.doctor import quick_arguments

    return quick_arguments(argv)


def _subcommand_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand `args` ran, or the top-level one when none was named."""
    import argparse

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
