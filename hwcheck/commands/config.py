"""`hwcheck config`: emit a training script for the recommended precision, with its settings."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.safe import json_text, terminal_text
from hwcheck.commands import config_peft, input_files, read_machine, recommend_for, warn_model_precision
from hwcheck.commands.fit import parameter_count
from hwcheck.commands.options import add_machine_options, add_solve_option, also, whole_number, word
from hwcheck.emit.spec import DEFAULT_STEPS, FP8_FRAMEWORKS, FP8_RECIPES, FRAMEWORKS, MAX_STEPS
from hwcheck.recommendation import POLICIES
from hwcheck.render.notes import note


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
        metavar="NAME",  # the choices are in the help, wrapped
        type=word("script", FRAMEWORKS),
        help="keras (any Keras 3 backend), keras-custom (a TensorFlow loop), torch, jax, or a PyTorch "
        "trainer: lightning, hf-trainer, accelerate (also writes NAME.accelerate.yaml), deepspeed "
        "(also writes NAME.deepspeed.json)" + also("script", FRAMEWORKS),
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
        "--insist",
        action="store_true",
        help="write --policy even where hwcheck says it fails for the model (float16 for a model "
        "pretrained in bfloat16 overflows); without it such a precision is switched, saying so",
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
    parser.add_argument(
        "--fp8",
        choices=FP8_RECIPES,
        help="FP8 for the linear layers, mixed_bfloat16 for the rest: torchao (torch, accelerate) or "
        "transformer-engine (torch, lightning, accelerate); only where the GPUs the process sees run "
        "FP8 (compute capability 8.9+, with the CUDA Transformer Engine needs), else refused with the reason",
    )
    config_peft.add_peft_options(parser)
    deepspeed = parser.add_argument_group("deepspeed")
    deepspeed.add_argument(
        "--zero",
        type=whole_number(0, 3),
        metavar="{0,1,2,3}",
        help="the ZeRO stage of the DeepSpeed config (default 0: no partitioning)",
    )
    deepspeed.add_argument(
        "--offload",
        action="store_true",
        help="offload the optimizer state to the CPU (ZeRO-Offload; needs --zero 1 or more)",
    )
    model = deepspeed.add_mutually_exclusive_group()
    model.add_argument(
        "--params",
        type=parameter_count,
        metavar="N",
        help="your model's parameters: the ZeRO stage (and offload) is the cheapest under which "
        "`hwcheck fit` finds it fits on the GPUs the process sees",
    )
    model.add_argument(
        "--model", metavar="MODEL", help="the same from a config.json, a model directory or a Hugging Face id"
    )
    add_solve_option(parser, ("batch",))
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Recommend, emit the script and its settings, write them."""
    from hwcheck.emit import ScriptSpec, emit_script
    from hwcheck.emit.machine import keras_major, precision_features, visible_gpus
    from hwcheck.emit.settings import settings_for
    from hwcheck.emit.trainer_files import CONFIG_SUFFIX, config_files
    from hwcheck.render.report import write_outputs

    if args.solve and not args.model:
        raise InputError("--solve", "sizes activations: give --model (a config.json, directory or id)")
    if (args.zero is not None or args.offload) and args.framework != "deepspeed":
        raise InputError(
            "--zero", "sets up DeepSpeed's ZeRO (and --offload with it): use --framework deepspeed"
        )
    if args.offload and not args.zero:
        raise InputError(
            "--offload", "needs --zero 1, 2 or 3: ZeRO-Offload moves the partitioned optimizer state"
        )
    if args.peft:
        config_peft.check_peft_options(args)
    if args.output != "-":
        from hwcheck.render.report import refuse_inputs

        output = Path(args.output)
        _refuse_shadowing(output, FRAMEWORK_MODULES)
        suffix = CONFIG_SUFFIX.get(args.framework)
        config_path = [output.with_name(output.stem + suffix)] if suffix else []
        targets = (output, settings_path_for(output), *config_path)
        # An input is never written over, --force or not: say so before "already exists".
        refuse_inputs(targets, input_files(args))
        for path in targets if not args.force else ():
            if os.path.lexists(path):
                raise InputError(path, "already exists; --force replaces it")
    facts, probes, *_ = read_machine(args)
    # keras-custom is a TensorFlow loop; the others (the trainers too) are advised as what they are.
    engine_framework = {"keras-custom": "tensorflow"}.get(args.framework, args.framework)
    recommendation = recommend_for(args, facts, probes, framework=engine_framework)
    warn_model_precision(recommendation)
    policy = args.policy or recommendation.policy
    if args.fp8:
        policy = _fp8_policy(args, recommendation, policy)
    features = precision_features(
        facts, recommendation.device, recommendation.runtime, recommendation.framework
    )
    policy, switched_because = _policy_that_runs(args, recommendation, policy, features["bfloat16"])
    if args.peft == "qlora":
        config_peft.refuse_qlora_without_bitsandbytes(facts, recommendation, policy)
    spec = ScriptSpec(
        framework=args.framework,
        policy=policy,
        keras_major=args.keras_version or keras_major(facts),
        device=recommendation.device,
        runtime=recommendation.runtime,
        has_bfloat16=features["bfloat16"],
        has_tf32=features["tf32"],
        guard=args.fallback,
        steps=args.steps,
        fp8=args.fp8,
        zero_stage=args.zero or 0,
        offload=args.offload,
        gpus=max(1, len(visible_gpus(facts))) if recommendation.device == "gpu" else 1,
        peft=args.peft,
        batch_size=config_peft.batch_size(args),
    )
    if args.framework == "deepspeed" and (args.params or args.model):
        spec = _with_needed_zero(args, spec, facts)
    elif args.offload:
        note(
            "hwcheck: warning: the host memory the offloaded optimizer needs is not checked: "
            "give --params or --model to check it"
        )
    solved_from = None
    if args.solve:
        spec, solved_from = _with_solved_batch(args, spec, facts)
        note(f"hwcheck: {solved_from}")
    if spec.float16 and spec.device == "cpu" and args.framework in FLOAT16_NEEDS_CUDA:
        # The script's own check would stop it at once (exit 1): better said before writing it.
        raise InputError(
            "--policy",
            f"mixed_float16 with {FLOAT16_NEEDS_CUDA[args.framework]} needs a CUDA GPU, and this machine "
            f"trains on the CPU: the script would stop at once. Use --policy mixed_bfloat16 or float32 "
            f"(hwcheck recommends {recommendation.policy} here)",
        )
    if spec.float16 and spec.device == "cpu":
        note(
            "hwcheck: warning: mixed_float16 on a CPU runs slower than float32; "
            f"hwcheck recommends {recommendation.policy} for this machine"
        )
    script = emit_script(spec)
    if args.output != "-":
        _refuse_shadowing(Path(args.output), imported_modules(script))
    if args.output == "-":
        sys.stdout.write(script)
        _warn_if_not_installed(args, facts)
        _warn_if_api_too_old(recommendation, spec.policy)
        return 0
    output = Path(args.output)
    settings_path = settings_path_for(output)
    settings = settings_for(
        spec,
        recommendation,
        policy_from_user=args.policy is not None,
        script_name=output.name,
        switched_because=switched_because,
    )
    if solved_from:
        settings["batch_size"]["solved"] = solved_from
    beside = [(output.with_name(name), text) for name, text in config_files(spec, output.stem).items()]
    # Created exclusively unless --force: two runs at once cannot all write the files.
    write_outputs(
        [(output, script), *beside, (settings_path, json_text(settings))],
        inputs=input_files(args),
        replace=args.force,
    )
    keras_note = f", Keras {spec.keras_major}" if spec.framework.startswith("keras") else ""
    peft_note = f"{spec.peft}, " if spec.peft else ""
    also_wrote = "".join(f", {terminal_text(path)}" for path, _ in beside)
    print(
        f"wrote {terminal_text(output)} ({spec.framework}, {peft_note}{spec.policy}{keras_note}){also_wrote} "
        f"and {terminal_text(settings_path)}"
    )
    _warn_if_not_installed(args, facts)
    _warn_if_api_too_old(recommendation, spec.policy)
    return 0


