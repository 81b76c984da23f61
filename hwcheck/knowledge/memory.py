"""Reader for rules/knowledge/memory.toml: what training holds per parameter, by holding and optimizer."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OPTIMIZERS = ("adamw", "adam", "sgd", "adafactor", "adamw-8bit", "paged-adamw", "paged-adamw-8bit")
HOLDINGS = ("float32", "pure16", "autocast", "master")


def holding(name: str) -> dict[str, Any]:
    """Bytes per parameter (weights, gradients, master_weights, weight_copies) and per activation element."""
    return dict(load("memory")["holding"][name])


def optimizer_state(name: str) -> dict[str, Any]:
    """The optimizer's state: bytes per parameter element and per parameter tensor, and its source."""
    return dict(load("memory")["optimizer"][name])


def quantization(name: str) -> dict[str, Any]:
    """A quantized base's bytes per weight and its constants ("4bit", "8bit"), with its source."""
    return dict(load("memory")["quantization"][name])


def section(name: str) -> dict[str, Any]:
    """A table of memory.toml by name (lora, fsdp, step_in_backward): its figures and sources."""
    return dict(load("memory")[name])
