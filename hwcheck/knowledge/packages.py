"""The Python distributions the atlas's rules read: rules/knowledge/packages.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@cache
def package_variables() -> tuple[tuple[str, str], ...]:
    """(distribution name, its key under the rule variable `pkg`) for each row of packages.toml."""
    return tuple((str(row["name"]), str(row["variable"])) for row in load("packages")["package"])


@cache
def package_pairings() -> tuple[dict[str, Any], ...]:
    """The [[pairing]] rows of rules/knowledge/pairings.toml: which release of one package another needs."""
    return tuple(dict(row) for row in load("pairings")["pairing"])
