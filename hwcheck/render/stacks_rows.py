"""The doctor report's rows beyond the precision: what the stacks probe found, and fp8.recipes."""

from __future__ import annotations

from hwcheck.knowledge.stacks import low_precision_recipes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WORDS = {True: "yes", False: "no", None: "unknown"}


def recipes_line(recipes: dict[str, Any]) -> str:
    """One line: each recipe by its name and yes, no or unknown (the reasons are in the JSON report)."""
    labels = {row["id"]: row["label"] for row in low_precision_recipes()}
    parts = [
        f"{labels.get(name, name)} {WORDS.get(row.get('available'), 'unknown')}"
        for name, row in recipes.items()
        if isinstance(row, dict)
    ]
    return ", ".join(parts) + " (why: hwcheck doctor --json, recommendation.fp8.recipes)"


def stacks(facts: dict[str, Any]) -> str:
    """The stacks row: the C compiler and libcuda.so Triton needs, and the kernel libraries found."""
    from hwcheck.facts import section

    toolchain = section(facts, "toolchain")
    parts = []
    if isinstance(toolchain.get("c_compiler"), str):
        parts.append(f"C compiler {toolchain['c_compiler'] or 'not found'}")
    if isinstance(toolchain.get("cxx_compiler"), str):
        parts.append(f"C++ compiler {toolchain['cxx_compiler'] or 'not found'}")
    if isinstance(toolchain.get("libcuda"), str):
        parts.append(f"libcuda.so {toolchain['libcuda'] or 'not found'}")
    libraries = facts.get("kernel_libraries")
    if isinstance(libraries, dict):
        found = [_library(name, entry) for name, entry in libraries.items() if isinstance(entry, dict)]
        parts.append(
            ", ".join(found) if found else "no kernel library (flash-attn, xformers, bitsandbytes, TE)"
        )
    return "; ".join(parts)


def _library(name: str, entry: dict[str, Any]) -> str:
    arches = [str(a) for a in [*(entry.get("sm") or []), *(entry.get("ptx") or [])]]
    text = f"{name} {entry.get('version') or '(version unread)'}"
    return text + (f" ({' '.join(arches)})" if arches else "")
