"""Reader for rules/knowledge/memory.toml: what training holds per parameter, by holding and optimizer."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OPTIMIZERS = ("adamw", "adam", "sgd", "adafactor", "adamw-8bit")
HOLDINGS = ("float32", "autocast", "master")


def holding(name: str) -> dict[str, Any]:
    """Bytes per parameter (weights, gradients, master_weights, weight_copies) and per activation element."""
    return dict(load("memory")["holding"][name])


def optimizer_state(name: str) -> dict[str, Any]:
    """The optimizer's state: bytes per parameter element and per parameter tensor, and its source."""
    return dict(load("memory")["optimizer"][name])
