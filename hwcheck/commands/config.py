"""`hwcheck config`: emit a training script for the recommended precision, with its settings."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.safe import json_text
from hwcheck.commands import input_files, read_machine, recommend_for
from hwcheck.commands.options import add_machine_options, also, whole_number, word
from hwcheck.emit.spec import DEFAULT_STEPS, FRAMEWORKS, MAX_STEPS
from hwcheck.recommendation import POLICIES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the config subcommand."""
    parser = subparsers.add_parser(
        "config",
        help="emit a training script for the recommended precision",
        description="Write a training script that runs as emitted on synthetic data, for the "
        "recommended (or --policy) precision and the installed Keras, with a settings file "
        "(FILE's name with .settings.json) giving the reason for each choice; both are written "
        "or neither, and existing ones are replaced only with --force. -o - prints the script only.",
    )
    parser.add_argument(
        "--framework",
        required=True,
        choices=FRAMEWORKS,
        type=word("script", FRAMEWORKS),
        help="keras (any Keras 3 backend), keras-custom (a TensorFlow loop), torch or jax"
        + also("script", FRAMEWORKS),
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="where to write the script (- for stdout)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing script and settings file (they keep their permissions)",
    )
    parser.add_argument(
        "--policy",
        type=word("policy", POLICIES),
        metavar="POLICY",
        help=f"train in this policy instead ({', '.join(POLICIES)})" + also("policy", POLICIES),
    )
    parser.add_argument(
        "--keras-version",
        type=whole_number(2, 3),
        metavar="{2,3}",
        help="write for Keras 2 (tf_keras) or 3 instead of the installed one",
    )
    parser.add_argument(
        "--fallback",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="for mixed_float16 loops: the precision guard that falls back to mixed_bfloat16 "
        "or float32 when float16 keeps overflowing (default: on)",
    )
    parser.add_argument(
        "--steps",
        type=whole_number(1, MAX_STEPS),
        default=DEFAULT_STEPS,
        metavar="N",
        help=f"training steps the script runs by default ({DEFAULT_STEPS})",
    )
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Recommend, emit the script and its settings, write them."""
    from hwcheck.emit import ScriptSpec, emit_script
    from hwcheck.emit.machine import keras_major, precision_features
    from hwcheck.emit.settings import settings_for
    from hwcheck.render.report import write_outputs

    if args.output != "-" and not args.force:
        output = Path(args.output)
        for path in (output, settings_path_for(output)):
            if os.path.lexists(path):
                raise InputError(path, "already exists; --force replaces it")
    facts, probes, *_ = read_machine(args)
    # keras-custom is a TensorFlow loop; the others are advised as the framework they are.
    engine_framework = "tensorflow" if args.framework == "keras-custom" else args.framework
    recommendation = recommend_for(args, facts, probes, framework=engine_framework)
    policy = args.policy or recommendation.policy
    features = precision_features(facts, recommendation.device)
    spec = ScriptSpec(
        framework=args.framework,
        policy=policy,
        keras_major=args.keras_version or keras_major(facts),
        device=recommendation.device,
        has_bfloat16=features["bfloat16"],
        has_tf32=features["tf32"],
        guard=args.fallback,
        steps=args.steps,
    )
    if spec.float16 and spec.device == "cpu":
        print(
            "hwcheck: warning: mixed_float16 on a CPU runs slower than float32; "
            f"hwcheck recommends {recommendation.policy} for this machine",
            file=sys.stderr,
        )
    script = emit_script(spec)
    if args.output == "-":
        sys.stdout.write(script)
        _warn_if_not_installed(args, facts)
        return 0
    output = Path(args.output)
    settings_path = settings_path_for(output)
    settings = settings_for(
        spec, recommendation, policy_from_user=args.policy is not None, script_name=output.name
    )
    # Created exclusively unless --force: two runs at once cannot both write the pair.
    write_outputs(
        [(output, script), (settings_path, json_text(settings))], inputs=input_files(args), replace=args.force
    )
    keras_note = f", Keras {spec.keras_major}" if spec.framework.startswith("keras") else ""
    print(f"wrote {output} ({spec.framework}, {spec.policy}{keras_note}) and {settings_path}")
    _warn_if_not_installed(args, facts)
    return 0


# What each script imports first, its name, and how to install it.
SCRIPT_NEEDS = {
    "keras": ("keras", "Keras", "pip install keras"),
    "keras-custom": ("tensorflow", "TensorFlow", "pip install tensorflow"),
    "torch": ("torch", "PyTorch", "pip install torch"),
    "jax": ("jax", "JAX", "pip install -U jax optax"),
}


def _warn_if_not_installed(args: argparse.Namespace, facts: dict[str, Any]) -> None:
    """Warn on stderr when the advised machine lacks the script's framework: it would fail on import."""
    from hwcheck.base.safe import terminal_text

    package, label, install = SCRIPT_NEEDS[args.framework]
    frameworks = facts.get("frameworks")
    if not isinstance(frameworks, dict) or (frameworks.get(package) or {}).get("version"):
        return  # unknown (a sparse facts file), or installed
    where = f"on the machine in {terminal_text(args.facts)}" if args.facts else "here"
    print(
        f"hwcheck: warning: the script needs {label}, which is not installed {where}: "
        f"it fails on import until you run {install}",
        file=sys.stderr,
    )


def settings_path_for(script: Path) -> Path:
    """The settings file written beside `script`: train.py's is train.settings.json."""
    return script.with_name(f"{script.stem}.settings.json")
