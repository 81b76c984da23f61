"""`hwcheck doctor`: check this machine and say which precision to train in."""

from __future__ import annotations

import sys
import time

from hwcheck.commands import read_machine, recommend_for
from hwcheck.recommendation import POLICIES

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace
    from typing import Any

    from hwcheck.commands import Arguments
    from hwcheck.recommendation import Recommendation

# The forms nearly every run takes: read without argparse (see quick_arguments).
QUICK_FORMS = (["doctor"], ["doctor", "--json"])
# --budget: seconds doctor --measure may bench (here, so that reading doctor's options never
# imports the bench code; measure_advice takes the budget it is given).
DEFAULT_BUDGET = 60.0
MAX_BUDGET = 3600.0
# --verify-timeout: a framework's import takes seconds, a first CUDA context tens of seconds.
DEFAULT_VERIFY_TIMEOUT = 120.0
MAX_VERIFY_TIMEOUT = 3600.0
# Exit status of a check that found no error but failed the gate (--strict, --fail-on): 1 stays
# "training would fail here", 2 "bad input", so a scheduler can tell the three apart.
EXIT_GATE = 3
# Of the budget: what the advice and the report take after the bench, and the least the bench gets.
REPORT_SECONDS = 1.0
MIN_BENCH_SECONDS = 1.0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the doctor subcommand."""
    from hwcheck.commands.options import (
        add_framework_option,
        add_machine_options,
        also,
        rule_ids,
        seconds,
        word,
    )

    parser = subparsers.add_parser(
        "doctor",
        help="check the machine and recommend a precision",
        description="Probe GPUs, CUDA/cuDNN, the CPU, TPUs and frameworks, and recommend a precision "
        "(compute dtype, loss scaling, TF32) with the reasons and the lines that apply it in your "
        "framework. Exit 0 fine, 1 an error-level finding, 2 bad input, 3 no error but the gate "
        "(--strict, --fail-on) failed.",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report instead")
    parser.add_argument(
        "--why-not",
        choices=POLICIES,
        type=word("policy", POLICIES),
        metavar="POLICY",
        help=f"explain why POLICY ({', '.join(POLICIES)}) was not chosen" + also("policy", POLICIES),
    )
    add_framework_option(parser)
    add_machine_options(parser)
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="the model you train (a config.json, a model directory or a Hugging Face id): "
        "warns when its own precision (a checkpoint pretrained in bfloat16) conflicts with the advice",
    )
    gate = parser.add_argument_group("gate")
    gate.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 3) on what is not an error but stops a job: a node check that warns "
        "(peer-to-peer NCCL would hang on, a small /dev/shm) and the --framework named not installed",
    )
    gate.add_argument(
        "--fail-on",
        metavar="RULE_ID",
        action="append",
        type=rule_ids,
        default=[],
        help="fail (exit 3) when a finding with this id is raised (repeatable, or a comma list; "
        "the ids are in brackets after each finding)",
    )
    group = parser.add_argument_group("measure")
    group.add_argument(
        "--measure",
        action="store_true",
        help="where the tables cannot decide (a CPU with bfloat16 instructions, NVIDIA GPUs of compute "
        "capability 8.0+), bench the candidate precisions here and follow the measurement "
        "(reused from the cache on the same machine, framework versions and workload)",
    )
    group.add_argument(
        "--budget",
        type=seconds(MAX_BUDGET),
        default=DEFAULT_BUDGET,
        metavar="SECONDS",
        help=f"seconds doctor --measure may take in all, the frameworks' imports included "
        f"(default {DEFAULT_BUDGET:.0f}, at most {MAX_BUDGET:.0f})",
    )
    group.add_argument("--no-cache", action="store_true", help="with --measure: measure again, do not reuse")
    checked = parser.add_argument_group("verify")
    checked.add_argument(
        "--verify",
        action="store_true",
        help="observe instead of infer: in a child process (this Python and its sys.path) import the "
        "framework, list the devices it sees and run one training step of the advice; recorded as "
        "facts.verified, and the advice follows what worked (costs the framework's import and a few seconds)",
    )
    checked.add_argument(
        "--verify-timeout",
        type=seconds(MAX_VERIFY_TIMEOUT),
        default=DEFAULT_VERIFY_TIMEOUT,
        metavar="SECONDS",
        help=f"deadline of the --verify step, import included (default {DEFAULT_VERIFY_TIMEOUT:.0f})",
    )
    checked.add_argument(
        "--distributed",
        action="store_true",
        help="with --verify: one process per visible GPU (two on the CPU) runs one all-reduce and one "
        "peer-to-peer copy per pair with the framework's backend (NCCL on GPUs, gloo on the CPU); "
        "recorded as facts.distributed, a hang or failure names the pair",
    )
    parser.set_defaults(run=run)


def quick_arguments(argv: list[str]) -> SimpleNamespace | None:
    """The arguments the parser gives `hwcheck doctor [--json]`, read without it; None for any other form.

    Importing argparse, its translations and building doctor's options cost ~5 ms of a run
    that takes ~35; every other form goes through the parser, which also says what is wrong
    with it. tests/test_options.py holds both readings of these forms equal.
    """
    if argv not in QUICK_FORMS:
        return None
    from types import SimpleNamespace

    from hwcheck.probes import DEFAULT_TIMEOUT

    return SimpleNamespace(
        command="doctor",
        json=argv == ["doctor", "--json"],
        why_not=None,
        framework=None,
        facts=None,
        cpuinfo=None,
        rules=[],
        prefer=None,
        timeout=DEFAULT_TIMEOUT,
        measure=False,
        budget=DEFAULT_BUDGET,
        no_cache=False,
        verify=False,
        verify_timeout=DEFAULT_VERIFY_TIMEOUT,
        distributed=False,
        model=None,
        strict=False,
        fail_on=[],
        run=run,
    )


def run(args: Arguments) -> int:
    """Probe, recommend (with --measure: bench what the tables cannot decide, recommend again), print.

    Exit 1 when a finding is error-level, else EXIT_GATE when --strict or --fail-on failed.
    """
    started = time.monotonic()
    fail_on = chosen_rules(args)
    facts, probes, *_ = read_machine(args)
    recommendation = recommend_for(args, facts, probes, framework=args.framework)
    measured = None
    if getattr(args, "measure", False):
        facts, recommendation, measured = _measure(args, facts, probes, recommendation, started)
    if getattr(args, "verify", False):
        facts, recommendation = _verify(args, facts, probes, recommendation)
    if getattr(args, "distributed", False):
        facts, recommendation = _distributed(args, facts, probes, recommendation)
    gated = None
    if getattr(args, "strict", False) or fail_on:
        from hwcheck.recommendation.readiness import gate

        gated = gate(
            ((finding.id, finding.severity) for finding in recommendation.findings),
            strict=getattr(args, "strict", False),
            fail_on=fail_on,
            framework_named=args.framework is not None,
        )
    if args.json:
        from hwcheck.render.report import build_report, to_json

        report = build_report(facts, probes, recommendation)
        if gated is not None:
            report["gate"] = gated
        if measured is not None:
            report["recommendation"]["measure"].update(measured)
        if args.why_not:
            report["why_not"] = {
                "policy": args.why_not,
                "reasons": recommendation.why_not(args.why_not),
            }
        sys.stdout.write(to_json(report))
    else:
        from hwcheck.render.terminal import render_doctor

        render_doctor(facts, probes, recommendation, why_not=args.why_not, measured=measured, gate=gated)
    if recommendation.has_errors:
        return 1
    return EXIT_GATE if gated is not None and not gated["passed"] else 0


def chosen_rules(args: Arguments) -> tuple[str, ...]:
    """The ids --fail-on names, each a rule's (shipped or site): a mistyped id would never fail."""
    named = tuple(dict.fromkeys(id_ for ids in getattr(args, "fail_on", None) or [] for id_ in ids))
    if not named:
        return ()
    from hwcheck.base.errors import InputError
    from hwcheck.commands import site_rule_files
    from hwcheck.engine.rules import load_rules

    known = set(load_rules(site_rule_files(args)).rules)
    unknown = [id_ for id_ in named if id_ not in known]
    if unknown:
        raise InputError(
            "--fail-on", f"no rule has the id {unknown[0]!r} (hwcheck doctor lists them in brackets)"
        )
    return named


