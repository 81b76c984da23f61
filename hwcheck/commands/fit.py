"""`hwcheck fit`: will the model train on the GPUs this process sees, and what would make it fit."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import TYPE_CHECKING, Any

from hwcheck.base.errors import InputError
from hwcheck.commands import read_machine, recommend_for, warn_model_precision
from hwcheck.commands.fit_options import add_fine_tuning_options, check_fine_tuning, fine_tune
from hwcheck.commands.options import add_machine_options, add_solve_option, also, whole_number, word
from hwcheck.recommendation import POLICIES
from hwcheck.render.notes import note

if TYPE_CHECKING:
    from hwcheck.devices import Device

ACCOUNTINGS = ("hwcheck", "deepspeed")  # recommendation.fit.ACCOUNTINGS, without importing it at start-up

OPTIMIZERS = ("adamw", "adam", "sgd", "adafactor", "adamw-8bit", "paged-adamw", "paged-adamw-8bit")
MAX_PARAMETERS = 10**15
MAX_TOKENS = 10**7
GIB = 2**30
_COUNT = re.compile(r"(\d+(?:\.\d+)?(?:[eE]\+?\d{1,2})?)\s*([kKmMbBtT]?)")
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def parameter_count(text: str) -> int:
    """An argparse type: a parameter count such as 7000000000, 7e9, 6.74B or 350M."""
    match = _COUNT.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a parameter count (like 7e9, 6.74B, 350M): {text[:40]!r}")
    value = float(match[1]) * _SCALE[match[2].lower()]
    if not math.isfinite(value) or not 1 <= value <= MAX_PARAMETERS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_PARAMETERS:.0e}, not {text[:40]!r}")
    return round(value)


def gibibytes(text: str) -> float:
    """An argparse type: a GPU's memory in GiB, above 0 and at most 1,000,000."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of GiB: {text[:40]!r}") from None
    if not math.isfinite(value) or not 0 < value <= 10**6:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1000000, not {text[:40]!r}")
    return value


