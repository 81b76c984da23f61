"""PyTorch's CUDA wheels and the architectures each carries: rules/knowledge/torch.toml."""

from __future__ import annotations

import re
from functools import cache

from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version, version_key
from hwcheck.knowledge.cuda import KernelBuild, gpu_kernels, kernel_deviations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@cache
def _torch_tables() -> tuple[
    dict[str, dict[str, Any]], dict[str, list[str]], dict[tuple[str, str], dict[str, Any]]
]:
    table = load("torch")
    variants = {row["name"]: row for row in table["variant"]}
    releases = {row["version"]: list(row["variants"]) for row in table["release"]}
    builds = {(row["version"], row["variant"]): row for row in table["build"]}
    return variants, releases, builds


def torch_variants(version: str | None) -> list[str] | None:
    """The CUDA wheel variants ("cu128", ...) a PyTorch release ("2.7.1" matches 2.7) shipped."""
    release = major_minor(version) if isinstance(version, str) else None
    variants = _torch_tables()[1].get(release) if release else None
    return list(variants) if variants is not None else None


def torch_build(version: str | None, variant: str | None) -> dict[str, Any] | None:
    """Architectures of one PyTorch CUDA wheel ("2.7.1", "cu128"), with its CUDA and install index.

    `ptx` is None where no source says whether the wheel carries PTX.
    """
    release = major_minor(version) if isinstance(version, str) else None
    variants, _, builds = _torch_tables()
    row = builds.get((release, variant.strip().lower())) if release and isinstance(variant, str) else None
    if row is None:
        return None
    return {
        "version": row["version"],
        "variant": row["variant"],
        "cuda": variants[row["variant"]]["cuda"],
        "sm": list(row["sm"]),
        "ptx": list(row["ptx"]) if "ptx" in row else None,
        "index_url": variants[row["variant"]]["index_url"],
        "install": load("torch")["install"]["command"].format(version=version, variant=row["variant"]),
        "source": row["source"],
    }


def torch_variant(version: str | None, cuda: str | None) -> str | None:
    """The CUDA wheel variant of a PyTorch install: the local version ("2.6.0+cu126") or its CUDA."""
    if isinstance(version, str) and "+" in version:
        local = version.partition("+")[2].strip().lower()
        if re.fullmatch(r"cu\d+", local):
            return local
    parsed = parse_version(cuda)
    return f"cu{parsed[0]}{parsed[1]}" if parsed and len(parsed) >= 2 else None


def torch_kernels(version: str | None, variant: str | None) -> KernelBuild:
    """The architectures of one PyTorch CUDA wheel ("2.7.1", "cu128") with the deviations for its release.

    `sm` is None for a wheel the table does not list.
    """
    release = major_minor(version) if isinstance(version, str) else None
    deviations = kernel_deviations(load("torch").get("kernel_deviation", ()), release)
    build = torch_build(version, variant)
    if build is None:
        return KernelBuild(None, None, deviations=deviations)
    ptx = tuple(build["ptx"]) if build["ptx"] is not None else None
    return KernelBuild(tuple(build["sm"]), ptx, build["source"], deviations)


def torch_builds_for(variant: str | None) -> list[dict[str, Any]]:
    """Every PyTorch release's build of one wheel variant ("cu128") the table lists, oldest first."""
    _, releases, _ = _torch_tables()
    builds = [torch_build(release, variant) for release in releases]
    return sorted((b for b in builds if b), key=lambda build: version_key(build["version"]))


def torch_oldest_release() -> str | None:
    """The oldest PyTorch release torch.toml lists variants for ("2.0")."""
    return min(_torch_tables()[1], key=version_key, default=None)


def torch_fix(
    version: str | None, capabilities: list[str], *, oldest_first: bool = False
) -> dict[str, Any] | None:
    """The first PyTorch build from `version`'s release on that runs every GPU (the newest when unknown)."""
    _, releases, _ = _torch_tables()
    floor = version_key(major_minor(version)) if version else ()
    for release in sorted(releases, key=version_key, reverse=not (version or oldest_first)):
        if version_key(release) < floor:
            continue
        for variant in releases[release]:
            build = torch_build(release, variant)
            kernels = torch_kernels(release, variant)
            if build and all((k := gpu_kernels(kernels, cc)) and k.runs for cc in capabilities):
                return build
    return None