def _measure(
    args: Arguments,
    facts: dict[str, Any],
    probes: dict[str, Any],
    recommendation: Recommendation,
    started: float,
) -> tuple[dict[str, Any], Recommendation, dict[str, str]]:
    """doctor --measure: bench the candidates here (or reuse the recorded bench), then recommend again.

    The bench gets what is left of --budget once the probes have run, less REPORT_SECONDS for
    the advice and the report after it: the whole command keeps the budget.
    """
    from hwcheck.base.errors import InputError

    if args.facts or args.cpuinfo:
        replayed = "--facts" if args.facts else "--cpuinfo"
        raise InputError("--measure", f"measures this machine, so it cannot be used with {replayed}")
    from hwcheck.measure.advice import measure_advice

    candidates = recommendation.measure["candidates"]
    if candidates:
        from hwcheck.render.console import is_terminal

        if is_terminal(sys.stderr):
            where = "the GPU" if recommendation.device == "gpu" else "the CPU"
            print(
                f"hwcheck: measuring {', '.join(candidates)} on {where} (at most {args.budget:.0f} s)...",
                file=sys.stderr,
            )
    budget = max(MIN_BENCH_SECONDS, args.budget - (time.monotonic() - started) - REPORT_SECONDS)
    outcome = measure_advice(facts, recommendation, budget=budget, use_cache=not args.no_cache)
    if outcome.block is not None:
        recommendation = recommend_for(args, outcome.facts, probes, framework=args.framework)
    return outcome.facts, recommendation, {"status": outcome.status, "reason": outcome.reason}


