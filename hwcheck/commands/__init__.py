"""Subcommands: each module has register(subparsers) and a run(args) -> exit status."""

from __future__ import annotations

import argparse
import math
import os
import sys

from hwcheck.base.numbers import whole_or_none
from hwcheck.base.records import NamedTuple
from hwcheck.engine.aliases import UnknownWord, described, resolve
from hwcheck.recommendation import FRAMEWORKS, PREFERENCES, Recommendation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# A probe that needs longer than this is hung, whatever the machine.
MAX_PROBE_SECONDS = 3600.0


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


class Machine(NamedTuple):
    """What a command knows of the machine it advises on."""

    facts: dict[str, Any]
    probes: dict[str, dict[str, Any]]
    host: str | None  # the machine's host name; None when replayed facts do not say
    fingerprint: str | None = None  # the one a replayed report carries (hwcheck/facts/identity.py)


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
        default=5.0,
        metavar="SECONDS",
        help="deadline for each probe (default 5)",
    )


def add_framework_option(parser: argparse.ArgumentParser) -> None:
    """--framework for the commands that advise: whom the advice is written for."""
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        type=word("framework", FRAMEWORKS),
        default=None,
        help="the framework your script trains with: its build is checked and the advice is in its API "
        "(keras: Keras 3 on the backend KERAS_BACKEND or keras.json selects; default: picked from "
        "the installed frameworks, and said so)" + also("framework", FRAMEWORKS),
    )


def input_files(args: argparse.Namespace) -> list[str]:
    """The files a command reads (--facts, --cpuinfo, --rules, --bench, --script): never its output."""
    names: list[str] = []
    for option in ("facts", "cpuinfo", "script", "rules", "bench"):
        value = getattr(args, option, None)
        names.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    return names


def read_machine(args: argparse.Namespace) -> Machine:
    """The facts, probe statuses and host: from --facts/--cpuinfo files, probing live what they leave."""
    from hwcheck.facts import load_machine_file, with_cpu
    from hwcheck.probes import PROBE_NAMES, start
    from hwcheck.probes.cpu import load_cpuinfo

    cpu = load_cpuinfo(args.cpuinfo) if args.cpuinfo else None
    if args.facts:
        facts, host, fingerprint = load_machine_file(args.facts)
        probes = {name: _from_file(args.facts) for name in PROBE_NAMES}
        _note_environment(args.facts, facts)
    else:
        names = tuple(n for n in PROBE_NAMES if not (cpu and n == "cpu"))
        # Nothing else runs meanwhile: work beside the probes' thread only slows its every wait.
        collected = start(timeout=args.timeout, names=names).collected()
        from hwcheck.render.report import this_host

        facts, probes, host = collected.facts, collected.statuses, this_host()
        fingerprint = None  # computed by the commands that write reports (doctor never needs it)
    if cpu is not None:
        facts = with_cpu(facts, cpu)
        probes["cpu"] = _from_file(args.cpuinfo)
    return Machine(facts, {name: probes[name] for name in PROBE_NAMES if name in probes}, host, fingerprint)


def recommend_for(
    args: argparse.Namespace,
    facts: dict[str, Any],
    probes: dict[str, dict[str, Any]],
    *,
    framework: str | None = None,
) -> Recommendation:
    """Run the rules engine with the command's site rules and preference."""
    from hwcheck.recommendation import recommend

    return recommend(
        facts,
        probes=probes,
        framework=framework,
        prefer=args.prefer,
        rule_files=site_rule_files(args),
        remember=True,
    )


def site_rule_files(args: argparse.Namespace) -> list[str]:
    """Site rules files from HWCHECK_RULES, then --rules (later files override earlier ones)."""
    from_environment = [p for p in os.environ.get("HWCHECK_RULES", "").split(os.pathsep) if p]
    return from_environment + list(args.rules)


def _note_environment(path: str, facts: dict[str, Any]) -> None:
    """Say on stderr that the file's environment is used when the shell sets the variables differently.

    The advice replays the machine in the file, its CUDA_VISIBLE_DEVICES and kin included;
    a shell variable that says otherwise is not mixed in, but it must not be ignored silently.
    """
    import sys

    from hwcheck.base.safe import terminal_text
    from hwcheck.probes.environment import VARIABLES

    environment = facts.get("environment")
    recorded: dict[str, Any] = environment if isinstance(environment, dict) else {}
    shell = {name: os.environ[name] for name in VARIABLES if name in os.environ}
    differ = sorted(name for name in shell if recorded.get(name) != shell[name])
    if not differ:
        return
    used = ", ".join(f"{name}={value!r}" for name, value in recorded.items()) or "none of the variables set"
    ignored = ", ".join(f"{name}={shell[name]!r}" for name in differ)
    print(
        terminal_text(
            f"hwcheck: note: advising with the environment recorded in {path} ({used}); "
            f"this shell's {ignored} is not used (edit the file's \"environment\" to change it)"
        ),
        file=sys.stderr,
    )


def _from_file(path: str) -> dict[str, Any]:
    return {"status": "file", "reason": f"read from {path}", "seconds": None}