def percent(text: str) -> float:
    """An argparse type: a share in percent, from 0 to 90."""
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text[:40]!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 90:
        raise argparse.ArgumentTypeError(f"must be from 0 to 90, not {text[:40]!r}")
    return value / 100


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the fit subcommand."""
    parser = subparsers.add_parser(
        "fit",
        help="will the model train in the memory of the GPUs this process sees",
        description="Per GPU: weights, the 16-bit working copy, gradients, optimizer state, master "
        "weights (the ZeRO paper's accounting), activations (Korthikanti et al. 2022, for a "
        "transformer config) and the runtime (its context, communication buckets, a headroom for "
        "fragmentation), against the memory of the GPUs the process sees (MIG slices and "
        "CUDA_VISIBLE_DEVICES included), within a margin from the estimate's measured error for the "
        "model's family or a published study; per node, what ZeRO-Offload holds in host memory; and "
        "what would make it fit, cheapest first.",
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--params", type=parameter_count, metavar="N", help="parameters (7e9, 6.74B, 350M)")
    model.add_argument(
        "--model",
        metavar="MODEL",
        help="a Hugging Face config.json, a model directory, or a model id (gpt2, Qwen/Qwen2.5-7B: "
        "config.json from the local cache, else the Hub): sizes activations too",
    )
    parser.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default="adamw",
        metavar="NAME",
        help=f"the optimizer: {', '.join(OPTIMIZERS)} (default adamw)",
    )
    parser.add_argument(
        "--policy",
        type=word("policy", POLICIES),
        metavar="POLICY",
        help="train in this policy (default: the recommended one)" + also("policy", POLICIES),
    )
    parser.add_argument(
        "--gpus",
        type=whole_number(1, 100_000),
        metavar="N",
        help="data-parallel GPUs (default: those visible)",
    )
    parser.add_argument(
        "--gpus-per-node",
        type=whole_number(1, 1024),
        metavar="N",
        help="GPUs sharing one node's host memory (default: those visible here, or all of --gpus)",
    )
    parser.add_argument(
        "--zero",
        type=whole_number(0, 3),
        metavar="{0,1,2,3}",
        help="DeepSpeed ZeRO stage: 16-bit weights with float32 master weights, partitioned (default: "
        "none, PyTorch autocast with float32 weights)",
    )
    parser.add_argument("--offload", action="store_true", help="optimizer state on the CPU (ZeRO-Offload)")
    parser.add_argument(
        "--offload-params", action="store_true", help="the 16-bit parameters on the CPU too (ZeRO-3 only)"
    )
    parser.add_argument(
        "--batch", type=whole_number(1, MAX_TOKENS), default=1, metavar="N", help="micro-batch per GPU"
    )
    parser.add_argument(
        "--seq-len",
        type=whole_number(1, MAX_TOKENS),
        metavar="N",
        help="tokens per sequence (default 2048, or the model's limit if lower)",
    )
    parser.add_argument(
        "--checkpointing", action="store_true", help="activation checkpointing of every layer"
    )
    parser.add_argument(
        "--gpu-memory",
        type=gibibytes,
        metavar="GIB",
        help="plan for GPUs of this memory instead of those visible",
    )
    parser.add_argument(
        "--host-memory",
        type=gibibytes,
        metavar="GIB",
        help="plan for nodes of this much host memory instead of this machine's",
    )
    parser.add_argument(
        "--headroom",
        type=percent,
        metavar="PCT",
        help="percent of the allocated GPU memory kept free for the allocator's fragmentation (default 10)",
    )
    parser.add_argument(
        "--accounting",
        choices=ACCOUNTINGS,
        default="hwcheck",
        help="model states as hwcheck counts them (default) or as DeepSpeed 0.19's estimators do (ZeRO 2, 3)",
    )
    add_fine_tuning_options(parser)
    add_solve_option(parser)
    parser.add_argument(
        "--measure",
        action="store_true",
        help="also train a few steps of the model (--model; random weights, nothing downloaded) "
        "on the device planned for, in a child process, and print the peak beside the estimate "
        "(reused from the cache for the same model, plan, machine and versions)",
    )
    parser.add_argument("--no-cache", action="store_true", help="with --measure: measure again")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Size the model, read the GPUs and host memory, estimate, print."""
    from dataclasses import replace

    from hwcheck.base.safe import json_text
    from hwcheck.emit.machine import visible_gpus
    from hwcheck.recommendation.fit import Plan, estimate

    _check_options(args)
    shape = model_shape(args)
    facts, probes, *_ = read_machine(args)
    gpus = visible_gpus(facts)
    policy = args.policy or _advised_policy(args, facts, probes)
    if args.pure_bf16 and policy != "mixed_bfloat16":
        raise InputError(
            "--pure-bf16",
            f"trains in bfloat16, and the policy here is {policy}: give --policy bf16 where the GPU "
            "has bfloat16",
        )
    memory = device_memory(args.gpu_memory, gpus)
    seq_len = default_seq_len(shape, args.seq_len)
    data_parallel = args.gpus or max(len(gpus), 1)
    plan = Plan(
        policy=policy,
        optimizer=args.optimizer,
        gpus=data_parallel,
        zero=args.zero,
        offload=args.offload,
        batch=args.batch,
        seq_len=seq_len,
        checkpointing=args.checkpointing,
        offload_params=args.offload_params,
        # This machine is the node when the plan is its own GPUs; a plan for other GPUs (--gpus)
        # puts them all on one node unless told otherwise: the most host memory per node.
        gpus_per_node=args.gpus_per_node or (len(gpus) if gpus and not args.gpus else None),
        accounting=args.accounting,
        headroom=args.headroom,
        runtime=device_runtime(gpus),
        finetune=fine_tune(args),
        fsdp=args.fsdp,
        fsdp_offload=args.fsdp_offload,
        pure_16bit=args.pure_bf16,
        step_in_backward=args.step_in_backward,
        grad_accum=args.grad_accum,
    )
    host = host_memory(args, facts)
    if args.measure:
        plan = _measurable(args, plan, gpus)
    solved = None
    if args.solve:
        solved = solved_value(shape, plan, memory, args.solve, host)
        if solved is not None:
            plan = replace(plan, batch=solved) if args.solve == "batch" else replace(plan, seq_len=solved)
    result = estimate(shape, plan, memory, host)
    document = {
        **result,
        "parameters": shape.parameters,
        "active_parameters": shape.active_parameters,
        "model_type": shape.model_type,
        "plan": {
            "policy": plan.policy,
            "optimizer": plan.optimizer,
            "gpus": plan.gpus,
            "gpus_per_node": plan.per_node,
            "zero": plan.zero,
            "offload": plan.offload,
            "offload_params": plan.offload_params,
            "batch": plan.batch,
            "seq_len": plan.seq_len,
            "checkpointing": plan.checkpointing,
            "weights_held": plan.holding,
            "accounting": plan.accounting,
            "lora": None
            if plan.finetune.lora_rank is None
            else {
                "rank": plan.finetune.lora_rank,
                "targets": list(plan.finetune.lora_targets),
                "dropout": plan.finetune.lora_dropout,
                "dtype": "16-bit" if plan.finetune.adapters_16bit else "float32",
            },
            "quantize": None
            if plan.finetune.quantize is None
            else {
                "bits": plan.finetune.quantize,
                "quant_type": plan.finetune.quant_type if plan.finetune.quantize == "4bit" else "int8",
                "double_quant": plan.finetune.double_quant and plan.finetune.quantize == "4bit",
            },
            "fsdp": plan.fsdp,
            "fsdp_offload": plan.fsdp_offload,
            "pure_16bit": plan.pure_16bit,
            "step_in_backward": plan.step_in_backward,
            "grad_accum": plan.grad_accum,
        },
        "device": _device_name(args, gpus),
    }
    if args.solve:
        document["solved"] = {"what": args.solve, "value": solved}
    if args.measure:
        document["measured"] = _measurement(args, plan, gpus, facts)
    if args.accounting == "deepspeed":
        document["accounting_note"] = DEEPSPEED_DIFFERENCE
    if args.json:
        sys.stdout.write(json_text(document))
    else:
        from hwcheck.render.fit_text import fit_text

        sys.stdout.write(fit_text(document))
    return 0


