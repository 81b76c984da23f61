"""Subcommands: each module has register(subparsers) and a run(args) -> exit status."""

from __future__ import annotations

import argparse
import os
from typing import Any

from hwcheck.recommendation import FRAMEWORKS, PREFERENCES, Recommendation


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
        help="16-bit type to prefer where both run fast (float16 picks mixed_float16 on Ampere+)",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="deadline for each probe (default 5)",
    )


def add_framework_option(parser: argparse.ArgumentParser) -> None:
    """--framework for the commands that advise: whose build the rules check."""
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default="tensorflow",
        help="whose build to check against the GPUs and drivers (default tensorflow)",
    )


def read_machine(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The facts and probe statuses: from --facts/--cpuinfo files, probing live what they leave."""
    from hwcheck.facts import load_facts, with_cpu
    from hwcheck.probes import PROBE_NAMES, collect
    from hwcheck.probes.cpu import load_cpuinfo

    cpu = load_cpuinfo(args.cpuinfo) if args.cpuinfo else None
    if args.facts:
        facts = load_facts(args.facts)
        probes = {name: _from_file(args.facts) for name in PROBE_NAMES}
    else:
        names = tuple(n for n in PROBE_NAMES if not (cpu and n == "cpu"))
        collected = collect(timeout=args.timeout, names=names)
        facts, probes = collected.facts, collected.statuses
    if cpu is not None:
        facts = with_cpu(facts, cpu)
        probes["cpu"] = _from_file(args.cpuinfo)
    return facts, {name: probes[name] for name in PROBE_NAMES if name in probes}


def recommend_for(
    args: argparse.Namespace,
    facts: dict[str, Any],
    probes: dict[str, dict[str, Any]],
    *,
    framework: str = "tensorflow",
) -> Recommendation:
    """Run the rules engine with the command's site rules and preference."""
    from hwcheck.engine import recommend

    return recommend(
        facts,
        probes=probes,
        framework=framework,
        prefer=args.prefer,
        rule_files=site_rule_files(args),
    )


def site_rule_files(args: argparse.Namespace) -> list[str]:
    """Site rules files from HWCHECK_RULES, then --rules (later files override earlier ones)."""
    from_environment = [p for p in os.environ.get("HWCHECK_RULES", "").split(os.pathsep) if p]
    return from_environment + list(args.rules)


def _from_file(path: str) -> dict[str, Any]:
    return {"status": "file", "reason": f"read from {path}", "seconds": None}
