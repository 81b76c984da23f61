"""The ROCm release installed: /opt/rocm*/.info/version, read as text (nothing is run)."""

from __future__ import annotations

import os
import re

from hwcheck.base.inputs import joined, plain_path
from hwcheck.probes.sysfs import read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

VERSION_FILE = joined(".info", "version")
VERSION_BYTES = 256  # "6.2.0-66\n"
MAX_INSTALLS = 64
# The release, then the build number ROCm's packages append: "6.2.0-66", "5.7.1-98".
# Compiled on first use (re caches it), only where a version file was found.
_RELEASE = r"([0-9]{1,3}(?:\.[0-9]{1,3}){1,3})(?:-[0-9A-Za-z.~+]{1,40})?"


def rocm_release(root: str | Path, environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The "rocm" facts (version, source, path, found: newest first) and the problems met reading them.

    Looks in $ROCM_PATH, /opt/rocm and every /opt/rocm-X.Y.Z under `root`; a version file that
    holds no release number is a problem named with its path, never a guessed version.
    """
    # Paths are joined as text, spelled as pathlib spells them (doctor's start-up, docs/benchmarks.md).
    root = plain_path(root)
    places = []
    if environ.get("ROCM_PATH"):
        places.append(plain_path(environ["ROCM_PATH"]))
    places.append("/opt/rocm")
    try:
        names = sorted(os.listdir(joined(root, "opt")))[:MAX_INSTALLS]
    except OSError:
        names = []
    places += [joined("/opt", name) for name in names if name.startswith("rocm-")]
    found: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: set[str] = set()
    for place in places:
        folder = joined(root, place.lstrip(os.sep))  # the place under `root`
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        text = read_attribute(joined(folder, VERSION_FILE), VERSION_BYTES)
        if text is None:
            continue
        first = text.strip().split("\n", 1)[0].strip()
        match = re.fullmatch(_RELEASE, first)
        if match is None:
            shown = first[:40] + ("..." if len(first) > 40 else "")
            problems.append(f"{joined(place, VERSION_FILE)} holds {shown!r}, not a ROCm release number")
            continue
        found.append({"version": match.group(1), "source": "version file", "path": place})
    found.sort(key=lambda entry: tuple(int(part) for part in entry["version"].split(".")), reverse=True)
    # The copy a process uses: $ROCM_PATH when set, else /opt/rocm (a link to one release).
    by_path = {entry["path"]: entry for entry in found}
    chosen = by_path.get(places[0]) or by_path.get("/opt/rocm") or (found[0] if found else None)
    facts: dict[str, Any] = {"version": chosen["version"] if chosen else None, "found": found}
    if chosen:
        facts.update(source=chosen["source"], path=chosen["path"])
    return facts, problems
