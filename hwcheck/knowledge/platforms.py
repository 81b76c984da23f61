"""What each platform (Windows, WSL2, macOS) changes: rules/knowledge/platforms.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@cache
def _platforms() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in load("platforms")["platform"]}


def platform_facts(name: str) -> dict[str, Any]:
    """What rules/knowledge/platforms.toml says about "windows", "wsl2" or "macos" (empty if nothing)."""
    return dict(_platforms().get(name, {}))
