"""Reader for rules/knowledge/node.toml: the GPU states that stop or slow training, the GPU classes
without peer-to-peer, and the shared memory a framework needs."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def shared_memory() -> dict[str, Any]:
    """The shared-memory row: minimum_bytes, remedy and source."""
    return dict(load("node")["shm"])


def p2p_classes() -> list[dict[str, Any]]:
    """The GPU classes whose boards have no peer-to-peer between them (name, prefixes, source)."""
    return [dict(row) for row in load("node")["p2p_class"]]


def gpu_states() -> list[dict[str, Any]]:
    """The GPU states a driver reports that stop or slow training, each with its test and source."""
    return [dict(row) for row in load("node")["gpu_state"]]
