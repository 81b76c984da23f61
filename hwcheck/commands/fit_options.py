"""`hwcheck fit`'s fine-tuning options: LoRA and QLoRA (PEFT, bitsandbytes), PyTorch FSDP, pure
16-bit training and the optimizer step in the backward pass; read into the plan's FineTune and
checked together, each refusal one line naming the option."""

from __future__ import annotations

import argparse
import re
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.commands.options import whole_number

# memory_plan's FSDP_STRATEGIES, QUANTIZATIONS, LORA_TARGET_WORDS, without importing it at start-up.
FSDP_STRATEGIES = ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard")
QUANTIZATIONS = ("4bit", "8bit")
MAX_LORA_RANK = 65_536
MAX_TARGETS = 64
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")


def lora_targets(text: str) -> tuple[str, ...]:
    """An argparse type: LoRA's target modules, comma-separated: attention, all-linear, or names."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names or len(names) > MAX_TARGETS:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_TARGETS} module names, comma-separated")
    for name in names:
        if not _MODULE_NAME.fullmatch(name):
            raise argparse.ArgumentTypeError(f"not a module name: {name[:40]!r}")
    return names


def fsdp_strategy(text: str) -> str:
    """An argparse type: FSDP's sharding strategy; FSDP2's fully_shard is full_shard."""
    name = text.strip().lower().replace("-", "_")
    name = {"fully_shard": "full_shard", "fsdp2": "full_shard"}.get(name, name)
    if name not in FSDP_STRATEGIES:
        raise argparse.ArgumentTypeError(
            f"not a sharding strategy: {text[:40]!r} (one of {', '.join(FSDP_STRATEGIES)}, fully_shard)"
        )
    return name


def add_fine_tuning_options(parser: argparse.ArgumentParser) -> None:
    """LoRA and QLoRA, FSDP, pure 16-bit training and the optimizer's memory options."""
    parser.add_argument(
        "--lora",
        type=whole_number(1, MAX_LORA_RANK),
        metavar="RANK",
        help="train LoRA adapters of this rank on a frozen base (PEFT's LoraConfig r)",
    )
    parser.add_argument(
        "--lora-targets",
        type=lora_targets,
        metavar="MODULES",
        help="the layers the adapters wrap, as PEFT's target_modules: attention (every attention "
        "projection, the default), all-linear, or module names, comma-separated (q_proj,v_proj)",
    )
    parser.add_argument(
        "--lora-dropout",
        action="store_true",
        help="LoraConfig lora_dropout above 0: each adapter keeps its dropped-out input",
    )
    parser.add_argument(
        "--lora-dtype",
        choices=("float32", "16bit"),
        default="float32",
        help="the adapters' dtype: float32 (PEFT's default on a 16-bit base) or 16bit (the QLoRA "
        "paper's qlora.py, axolotl)",
    )
    parser.add_argument(
        "--quantize",
        choices=QUANTIZATIONS,
        help="the frozen base quantized by bitsandbytes: 4bit (NF4/FP4; with --lora: QLoRA) or 8bit "
        "(LLM.int8); needs --lora",
    )
    parser.add_argument(
        "--quant-type", choices=("nf4", "fp4"), default="nf4", help="4-bit data type (the same memory)"
    )
    parser.add_argument(
        "--no-double-quant",
        action="store_true",
        help="4-bit without double quantization (bnb_4bit_use_double_quant=False)",
    )
    parser.add_argument(
        "--fsdp",
        type=fsdp_strategy,
        metavar="STRATEGY",
        help="PyTorch FSDP instead of ZeRO: full_shard (FSDP2's fully_shard), shard_grad_op, "
        "hybrid_shard or no_shard",
    )
    parser.add_argument(
        "--fsdp-offload", action="store_true", help="FSDP's CPU offload of parameters and gradients"
    )
    parser.add_argument(
        "--pure-bf16",
        action="store_true",
        help="weights, gradients and optimizer states all in bfloat16 (Lightning's bf16-true)",
    )
    parser.add_argument(
        "--step-in-backward",
        action="store_true",
        help="the optimizer step fused into the backward pass: one gradient alive at a time",
    )
    parser.add_argument(
        "--grad-accum",
        type=whole_number(1, 1_000_000),
        default=1,
        metavar="N",
        help="gradient accumulation steps (the same memory: said, not counted)",
    )


def fine_tune(args: argparse.Namespace) -> Any:
    """The FineTune of --lora, --lora-targets, --lora-dropout and --quantize."""
    from hwcheck.recommendation.memory_plan import FineTune

    return FineTune(
        lora_rank=args.lora,
        lora_targets=args.lora_targets or ("attention",),
        lora_dropout=args.lora_dropout,
        adapters_16bit=args.lora_dtype == "16bit",
        quantize=args.quantize,
        quant_type=args.quant_type,
        double_quant=not args.no_double_quant,
    )


def check_fine_tuning(args: argparse.Namespace) -> None:
    """The fine-tuning options that need another, or cannot go together, each said in one line."""
    if args.quantize and not args.lora:
        raise InputError("--quantize", "needs --lora: a quantized base trains only through adapters")
    for option, given in (
        ("--lora-targets", args.lora_targets),
        ("--lora-dropout", args.lora_dropout),
        ("--lora-dtype", args.lora_dtype != "float32"),
    ):
        if given and not args.lora:
            raise InputError(option, "needs --lora RANK")
    if args.no_double_quant and args.quantize != "4bit":
        raise InputError("--no-double-quant", "needs --quantize 4bit: double quantization is 4-bit's")
    if args.fsdp and args.zero is not None:
        raise InputError("--fsdp", "shards with PyTorch FSDP or DeepSpeed ZeRO, not both: leave out --zero")
    if args.fsdp_offload and not args.fsdp:
        raise InputError("--fsdp-offload", "needs --fsdp STRATEGY")
    if args.fsdp_offload and args.fsdp == "no_shard":
        raise InputError("--fsdp-offload", "offloads shards: use full_shard, shard_grad_op or hybrid_shard")
    if args.step_in_backward:
        if args.grad_accum > 1:
            raise InputError(
                "--step-in-backward",
                "frees each gradient as it steps: gradient accumulation cannot be used with it",
            )
        if args.zero is not None or args.fsdp_offload:
            raise InputError(
                "--step-in-backward", "steps on the GPU in PyTorch: leave out --zero and --fsdp-offload"
            )
