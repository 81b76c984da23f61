"""Subcommands: each module has register(subparsers) and a run(args) -> exit status.

What the commands that advise one machine share lives here; their options, with argparse,
in commands/options.py.
"""

from __future__ import annotations

import os

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any, TypeAlias

    # What the parser gives, or doctor's common forms read without it (commands/doctor.py).
    Arguments: TypeAlias = argparse.Namespace | SimpleNamespace

    from hwcheck.recommendation import Recommendation


class Machine(NamedTuple):
    """What a command knows of the machine it advises on."""

    facts: dict[str, Any]
    probes: dict[str, dict[str, Any]]
    host: str | None  # the machine's host name; None when replayed facts do not say
    fingerprint: str | None = None  # the one a replayed report carries (hwcheck/facts/identity.py)


# Every option that names a file a command reads; the writer refuses to write over any of them.
INPUT_OPTIONS = ("facts", "cpuinfo", "script", "rules", "bench", "model")


def input_files(args: Arguments) -> list[str]:
    """The files a command reads (INPUT_OPTIONS and the HWCHECK_RULES files): never its output."""
    names: list[str] = []
    for option in INPUT_OPTIONS:
        value = getattr(args, option, None)
        names.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    if hasattr(args, "rules"):
        names.extend(p for p in os.environ.get("HWCHECK_RULES", "").split(os.pathsep) if p)
    return names


def read_machine(args: Arguments) -> Machine:
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
        from hwcheck.probes.node import with_probe_statuses

        facts = with_probe_statuses(facts, probes)  # a facts file replays the node as read
        fingerprint = None  # computed by the commands that write reports (doctor never needs it)
    if cpu is not None:
        facts = with_cpu(facts, cpu)
        probes["cpu"] = _from_file(args.cpuinfo)
    if getattr(args, "model", None):  # the named model's own precision (facts.model)
        from hwcheck.recommendation.model_precision import model_facts

        facts = {**facts, "model": model_facts(args.model)}
    return Machine(facts, {name: probes[name] for name in PROBE_NAMES if name in probes}, host, fingerprint)


def recommend_for(
    args: Arguments,
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


def warn_model_precision(recommendation: Recommendation) -> None:
    """Warn on stderr when --model names a model whose own precision the advice would overflow."""
    from hwcheck.base.safe import terminal_text
    from hwcheck.render.notes import note

    for finding in recommendation.findings:
        if finding.id == "model-overflows-float16":
            message = f"{terminal_text(finding.message)} {terminal_text(finding.remedy or '')}"
            note(f"hwcheck: warning: {message}")


def site_rule_files(args: Arguments) -> list[str]:
    """Site rules files from HWCHECK_RULES, then --rules (later files override earlier ones)."""
    from_environment = [p for p in os.environ.get("HWCHECK_RULES", "").split(os.pathsep) if p]
    return from_environment + list(args.rules)


def _note_environment(path: str, facts: dict[str, Any]) -> None:
    """Say on stderr that the file's environment is used when the shell sets the variables differently.

    The advice replays the machine in the file, its CUDA_VISIBLE_DEVICES and kin included;
    a shell variable that says otherwise is not mixed in, but it must not be ignored silently.
    """
    from hwcheck.base.safe import terminal_text
    from hwcheck.probes.environment import VARIABLES
    from hwcheck.render.notes import note

    environment = facts.get("environment")
    recorded: dict[str, Any] = environment if isinstance(environment, dict) else {}
    shell = {name: os.environ[name] for name in VARIABLES if name in os.environ}
    differ = sorted(name for name in shell if recorded.get(name) != shell[name])
    if not differ:
        return
    used = ", ".join(f"{name}={value!r}" for name, value in recorded.items()) or "none of the variables set"
    ignored = ", ".join(f"{name}={shell[name]!r}" for name in differ)
    note(
        terminal_text(
            f"hwcheck: note: advising with the environment recorded in {path} ({used}); "
            f"this shell's {ignored} is not used (edit the file's \"environment\" to change it)"
        )
    )


def _from_file(path: str) -> dict[str, Any]:
    return {"status": "file", "reason": f"read from {path}", "seconds": None}
