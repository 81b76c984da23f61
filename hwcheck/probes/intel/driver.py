"""Intel's GPU user-space drivers, read from the dpkg database as torch.utils.collect_env reports them.

collect_env runs `dpkg -l | grep intel-opencl-icd` (and libze1, level-zero); the database that
command reads is /var/lib/dpkg/status, one stanza per package. Reading it is a bounded file
read, with no program to run; on systems without dpkg the versions stay unknown.
"""

from __future__ import annotations

import os

from hwcheck.base.inputs import joined, open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

DPKG_STATUS = "var/lib/dpkg/status"
# A desktop's database is a few MB; more than this is read no further.
MAX_STATUS_BYTES = 64 * 1024 * 1024
MAX_LINE = 4096


def dpkg_versions(root: str, packages: Iterable[str]) -> dict[str, str]:
    """Installed version of each of `packages` found in root/var/lib/dpkg/status (absent ones left out)."""
    wanted = set(packages)
    found: dict[str, str] = {}
    stanza: dict[str, str] = {}
    try:
        handle = open_regular(joined(root, DPKG_STATUS))
    except OSError:
        return found
    with handle:
        read = 0
        while read < MAX_STATUS_BYTES:
            # readline with a size: a 3 GB line is never held whole, only its first MAX_LINE bytes.
            raw = handle.readline(min(MAX_LINE, MAX_STATUS_BYTES - read))
            if not raw:
                break
            read += len(raw)
            rest = raw
            while not rest.endswith(b"\n") and read < MAX_STATUS_BYTES:
                rest = handle.readline(min(MAX_LINE, MAX_STATUS_BYTES - read))  # the long line's tail
                if not rest:
                    break
                read += len(rest)
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                _keep(stanza, wanted, found)
                stanza = {}
            elif not line[0].isspace() and ":" in line:
                field, _, value = line.partition(":")
                if field in ("Package", "Status", "Version"):
                    stanza[field] = value.strip()
        _keep(stanza, wanted, found)
    return found


def driver_facts(root: str, packages: Mapping[str, list[str]]) -> dict[str, str | None] | None:
    """intel_gpu_driver: each key's version, from its first installed package; None without dpkg."""
    if not os.path.isfile(joined(root, DPKG_STATUS)):
        return None
    names = [name for choices in packages.values() for name in choices]
    versions = dpkg_versions(root, names)
    facts: dict[str, str | None] = {
        key: next((versions[name] for name in choices if name in versions), None)
        for key, choices in packages.items()
    }
    facts["source"] = "/" + DPKG_STATUS
    return facts


def _keep(stanza: dict[str, str], wanted: set[str], found: dict[str, str]) -> None:
    name = stanza.get("Package", "").split(":")[0]  # "libze1:amd64" in multi-arch listings
    if name in wanted and stanza.get("Version") and stanza.get("Status", "").endswith(" installed"):
        found.setdefault(name, stanza["Version"][:64])