# How hwcheck's own accounting differs from DeepSpeed's estimators, and why.
DEEPSPEED_DIFFERENCE = (
    "DeepSpeed's estimators count the model states only. hwcheck's default also counts each GPU's "
    "16-bit gradient partition under ZeRO-3 and under ZeRO-2 with offload (2 bytes per partitioned "
    "parameter, which the estimators leave out) and Adam's step counter per tensor; on the host it "
    "counts the offloaded states once (16 bytes per parameter per node), without the estimators' 1.5 "
    "buffer factor or ZeRO-2's 4 bytes x all GPUs per parameter (each process loading the model in "
    "float32 before partitioning: a start-up peak that zero.Init or loading on the meta device "
    "avoids). Activations and the runtime parts are hwcheck's in both."
)


def _check_options(args: argparse.Namespace) -> None:
    if args.offload and args.zero in (None, 0):
        raise InputError(
            "--offload", "needs --zero 1, 2 or 3: ZeRO-Offload moves the partitioned optimizer state"
        )
    if args.offload_params and args.zero != 3:
        raise InputError("--offload-params", "needs --zero 3: only ZeRO-3 partitions the parameters")
    check_fine_tuning(args)
    if args.accounting == "deepspeed":
        if args.lora or args.fsdp:
            raise InputError(
                "--accounting", "deepspeed counts a full fine-tune under ZeRO: leave out --lora and --fsdp"
            )
        if args.zero not in (2, 3):
            raise InputError(
                "--accounting", "deepspeed needs --zero 2 or 3: DeepSpeed estimates those stages"
            )
        if args.optimizer not in ("adamw", "adam"):
            raise InputError("--accounting", "deepspeed counts Adam's states: use --optimizer adamw or adam")


def _measurable(args: argparse.Namespace, plan: Any, gpus: list[Device]) -> Any:
    """The plan --measure runs: refused with the reason where one process cannot run it; on the
    CPU (no GPU visible) the estimate is for the CPU, without a runtime's context; on a GPU, for
    the runtime the steps run on."""
    from dataclasses import replace

    from hwcheck.measure.fit_measure import measured_runtime, refusal

    if not args.model:
        raise InputError("--measure", "builds the model from its config: give --model, not --params")
    reason = refusal(plan)
    if reason:
        raise InputError("--measure", reason)
    if args.gpu_memory:
        raise InputError("--measure", "runs on the device this process sees: leave out --gpu-memory")
    runtime = measured_runtime(gpus)
    return replace(plan, on_gpu=runtime != "cpu", runtime=runtime, gpus=1)


def _measurement(
    args: argparse.Namespace, plan: Any, gpus: list[Device], facts: dict[str, Any]
) -> dict[str, Any]:
    """The measured steps of the plan (measure/fit_measure.py), the config read once more."""
    from hwcheck.base.inputs import read_json
    from hwcheck.measure.fit_measure import measure_fit, measured_runtime
    from hwcheck.recommendation.model_shape import MAX_CONFIG_BYTES
    from hwcheck.recommendation.model_source import config_path

    config = read_json(config_path(args.model), max_bytes=MAX_CONFIG_BYTES)
    if (
        isinstance(config, dict)
        and "model_type" not in config
        and isinstance(config.get("text_config"), dict)
    ):
        config = config["text_config"]
    note("hwcheck: measuring a few training steps in a child process...")
    return measure_fit(config, plan, measured_runtime(gpus), facts, use_cache=not args.no_cache)


