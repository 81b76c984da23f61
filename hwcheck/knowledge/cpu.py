"""What CPU flags mean for training: rules/knowledge/cpu_features.toml."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from hwcheck.base.tables import load


@cache
def _cpu_flags() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in load("cpu_features")["flag"]}


def cpu_feature(flag: str) -> dict[str, Any] | None:
    """What a /proc/cpuinfo flag means for training, or None for flags the table does not know."""
    row = _cpu_flags().get(flag.strip().lower()) if isinstance(flag, str) else None
    return dict(row) if row else None


def fast_bf16_flag(flags: Iterable[str]) -> str | None:
    """The first of `flags` (in the table's order) marked `fast_bf16_training` ("amx_bf16"), or None."""
    present = {flag.strip().lower() for flag in flags if isinstance(flag, str)}
    return next(
        (name for name, row in _cpu_flags().items() if row.get("fast_bf16_training") and name in present),
        None,
    )