# The findings that say the model was pretrained in a range float16 cannot hold.
MODEL_OVERFLOWS_FLOAT16 = ("model-overflows-float16", "model-keeps-bfloat16")


def _policy_that_runs(
    args: argparse.Namespace, recommendation: Any, policy: str, has_bfloat16: bool
) -> tuple[str, str]:
    """`policy` and "", unless it is float16 for a model hwcheck says overflows there: then bfloat16
    where the device runs it, else float32, and why (said on stderr); --insist keeps float16."""
    overflows = any(finding.id in MODEL_OVERFLOWS_FLOAT16 for finding in recommendation.findings)
    if policy != "mixed_float16" or args.insist or not overflows:
        return policy, ""
    switched = "mixed_bfloat16" if has_bfloat16 else "float32"
    note(
        f"hwcheck: warning: {switched} is written instead of mixed_float16: the model overflows "
        "float16's range (inf and NaN losses); --insist writes mixed_float16 all the same"
    )
    return switched, (
        "Written instead of mixed_float16: the model overflows float16's range (inf and NaN "
        "losses); --insist writes it all the same."
    )


def _fp8_policy(args: argparse.Namespace, recommendation: Any, policy: str) -> str:
    """mixed_bfloat16, the policy an FP8 recipe goes with; InputError naming --fp8 where it cannot run."""
    recipes = FP8_FRAMEWORKS.get(args.framework, ())
    if args.fp8 not in recipes:
        where = ", ".join(name for name, allowed in FP8_FRAMEWORKS.items() if args.fp8 in allowed)
        raise InputError("--fp8", f"{args.fp8} is written for --framework {where}, not {args.framework}")
    if not recommendation.fp8.get("available"):
        reason = recommendation.fp8.get("reason") or "unknown"
        raise InputError("--fp8", f"FP8 training is not available on the GPUs this process sees: {reason}")
    if recommendation.runtime == "rocm" and args.fp8 != "transformer-engine":
        # rules/knowledge/amd.toml [fp8_training]: FP8 on AMD GPUs is Transformer Engine for ROCm's.
        raise InputError(
            "--fp8",
            "on AMD GPUs FP8 training runs through Transformer Engine for ROCm "
            f"(--fp8 transformer-engine), not {args.fp8}",
        )
    if args.policy and policy != "mixed_bfloat16":
        raise InputError(
            "--fp8",
            f"FP8 keeps bfloat16 for the rest of the model: use --policy mixed_bfloat16, not {policy}",
        )
    return "mixed_bfloat16"


