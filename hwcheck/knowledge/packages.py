"""The Python distributions the atlas's rules read: rules/knowledge/packages.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load


@cache
def package_variables() -> tuple[tuple[str, str], ...]:
    """(distribution name, its key under the rule variable `pkg`) for each row of packages.toml."""
    return tuple((str(row["name"]), str(row["variable"])) for row in load("packages")["package"])
