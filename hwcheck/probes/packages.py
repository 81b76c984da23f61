"""The versions of the distributions rules/knowledge/packages.toml lists, read without importing any.

Reported by the frameworks probe as facts.packages: name -> version, "" for one looked for and
not installed. The frameworks probe already lists the site directories, so this costs a lookup.
"""

from __future__ import annotations

from functools import cache

from hwcheck.base.versions import recorded_version
from hwcheck.probes.site_packages import Distribution

# The most packages read from the table: it is ours, but a broken install may hold anything.
MAX_PACKAGES = 200


@cache
def listed() -> tuple[str, ...]:
    """The distribution names of rules/knowledge/packages.toml, in its order."""
    from hwcheck.base.tables import load  # loaded lazily, as the other probes load their tables

    rows = load("packages").get("package") or []
    return tuple(str(row["name"]) for row in rows[:MAX_PACKAGES] if isinstance(row, dict) and row.get("name"))


def versions(installed: dict[str, Distribution]) -> dict[str, str]:
    """Each listed name -> the installed version ("" when not installed); a version unreadable is left out."""
    found: dict[str, str] = {}
    for name in listed():
        dist = installed.get(name)
        if dist is None:
            found[name] = ""
        else:
            version = recorded_version(dist.version)
            if version:  # a version too long to record, or none, is unknown: left out
                found[name] = version
    return found