def _with_needed_zero(args: argparse.Namespace, spec: Any, facts: dict[str, Any]) -> Any:
    """`spec` with the ZeRO stage and offload to write: the asked-for plan where it fits the GPUs
    and the host memory, else the cheapest that does (recommendation.zero_plan.deepspeed_plan decides)."""
    import dataclasses

    from hwcheck.commands.fit import device_memory, host_memory, model_shape
    from hwcheck.emit.machine import visible_gpus
    from hwcheck.recommendation.fit import Plan
    from hwcheck.recommendation.zero_plan import deepspeed_plan

    shape = model_shape(args)
    gpus = visible_gpus(facts)
    memory = device_memory(None, gpus)
    if memory is None:
        if args.zero is None:
            note("hwcheck: note: no GPU with a known memory is visible: ZeRO stage 0 is written")
        return spec
    plan = Plan(policy=spec.policy, gpus=max(len(gpus), 1), zero=0, gpus_per_node=max(len(gpus), 1))
    wanted = None if args.zero is None else (args.zero, bool(args.offload))
    choice = deepspeed_plan(shape, plan, memory, host_memory(args, facts), wanted)
    if choice.fits is False:
        raise InputError(
            "--framework deepspeed", f"no ZeRO plan fits these GPUs and this host memory: {choice.note}"
        )
    if choice.note:
        note(f"hwcheck: warning: {choice.note}")
    if wanted and (choice.stage, choice.offload) != wanted:
        note(
            f"hwcheck: warning: ZeRO stage {choice.stage}{' with offload' if choice.offload else ''} "
            "is written instead"
        )
    return dataclasses.replace(spec, zero_stage=choice.stage, offload=choice.offload)


def _with_solved_batch(args: argparse.Namespace, spec: Any, facts: dict[str, Any]) -> tuple[Any, str]:
    """`spec` with the largest micro-batch per GPU whose estimate fits, and where it came from:
    `hwcheck fit --solve batch`'s answer for the same model, precision, GPUs and ZeRO stage."""
    import dataclasses

    from hwcheck.commands.fit import default_seq_len, device_memory, host_memory, model_shape, solved_value
    from hwcheck.emit.machine import visible_gpus
    from hwcheck.recommendation.memory_plan import Plan

    shape = model_shape(args)
    gpus = visible_gpus(facts)
    memory = device_memory(None, gpus)
    plan = Plan(
        policy=spec.policy,
        gpus=max(len(gpus), 1),
        zero=spec.zero_stage if spec.framework == "deepspeed" else None,
        offload=spec.offload,
        seq_len=default_seq_len(shape, None),
        gpus_per_node=len(gpus) or None,
    )
    solved = solved_value(shape, plan, memory, "batch", host_memory(args, facts))
    if solved is None:
        raise InputError(
            "--solve", "not even a micro-batch of 1 fits these GPUs: hwcheck fit --model says what would"
        )
    zero = f", ZeRO stage {plan.zero}" if plan.zero is not None else ""
    said = (
        f"batch size {solved} per GPU: the largest whose estimate fits the GPU's "
        f"{(memory or 0) / 2**30:.1f} GiB ({spec.policy}, AdamW, sequence length {plan.seq_len}{zero}; "
        "hwcheck fit --solve batch shows the parts)"
    )
    return dataclasses.replace(spec, batch_size=solved), said