def _verify(
    args: Arguments, facts: dict[str, Any], probes: dict[str, Any], recommendation: Recommendation
) -> tuple[dict[str, Any], Recommendation]:
    """doctor --verify: run one step of the advice in a child, record it, and recommend again from it.

    When the step failed and the advice moved to another device, that advice is verified in turn
    (`verified.fallback`). A facts file is advised with the verification it records.
    """
    from hwcheck.base.errors import InputError

    if args.facts:
        if not isinstance(facts.get("verified"), dict):
            raise InputError(
                args.facts,
                "records no verification (facts.verified), and --verify with --facts "
                "replays one: run hwcheck doctor --verify on the machine itself",
            )
        return facts, recommendation
    if args.cpuinfo:
        raise InputError("--verify", "runs a step on this machine, so it cannot be used with --cpuinfo")
    from hwcheck.engine.outcome import runtime_framework
    from hwcheck.measure.verify import verify

    # A trainer's step is PyTorch's: the child runs it in torch.
    framework, backend = runtime_framework(recommendation.framework), recommendation.backend
    _say(
        f"verifying one {recommendation.policy} step on the {recommendation.device.upper()} with {framework}"
    )
    seen = verify(
        framework, backend, recommendation.device, recommendation.policy, timeout=args.verify_timeout
    )
    facts = {**facts, "verified": seen}
    advised = recommend_for(args, facts, probes, framework=args.framework)
    if seen.get("outcome") == "ok" and advised.device != recommendation.device:
        # The framework listed GPUs the probes missed, and the advice moved to them: that advice
        # is what the user gets, so it is the step to observe.
        _say(f"verifying the advice that follows, one {advised.policy} step on the {advised.device.upper()}")
        facts = {
            **facts,
            "verified": verify(
                framework, backend, advised.device, advised.policy, timeout=args.verify_timeout
            ),
        }
        return facts, recommend_for(args, facts, probes, framework=args.framework)
    if seen.get("outcome") != "ok" and (advised.device, advised.policy) != (
        recommendation.device,
        recommendation.policy,
    ):
        _say(f"verifying the advice that follows, one {advised.policy} step on the {advised.device.upper()}")
        again = verify(framework, backend, advised.device, advised.policy, timeout=args.verify_timeout)
        seen["fallback"] = {
            "device": advised.device,
            "policy": advised.policy,
            "outcome": again.get("outcome"),
            "error": again.get("error"),
            "seconds": again.get("seconds"),
        }
        advised = recommend_for(args, facts, probes, framework=args.framework)
    return facts, advised


def _distributed(
    args: Arguments, facts: dict[str, Any], probes: dict[str, Any], recommendation: Recommendation
) -> tuple[dict[str, Any], Recommendation]:
    """doctor --verify --distributed: one all-reduce and one copy per device pair, recorded; advise again."""
    from hwcheck.base.errors import InputError

    if not getattr(args, "verify", False):
        raise InputError("--distributed", "runs with --verify: hwcheck doctor --verify --distributed")
    if args.facts:
        return facts, recommendation  # a facts file is advised with the check it records, if any
    from hwcheck import devices
    from hwcheck.engine.outcome import runtime_framework
    from hwcheck.measure.distributed import check

    framework = runtime_framework(recommendation.framework)
    # The GPUs the process sees, as torch numbers them (ROCm builds call theirs cuda:N too).
    gpus = [d for d in devices.visible(facts, framework) if d.runtime in ("cuda", "rocm")]
    names = [f"cuda:{gpu.number} ({gpu.name})" for gpu in gpus]
    _say(f"checking one all-reduce and every device pair with {framework} on {recommendation.device.upper()}")
    seen = check(framework, recommendation.device, names, timeout=args.verify_timeout)
    facts = {**facts, "distributed": seen}
    return facts, recommend_for(args, facts, probes, framework=args.framework)


def _say(text: str) -> None:
    """A progress line on stderr, when it is a terminal (a pipe or a log gets the report alone)."""
    from hwcheck.render.console import is_terminal

    if is_terminal(sys.stderr):
        print(f"hwcheck: {text}...", file=sys.stderr)
