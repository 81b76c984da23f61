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


def library_variables() -> dict[str, str]:
    """Each kernel library's distribution -> the name of its stacks.* namespace, in table order."""
    return {row["distribution"]: row["variable"] for row in kernel_libraries()}


def kernel_library(distribution: str, version: str | None) -> dict[str, Any] | None:
    """The [[library]] row for an installed release: the newest from_version at or below `version`;
    for an unread version only a row that holds for every release ("0"); None when no row applies."""
    from hwcheck.base.versions import parse_version, version_less

    rows = [row for row in kernel_libraries() if row["distribution"] == distribution]
    if not version or parse_version(version) is None:
        return next((row for row in rows if row["from_version"] == "0"), None)
    fitting = [row for row in rows if not version_less(version, row["from_version"])]
    return max(fitting, key=lambda row: parse_version(row["from_version"]) or (), default=None)


def low_precision_recipes() -> list[dict[str, Any]]:
    """The [[recipe]] rows of low_precision.toml, in the order the report lists them."""
    return [dict(row) for row in load("low_precision").get("recipe", ())]


def model_precision(model_type: str) -> dict[str, Any] | None:
    """The [[family]] row of model_precision.toml that lists `model_type`; None when none does."""
    wanted = model_type.strip().lower()
    rows = load("model_precision").get("family", ())
    row = next((row for row in rows if wanted in row["model_types"]), None)
    return dict(row) if row else None