# What each script imports first and its name; the install command is install_line's, for the
# machine advised (with what the script itself imports beside the framework).
SCRIPT_NEEDS = {
    "keras": ("keras", "Keras"),
    "keras-custom": ("tensorflow", "TensorFlow"),
    "torch": ("torch", "PyTorch"),
    "jax": ("jax", "JAX"),
    # The trainers (each depends on PyTorch), by the facts key the frameworks probe gives them.
    "lightning": ("lightning", "PyTorch Lightning"),
    "hf-trainer": ("transformers", "Transformers"),
    "accelerate": ("accelerate", "Accelerate"),
    "deepspeed": ("deepspeed", "DeepSpeed"),
}
# What a script imports beside its framework (the JAX script's optimizer).
SCRIPT_EXTRAS = {"jax": "pip install optax"}


def _warn_if_not_installed(args: argparse.Namespace, facts: dict[str, Any]) -> None:
    """Warn on stderr when the advised machine lacks the script's framework: it would fail on import."""
    from hwcheck.base.safe import terminal_text
    from hwcheck.recommendation.install import install_line

    package, label = SCRIPT_NEEDS[args.framework]
    frameworks = facts.get("frameworks")
    if not isinstance(frameworks, dict) or (frameworks.get(package) or {}).get("version"):
        return  # unknown (a sparse facts file), or installed
    install = install_line(facts, "tensorflow" if args.framework == "keras-custom" else args.framework)
    if args.framework in SCRIPT_EXTRAS:
        install += f"; then {SCRIPT_EXTRAS[args.framework]}"
    where = f"on the machine in {terminal_text(args.facts)}" if args.facts else "here"
    note(
        f"hwcheck: warning: the script needs {label}, which is not installed {where}: "
        f"it fails on import until you run {terminal_text(install)}"
    )


def _warn_if_api_too_old(recommendation: Any, policy: str) -> None:
    """Warn on stderr when the script's precision uses an API the installed framework predates.

    The finding (framework-api-too-old, rules/knowledge/frameworks.toml [[feature]]) is about the
    recommended precision; a script written for another --policy uses other APIs.
    """
    from hwcheck.base.safe import terminal_text

    if policy != recommendation.policy:
        return
    for finding in recommendation.findings:
        if finding.id == "framework-api-too-old":
            note(
                "hwcheck: warning: the script fails on the installed framework: "
                f"{terminal_text(finding.message)} {terminal_text(finding.remedy or '')}"
            )


# The frameworks whose emitted script stops at once (exit 1) in mixed_float16 without a CUDA GPU.
FLOAT16_NEEDS_CUDA = {"hf-trainer": "the Hugging Face Trainer (fp16=True)"}
# The modules an emitted script imports, directly or through its framework: a script named
# after one (torch.py) is found first on sys.path (its own folder) by that import, which
# then fails with a circular import. The script's own imports are added to these.
FRAMEWORK_MODULES = frozenset(
    ("torch", "torchvision", "jax", "jaxlib", "flax", "optax", "tensorflow", "keras", "tf_keras")
    + ("deepspeed", "lightning", "pytorch_lightning", "transformers", "accelerate", "datasets")
    + ("numpy", "safetensors", "huggingface_hub", "transformer_engine", "torchao", "hwcheck")
)


def imported_modules(script: str) -> frozenset[str]:
    """The top-level modules `script` imports (import x.y / from x import y, anywhere in it)."""
    import ast

    modules: set[str] = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    return frozenset(modules)


def _refuse_shadowing(output: Path, modules: frozenset[str]) -> None:
    """An InputError when the script's name would shadow a module it imports."""
    if output.suffix == ".py" and output.stem in modules:
        raise InputError(
            output,
            f"a script named {output.name} would be imported instead of the {output.stem} module it "
            "imports (its own folder comes first on sys.path): choose another name",
        )


def settings_path_for(script: Path) -> Path:
    """The settings file written beside `script`: train.py's is train.settings.json."""
    return script.with_name(f"{script.stem}.settings.json")
