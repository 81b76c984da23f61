"""The command line's options: hwcheck's argparse parser, option types and the options commands share.

Kept apart from hwcheck.commands so that `hwcheck doctor` and `hwcheck doctor --json`, read
without argparse (commands/doctor.py quick_arguments), never import it.
"""

from __future__ import annotations

import argparse
import math
import re

from hwcheck.base.numbers import whole_or_none
from hwcheck.engine.aliases import UnknownWord, described, resolve
from hwcheck.probes import DEFAULT_TIMEOUT
from hwcheck.recommendation import FRAMEWORKS, PREFERENCES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# A probe that needs longer than this is hung, whatever the machine.
MAX_PROBE_SECONDS = 3600.0
# What --solve finds (recommendation.fit.SOLVABLE, without importing it at start-up).
SOLVABLE = ("batch", "seq-len")


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
    from hwcheck.base.wrap import terminal_width

    return terminal_width()


def seconds(maximum: float) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds above 0 and at most `maximum`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of seconds: {text[:40]!r}") from None
        if not math.isfinite(value) or not 0 < value <= maximum:
            raise argparse.ArgumentTypeError(f"must be above 0 and at most {maximum:.0f}, not {text[:40]!r}")
        return value

    return parse


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `minimum` to `maximum`."""

    def parse(text: str) -> int:
        stripped = text.strip()
        value = whole_or_none(stripped.removeprefix("-"))
        if value is None:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}")
        value = -value if stripped.startswith("-") else value
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum}, not {text[:40]!r}")
        return value

    return parse


def rule_ids(text: str) -> tuple[str, ...]:
    """An argparse type: one rule id or a comma list of them ("node-shm-small,node-acs-redirect")."""
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if not ids or any(not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,127}", id_) for id_ in ids):
        raise argparse.ArgumentTypeError(f"not a rule id or a comma list of them: {text[:60]!r}")
    return ids


def word(kind: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    """An argparse type: the canonical name among `choices` that a typed word means ("pytorch" is torch)."""

    def parse(text: str) -> str:
        try:
            return resolve(kind, text, choices)
        except UnknownWord as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.vocabulary = kind  # type: ignore[attr-defined]  # tells word options from numeric ones
    return parse


def also(kind: str, choices: tuple[str, ...]) -> str:
    """The aliases of `choices` for a --help text: " (also: bf16, bfloat16 = mixed_bfloat16)"."""
    return f" (also: {described(kind, choices)})"


def add_machine_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that reads a machine and advises on it."""
    group = parser.add_argument_group("machine")
    group.add_argument("--facts", metavar="FILE", help="take the whole machine from a facts (or report) file")
    group.add_argument("--cpuinfo", metavar="FILE", help="take the CPU from a raw /proc/cpuinfo dump")
    group.add_argument(
        "--rules",
        metavar="FILE",
        action="append",
        default=[],
        help="site rules that extend or override the shipped ones by id (repeatable; "
        "HWCHECK_RULES adds more, separated by the path separator)",
    )
    group.add_argument(
        "--prefer",
        choices=PREFERENCES,
        type=word("preference", PREFERENCES),
        help="16-bit type to prefer where both run fast (float16 picks mixed_float16 on Ampere+)"
        + also("preference", PREFERENCES),
    )
    group.add_argument(
        "--timeout",
        type=seconds(MAX_PROBE_SECONDS),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="deadline for each probe (default 5)",
    )


def add_framework_option(parser: argparse.ArgumentParser) -> None:
    """--framework for the commands that advise: whom the advice is written for."""
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        metavar="NAME",  # the choices are in the help, wrapped: in the usage they overflow 80 columns
        type=word("framework", FRAMEWORKS),
        default=None,
        help=f"the framework your script trains with ({', '.join(FRAMEWORKS)}): its build is checked "
        "and the advice is in its API "
        "(keras: Keras 3 on the backend KERAS_BACKEND or keras.json selects; default: picked from "
        "the installed frameworks, and said so)" + also("framework", FRAMEWORKS),
    )


def add_solve_option(parser: argparse.ArgumentParser, choices: tuple[str, ...] = SOLVABLE) -> None:
    """--solve, as fit and config share it: the largest micro-batch (or sequence length) that fits."""
    what = "micro-batch (or sequence length)" if "seq-len" in choices else "micro-batch per GPU"
    parser.add_argument(
        "--solve",
        choices=choices,
        help=f"the largest {what} whose estimate fits, within the verdict's margin (needs --model), "
        "as `hwcheck fit --solve` finds it",
    )