def default_seq_len(shape: Any, asked: int | None) -> int:
    """The sequence length planned for: `asked`, else 2048 or the model's own limit if lower."""
    if asked:
        return asked
    return min(shape.transformer.max_positions or 2048, 2048) if shape.transformer else 2048


def solved_value(shape: Any, plan: Any, memory: int | None, what: str, host: Any) -> int | None:
    """--solve's answer for `plan` (recommendation.fit.solve); an InputError says what it needs."""
    from hwcheck.recommendation.fit import solve

    if memory is None:
        raise InputError("--solve", "needs the GPU memory: none is visible; give --gpu-memory GIB")
    if shape.transformer is None:
        raise InputError("--solve", "sizes activations: give --model (a config.json, directory or id)")
    return solve(shape, plan, memory, what, host)


def model_shape(args: argparse.Namespace) -> Any:
    """The ModelShape of --model (a file, a directory or a Hugging Face id) or --params."""
    from hwcheck.recommendation.model_shape import from_count, from_model

    return from_model(args.model) if args.model else from_count(args.params)


def host_memory(args: argparse.Namespace, facts: dict[str, Any]) -> Any:
    """One node's memory: --host-memory, else the machine's (the facts' memory section)."""
    from hwcheck.probes.memory import usable
    from hwcheck.recommendation.fit import HostMemory

    if getattr(args, "host_memory", None):
        size = int(args.host_memory * GIB)
        return HostMemory(size, size, "--host-memory")
    total, available = usable(facts.get("memory"))
    if total is None and available is None:
        where = (
            "the facts file holds no memory section" if getattr(args, "facts", None) else "not readable here"
        )
        return HostMemory(None, None, f"{where}; --host-memory GIB plans for a node of that size")
    where = "the facts file" if getattr(args, "facts", None) else "this machine"
    limited = isinstance((facts.get("memory") or {}).get("cgroup"), dict) and (
        facts["memory"]["cgroup"].get("limit_bytes") is not None
    )
    return HostMemory(total, available, where + (", its cgroup limit applied" if limited else ""))


def device_memory(gibibytes: float | None, gpus: list[Device]) -> int | None:
    """The memory of one GPU in bytes: `gibibytes` when given, else the smallest visible GPU's."""
    if gibibytes:
        return int(gibibytes * GIB)
    sizes = [gpu.memory_bytes for gpu in gpus]
    known = [size for size in sizes if size]
    if not sizes or len(known) < len(sizes):
        return None
    return min(known)  # the smallest device bounds a data-parallel run


def device_runtime(gpus: list[Device]) -> str | None:
    """What drives the visible GPUs (cuda, rocm, mps, xpu, ...) when they share it; None when none
    is visible or they differ."""
    runtimes = {gpu.runtime for gpu in gpus if gpu.runtime}
    return runtimes.pop() if len(runtimes) == 1 else None


def _device_name(args: argparse.Namespace, gpus: list[Device]) -> str:
    if args.gpu_memory:
        return f"{args.gpu_memory:g} GiB GPUs (--gpu-memory)"
    if not gpus:
        return "no GPU visible"
    names = sorted({gpu.name for gpu in gpus})
    text = f"{', '.join(names)}; {len(gpus)} visible to this process"
    if any(gpu.unified for gpu in gpus):
        # Apple's GPU and a Jetson's allocate from the host's memory: Metal reports the part it
        # may use only at run time (recommendedMaxWorkingSetSize), L4T publishes no share.
        text += "; unified memory: the total shared with the CPU, the GPU's share unknown"
    return text


# A GPU named by its memory alone (--gpu-memory) where the advice here is for another device: its
# Tensor Cores train in 16-bit mixed precision, and bfloat16 and float16 hold the same memory.
PLANNED_GPU_POLICY = "mixed_bfloat16"


def _advised_policy(args: argparse.Namespace, facts: dict[str, Any], probes: dict[str, Any]) -> str:
    """The policy hwcheck advises here, warning when the model's own precision conflicts with it;
    for a GPU given by --gpu-memory where the advice is for this machine's CPU, the GPU's."""
    recommendation = recommend_for(args, facts, probes, framework="torch")
    warn_model_precision(recommendation)
    if args.gpu_memory and recommendation.device != "gpu" and recommendation.policy != PLANNED_GPU_POLICY:
        note(
            f"hwcheck: note: the advice here is {recommendation.policy} on the "
            f"{recommendation.device.upper()}; the {args.gpu_memory:g} GiB GPU of --gpu-memory is "
            f"planned in 16-bit mixed precision ({PLANNED_GPU_POLICY}: float16 holds the same "
            "memory; --policy plans another)"
        )
        return PLANNED_GPU_POLICY
    return recommendation.policy
