"""`hwcheck config --lora / --qlora`: the options, what they cannot go with, and where
bitsandbytes (which quantizes QLoRA's base) has no build for the device that trains."""

from __future__ import annotations

import argparse
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.emit.spec import DEFAULT_BATCH_SIZE, PEFT_BATCH_SIZE, PEFT_FRAMEWORKS


def add_peft_options(parser: argparse.ArgumentParser) -> None:
    """Add --lora and --qlora (one or the other) to config's parser."""
    peft = parser.add_mutually_exclusive_group()
    peft.add_argument(
        "--lora",
        dest="peft",
        action="store_const",
        const="lora",
        help="fine-tune with PEFT's LoRA adapters on a frozen 16-bit (or float32) base: torch, "
        "hf-trainer, accelerate, lightning",
    )
    peft.add_argument(
        "--qlora",
        dest="peft",
        action="store_const",
        const="qlora",
        help="LoRA on a base quantized to 4-bit NF4 by bitsandbytes, computing in the dtype the GPU "
        "runs fast, with paged 8-bit AdamW; refused where bitsandbytes has no build for the device",
    )


def check_peft_options(args: argparse.Namespace) -> None:
    """InputError naming --lora/--qlora where the other options cannot go with it."""
    option = f"--{args.peft}"
    if args.framework not in PEFT_FRAMEWORKS:
        raise InputError(
            option, f"is written for --framework {', '.join(PEFT_FRAMEWORKS)}, not {args.framework}"
        )
    if args.fp8:
        raise InputError(option, "carries no FP8 recipe: leave out --fp8")
    if args.solve:
        raise InputError(option, "--solve sizes full training, not adapters: leave it out")


def refuse_qlora_without_bitsandbytes(facts: dict[str, Any], recommendation: Any, policy: str) -> None:
    """InputError naming --qlora where bitsandbytes has no build for the device that trains."""
    from hwcheck import knowledge
    from hwcheck.base.versions import parse_version
    from hwcheck.emit.machine import visible_gpus

    table = knowledge.load("training")["peft"]
    dtype = table["compute_dtype"][policy]
    instead = f"use --lora instead (LoRA on a frozen {dtype} base, no quantization)"
    device = recommendation.device
    runtime = recommendation.runtime if device == "gpu" else device
    if runtime not in table["bnb_runtimes"]:
        raise InputError(
            "--qlora",
            f"bitsandbytes, which quantizes the base to 4 bits, has no build for the {device.upper()} "
            f"this machine trains on: {instead}",
        )
    if runtime != "cuda":
        return
    floor = parse_version(table["bnb_min_cc"]) or ()
    for gpu in visible_gpus(facts):
        capability = parse_version(gpu.architecture) if gpu.architecture else None
        if capability is not None and capability < floor:
            raise InputError(
                "--qlora",
                f"bitsandbytes' 4-bit (NF4) quantization needs compute capability "
                f"{table['bnb_min_cc']} or higher, and {gpu.name} has {gpu.architecture}: {instead}",
            )


def batch_size(args: argparse.Namespace) -> int:
    """The batch the script trains on: fewer, longer sequences for fine-tuning a language model."""
    return PEFT_BATCH_SIZE if args.peft else DEFAULT_BATCH_SIZE
