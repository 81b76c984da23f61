"""Each framework's TPU runtime and how to install it: rules/knowledge/tpu.toml [[runtime]]."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def tpu_runtime(backend: str) -> dict[str, Any] | None:
    """The [[runtime]] row of a runtime (torch, jax, tensorflow); None for one without a TPU runtime."""
    row = next((row for row in load("tpu").get("runtime", ()) if row["backend"] == backend), None)
    return dict(row) if row else None
