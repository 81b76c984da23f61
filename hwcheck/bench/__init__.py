"""`hwcheck bench`: measure training step time per precision, each in a fresh process.

`hwcheck.bench(...)` calls hwcheck.bench.session.bench: this package is also that function,
because a submodule import rebinds the attribute `hwcheck.bench` to the package.
"""

from __future__ import annotations

import sys
import types
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


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Measure each precision on a workload or make_step script; returns the bench block."""
        from hwcheck.bench.session import bench

        return bench(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
