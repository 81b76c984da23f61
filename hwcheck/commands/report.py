"""`hwcheck report`: write the JSON report an inventory merges."""

from __future__ import annotations

import argparse
import re

from hwcheck.base.errors import InputError
from hwcheck.commands import input_files, read_machine, recommend_for
from hwcheck.commands.options import add_framework_option, add_machine_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.recommendation import Recommendation


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the report subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="write the JSON report for an inventory",
        description="Write this machine's report (facts, probe statuses, recommendation, "
        "time and host, and with --bench the measured step times; `advice`: the policy for each "
        "framework and trainer installed, or for --framework alone) atomically to FILE, or to "
        "standard output with -o -. With --facts, "
        "the report is of the machine the file describes: a report file's host is kept, "
        "and bare facts have no host.",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write ('-' for standard output); %%N in the name becomes the short host "
        "name, as in Slurm's file patterns (srun ... hwcheck report -o 'reports/%%N.json'); an "
        "existing file keeps its permissions",
    )
    parser.add_argument(
        "--redact",
        action="store_true",
        help="leave out the host name, and scrub GPU and MIG UUIDs, serials, PCI addresses, "
        "home directories and host names from every field",
    )
    parser.add_argument(
        "--bench",
        metavar="FILE",
        action="append",
        default=[],
        help="add the results of `hwcheck bench --json` in FILE (repeatable): the report carries them "
        "under `bench`, the rules compare them with the advice, the inventory shows their speed-ups",
    )
    add_framework_option(parser)
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Build the stamped report and write it; the exit status follows the findings."""
    from hwcheck.render.report import build_report, say_written, to_json, write_output

    facts, probes, host, fingerprint = read_machine(args)
    if args.bench:
        from hwcheck.facts.bench import read_bench, with_bench

        facts = with_bench(facts, [block for path in args.bench for block in read_bench(path)])
    recommendation = recommend_for(args, facts, probes, framework=args.framework)
    if fingerprint is None:
        from hwcheck.facts.identity import machine_fingerprint, read_machine_id

        # A live machine by its machine id; replayed facts by their GPUs' own ids, if any.
        fingerprint = machine_fingerprint(facts, None if args.facts else read_machine_id())
    report = build_report(
        facts, probes, recommendation, stamped=True, host=host, redact=args.redact, fingerprint=fingerprint
    )
    report["advice"] = advice_by_framework(args, facts, probes, recommendation)
    path = output_path(args.output, host)
    write_output(path, to_json(report), inputs=input_files(args))
    say_written(path, "the report")
    return 1 if recommendation.has_errors else 0


def advice_by_framework(
    args: argparse.Namespace, facts: dict[str, Any], probes: dict[str, Any], recommendation: Recommendation
) -> dict[str, dict[str, Any]]:
    """The advice for each framework and trainer installed (or only the one --framework names), by name."""
    from hwcheck.engine.trainers import installed as installed_trainers
    from hwcheck.facts import section

    if args.framework is not None:
        chosen = {args.framework: recommendation}
    else:
        frameworks = section(facts, "frameworks")
        names = [name for name in ("torch", "tensorflow", "jax") if section(frameworks, name).get("version")]
        if str(section(frameworks, "keras").get("version") or "").startswith("3."):
            names.append("keras")
        names += [name for name, row in installed_trainers(frameworks).items() if row["installed"]]
        chosen = {name: recommend_for(args, facts, probes, framework=name) for name in names}
    return {name: _advice_entry(advice) for name, advice in chosen.items()}


def _advice_entry(advice: Recommendation) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "policy": advice.policy,
        "device": advice.device,
        "loss_scaling": advice.loss_scaling,
        "tf32": advice.tf32,
        "backend": advice.backend,
        "errors": sum(finding.severity == "error" for finding in advice.findings),
    }
    if advice.native is not None:
        entry["native"] = advice.native
    return entry


def output_path(pattern: str, host: str | None) -> str:
    """The file name with %N replaced by the short host name (srun expands it only in its own options)."""
    if "%N" not in pattern:
        return pattern
    if host is None:
        raise InputError(pattern, "%N names the host, but the --facts file does not say which host it is")
    short = host.split(".")[0]
    # A replayed report's host is input like any other: it must not lead the file elsewhere.
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", short):
        raise InputError(pattern, f"%N: the host name {host[:64]!r} cannot be part of a file name")
    return pattern.replace("%N", short)
