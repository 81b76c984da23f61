"""`hwcheck bench`: measure training step time per precision, each in a fresh process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hwcheck.bench.session import bench

__all__ = ["bench"]


def __getattr__(name: str) -> Any:
    # The engine reads bench results through hwcheck.bench.results and .stats; loading the
    # measuring machinery (subprocess, threads) only when `bench` is asked for keeps doctor fast.
    if name == "bench":
        from hwcheck.bench.session import bench

        return bench
    raise AttributeError(f"module 'hwcheck.bench' has no attribute {name!r}")
