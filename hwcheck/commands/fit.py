"""`hwcheck fit`: will the model train on the GPUs this process sees, and what would make it fit."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.commands import read_machine, recommend_for
from hwcheck.commands.options import add_machine_options, also, whole_number, word
from hwcheck.recommendation import POLICIES

OPTIMIZERS = ("adamw", "adam", "sgd", "adafactor", "adamw-8bit")
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


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the fit subcommand."""
    parser = subparsers.add_parser(
        "fit",
        help="will the model train in the memory of the GPUs this process sees",
        description="Per GPU: weights, gradients, optimizer state, master weights (the ZeRO paper's "
        "accounting) and activations (Korthikanti et al. 2022, for a transformer config), against the "
        "memory of the GPUs the process sees (MIG slices and CUDA_VISIBLE_DEVICES included), and "
        "what would make it fit, cheapest first.",
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--params", type=parameter_count, metavar="N", help="parameters (7e9, 6.74B, 350M)")
    model.add_argument(
        "--model",
        metavar="CONFIG",
        help="a Hugging Face config.json (GPT-2 or Llama style): sizes activations too",
    )
    parser.add_argument(
        "--optimizer", choices=OPTIMIZERS, default="adamw", help="the optimizer (default adamw)"
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
        "--zero",
        type=whole_number(0, 3),
        metavar="{0,1,2,3}",
        help="DeepSpeed ZeRO stage: 16-bit weights with float32 master weights, partitioned (default: "
        "none, PyTorch autocast with float32 weights)",
    )
    parser.add_argument("--offload", action="store_true", help="optimizer state on the CPU (ZeRO-Offload)")
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
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Size the model, read the GPUs, estimate, print."""
    from hwcheck.base.safe import json_text
    from hwcheck.emit.machine import visible_gpus
    from hwcheck.recommendation.fit import Plan, estimate
    from hwcheck.recommendation.model_shape import from_config_file, from_count

    shape = from_config_file(args.model) if args.model else from_count(args.params)
    if args.offload and args.zero == 0:
        raise InputError(
            "--offload", "needs --zero 1, 2 or 3: ZeRO-Offload moves the partitioned optimizer state"
        )
    facts, probes, *_ = read_machine(args)
    gpus = visible_gpus(facts)
    policy = args.policy or recommend_for(args, facts, probes, framework="torch").policy
    memory = device_memory(args.gpu_memory, gpus)
    seq_len = (
        args.seq_len or min(shape.transformer.max_positions or 2048, 2048) if shape.transformer else 2048
    )
    plan = Plan(
        policy=policy,
        optimizer=args.optimizer,
        gpus=args.gpus or max(len(gpus), 1),
        zero=args.zero,
        offload=args.offload,
        batch=args.batch,
        seq_len=seq_len,
        checkpointing=args.checkpointing,
    )
    result = estimate(shape, plan, memory)
    document = {
        **result,
        "parameters": shape.parameters,
        "plan": {
            "policy": plan.policy,
            "optimizer": plan.optimizer,
            "gpus": plan.gpus,
            "zero": plan.zero,
            "offload": plan.offload,
            "batch": plan.batch,
            "seq_len": plan.seq_len,
            "checkpointing": plan.checkpointing,
            "weights_held": plan.holding,
        },
        "device": _device_name(args, gpus),
    }
    if args.json:
        sys.stdout.write(json_text(document))
    else:
        sys.stdout.write(_text(document, shape.transformer is not None))
    return 0


def device_memory(gibibytes: float | None, gpus: list[dict[str, Any]]) -> int | None:
    """The memory of one GPU in bytes: `gibibytes` when given, else the smallest visible GPU's."""
    if gibibytes:
        return int(gibibytes * GIB)
    sizes = [gpu.get("memory_mib") for gpu in gpus]
    known = [size for size in sizes if isinstance(size, int) and size > 0]
    if not sizes or len(known) < len(sizes):
        return None
    return min(known) * 2**20  # the smallest device bounds a data-parallel run


def _device_name(args: argparse.Namespace, gpus: list[dict[str, Any]]) -> str:
    from hwcheck.engine.visibility import describe

    if args.gpu_memory:
        return f"{args.gpu_memory:g} GiB GPUs (--gpu-memory)"
    if not gpus:
        return "no GPU visible"
    names = sorted({describe(gpu) for gpu in gpus})
    return f"{', '.join(names)}; {len(gpus)} visible to this process"


def _text(document: dict[str, Any], has_activations: bool) -> str:
    from hwcheck.base.safe import terminal_text

    plan = document["plan"]
    zero = "no ZeRO" if plan["zero"] is None else f"ZeRO stage {plan['zero']}"
    held = {"autocast": "float32 weights, 16-bit compute", "master": "16-bit weights, float32 master copy"}
    lines = [
        f"model: {document['parameters'] / 1e9:.2f} B parameters, {plan['policy']} "
        f"({held.get(plan['weights_held'], 'float32')}), {plan['optimizer']}, {plan['gpus']} GPU(s), {zero}"
        + (", optimizer offloaded to the CPU" if plan["offload"] else ""),
        f"batch {plan['batch']} x {plan['seq_len']} tokens per GPU"
        + (", activation checkpointing" if plan["checkpointing"] else ""),
        "per GPU:",
    ]
    for key, value in document["per_device"].items():
        label = key.replace("_", " ")
        if key == "activations" and not has_activations:
            lines.append(f"  {label:<15} not counted: give --model config.json to size them")
            continue
        lines.append(f"  {label:<15} {value / GIB:9.2f} GiB")
    memory = document["device_memory"]
    device = terminal_text(document["device"])
    if memory is None:
        lines.append(f"GPU memory: unknown ({device}); --gpu-memory GIB plans for a GPU of that size")
        return "\n".join(lines) + "\n"
    lines.append(f"GPU memory: {memory / GIB:.2f} GiB per GPU ({device})")
    lines.append(f"fits: {'yes' if document['fits'] else 'no'}")
    if document["suggestions"]:
        lines.append("what would make it fit, cheapest first:")
        lines.extend(
            f"  {s['change']:<24} {s['total'] / GIB:9.2f} GiB per GPU" for s in document["suggestions"]
        )
    elif not document["fits"]:
        lines.append("no single change makes it fit: combine --zero 3, --offload, --checkpointing, more GPUs")
    return "\n".join(lines) + "\n"
