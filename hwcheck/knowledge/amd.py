"""Reader of rules/knowledge/amd.toml: gfx targets, what each ROCm release supports, the override."""

from __future__ import annotations

from hwcheck.base.numbers import whole_or_none
from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How a ROCm release lists a gfx target (rules/knowledge/amd.toml [[rocm]]).
SUPPORTED, DEPRECATED, UNSUPPORTED, UNLISTED = "supported", "deprecated", "unsupported", "unlisted"


def amd_target(arch: str | None) -> dict[str, Any] | None:
    """The [[gfx]] row of a gfx target ("gfx942"), None for a target the table lacks."""
    if not isinstance(arch, str):
        return None
    wanted = arch.strip().lower().split(":", 1)[0]  # rocminfo may add features: gfx90a:sramecc+:xnack-
    return next((dict(row) for row in load("amd")["gfx"] if row["target"] == wanted), None)


def _marketing_name(name: str) -> str:
    """A GPU name as the table spells it: "AMD Radeon(TM) RX 6600" -> "radeon rx 6600"."""
    text = name.lower().replace("(tm)", " ").replace("(r)", " ")
    words = text.split()
    return " ".join(words[1:] if words[:1] == ["amd"] else words)


def amd_target_by_name(name: str | None) -> dict[str, Any] | None:
    """The [[gfx]] row whose `names` holds a marketing name ("AMD Radeon RX 6600": gfx1032), else None."""
    if not isinstance(name, str) or not name.strip():
        return None
    wanted = _marketing_name(name)
    for row in load("amd")["gfx"]:
        if any(_marketing_name(listed) == wanted for listed in row.get("names", ())):
            return dict(row)
    return None


def amd_target_family(arch: str | None) -> dict[str, Any] | None:
    """The [[gfx_family]] row a gfx target no [[gfx]] row lists belongs to by its number, else None."""
    if not isinstance(arch, str):
        return None
    wanted = arch.strip().lower().split(":", 1)[0]
    if not wanted.startswith("gfx"):
        return None
    rows = [dict(row) for row in load("amd").get("gfx_family", ()) if wanted.startswith(row["prefix"])]
    return max(rows, key=lambda row: len(row["prefix"]), default=None)


def rocm_release(version: str | None) -> dict[str, Any] | None:
    """The [[rocm]] row of a ROCm release by its major.minor ("6.2.4" -> 6.2), None when not tabled."""
    wanted = major_minor(version)
    return next((dict(row) for row in load("amd")["rocm"] if row["release"] == wanted), None)


def rocm_support(version: str | None, arch: str) -> str | None:
    """How ROCm `version` lists gfx target `arch`: supported, deprecated, unsupported or unlisted; None when
    the table has no row for the release."""
    row = rocm_release(version)
    if row is None:
        return None
    for status in (SUPPORTED, DEPRECATED, UNSUPPORTED):
        if arch in row[status]:
            return status
    return UNLISTED


def first_rocm_supporting(arch: str) -> str | None:
    """The oldest ROCm release in the table that supports `arch`, None when none does."""
    rows = sorted(load("amd")["rocm"], key=lambda row: parse_version(row["release"]) or ())
    return next((row["release"] for row in rows if arch in row[SUPPORTED] or arch in row[DEPRECATED]), None)


def override_target(value: str | None) -> str | None:
    """The gfx target an HSA_OVERRIDE_GFX_VERSION value names ("10.3.0" -> gfx1030), else None."""
    if not isinstance(value, str):
        return None
    parts = value.strip().split(".")
    numbers = [whole_or_none(part) for part in parts]
    if len(numbers) != 3 or None in numbers:
        return None
    major, minor, stepping = (number or 0 for number in numbers)
    if not (7 <= major <= 99 and minor <= 9 and stepping <= 15):
        return None
    return f"gfx{major}{minor}{stepping:x}"


def override_facts() -> dict[str, Any]:
    """The [override] table: what HSA_OVERRIDE_GFX_VERSION does, when it is the remedy, when it lies."""
    return dict(load("amd")["override"])


def torch_rocm_variants(torch_version: str | None) -> list[str]:
    """The ROCm indexes of download.pytorch.org carrying a PyTorch release ("2.6.1": rocm6.1, rocm6.2.4)."""
    wanted = major_minor(torch_version)
    row = next((row for row in load("amd").get("torch_rocm_wheels", ()) if row["torch"] == wanted), None)
    return list(row["variants"]) if row else []


def amd_fp8_training() -> dict[str, Any]:
    """[fp8_training]: the targets Transformer Engine for ROCm runs FP8 on, its frameworks, recipe, source."""
    return dict(load("amd")["fp8_training"])
