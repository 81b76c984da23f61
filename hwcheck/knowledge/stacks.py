"""Compiler stacks, kernel libraries, low-precision recipes and models' own precision:
rules/knowledge/stacks.toml, low_precision.toml and model_precision.toml."""

from __future__ import annotations

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def torch_compile_needs() -> dict[str, Any]:
    """What torch.compile (Inductor and Triton) needs of an NVIDIA GPU: [torch_compile]."""
    return dict(load("stacks")["torch_compile"])


def kernel_libraries() -> list[dict[str, Any]]:
    """The [[library]] rows: each kernel library's files, lowest compute capability and remedy."""
    return [dict(row) for row in load("stacks").get("library", ())]


def kernel_library(distribution: str, major: int) -> dict[str, Any] | None:
    """The row of a library's distribution and major version (or its major-0 row); None if unlisted."""
    rows = [row for row in kernel_libraries() if row["distribution"] == distribution]
    row = next((row for row in rows if row["major"] == major), None)
    return row or next((row for row in rows if row["major"] == 0), None)


def low_precision_recipes() -> list[dict[str, Any]]:
    """The [[recipe]] rows of low_precision.toml, in the order the report lists them."""
    return [dict(row) for row in load("low_precision").get("recipe", ())]


def model_precision(model_type: str) -> dict[str, Any] | None:
    """The [[family]] row of model_precision.toml that lists `model_type`; None when none does."""
    wanted = model_type.strip().lower()
    rows = load("model_precision").get("family", ())
    row = next((row for row in rows if wanted in row["model_types"]), None)
    return dict(row) if row else None
