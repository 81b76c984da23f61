"""Which release of one package another needs (rules/knowledge/pairings.toml), as rule variables.

`pairing.ID.wanted` is the release the table asks for beside the installed `of` (null when the
table has no row for it or `of` is unknown); `pairing.ID.off` is true only when both releases
are known and the installed one is not the wanted one.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import major_minor, version_at_least, version_less

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """pairing.ID -> {wanted, installed, off} for each [[pairing]] of pairings.toml."""
    found = {}
    for row in knowledge.package_pairings():
        of = _fact(facts, row["of"])
        installed = _fact(facts, row["installed"])
        wanted = _wanted(row, of)
        found[row["id"]] = {
            "wanted": wanted,
            "installed": installed,
            "off": bool(wanted and installed and _off(row["kind"], installed, wanted)),
        }
    return found


def _wanted(row: dict[str, Any], of: str | None) -> str | None:
    if not of:
        return None
    if row["kind"] == "same_minor":
        minor = major_minor(of)
        return next((str(pair["wants"]) for pair in row["rows"] if pair["of"] == minor), None)
    floors = [pair for pair in row["rows"] if version_at_least(of, str(pair["of"]))]
    return str(floors[-1]["wants"]) if floors else None


def _off(kind: str, installed: str, wanted: str) -> bool:
    if kind == "same_minor":
        return major_minor(installed) != wanted
    return version_less(installed, wanted)


def _fact(facts: dict[str, Any], path: str) -> str | None:
    """The version at a dotted facts path ("packages.torchvision"), None when absent or not text."""
    node: Any = facts
    *steps, key = path.split(".")
    for step in steps:
        node = node.get(step) if isinstance(node, dict) else None
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, str) and value else None
