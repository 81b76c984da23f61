"""PyTorch's CUDA wheels and the architectures its build policy gives each: rules/knowledge/torch.toml."""

from __future__ import annotations

import re
from functools import cache

from hwcheck.base.shell import command_from_template
from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version, version_key
from hwcheck.knowledge.cuda import KernelBuild, gpu_kernels, kernel_deviations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Local version segments of PyTorch's own wheels: "+cu128", "+cpu", and the 2.x
# "+cu121.with.pypi.cudnn" builds; anything else after "+" names somebody else's build.
_OFFICIAL_LOCAL = r"(?:cu\d+(?:\..*)?|cpu|rocm[\d.]+|xpu)"
# An alpha public version ("2.8.0a0") is what a source checkout builds (setup.py, NGC, Jetson).
# Patterns as text: re compiles each on first use and caches it (doctor's start-up, docs/benchmarks.md).
_ALPHA = r"\d+(?:\.\d+)*a\d"


@cache
def _torch_tables() -> tuple[
    dict[str, dict[str, Any]],
    dict[str, list[str]],
    dict[str, list[tuple[tuple[int, ...], dict[str, Any]]]],
]:
    table = load("torch")
    variants = {row["name"]: row for row in table["variant"]}
    releases = {row["version"]: list(row["variants"]) for row in table["release"]}
    policies: dict[str, list[tuple[tuple[int, ...], dict[str, Any]]]] = {}
    for row in table["arch_policy"]:
        policies.setdefault(row["cuda"], []).append((version_key(row["release_from"]), row))
    return (
        variants,
        releases,
        {cuda: sorted(rows, key=lambda pair: pair[0]) for cuda, rows in policies.items()},
    )


def torch_variants(version: str | None) -> list[str] | None:
    """The CUDA wheel variants ("cu128", ...) a PyTorch release ("2.7.1" matches 2.7) shipped."""
    release = major_minor(version) if isinstance(version, str) else None
    variants = _torch_tables()[1].get(release) if release else None
    return list(variants) if variants is not None else None


def local_build(version: str | None) -> bool:
    """Whether a PyTorch version names a build PyTorch did not publish ("2.8.0a0+git...", NGC's ".nv")."""
    if not isinstance(version, str) or not version.strip():
        return False
    public, _, local = version.strip().lower().partition("+")
    return bool(re.match(_ALPHA, public)) or (bool(local) and not re.fullmatch(_OFFICIAL_LOCAL, local))


def variant_cuda(variant: str | None) -> str | None:
    """The CUDA version of a wheel variant: "cu128" -> "12.8", "cu102" -> "10.2"."""
    match = re.fullmatch(r"cu(\d{2,3})", variant.strip().lower()) if isinstance(variant, str) else None
    return f"{match.group(1)[:-1]}.{match.group(1)[-1]}" if match else None


def torch_build(version: str | None, variant: str | None) -> dict[str, Any] | None:
    """Architectures of one PyTorch CUDA wheel ("2.7.1", "cu128") by PyTorch's build policy for its CUDA.

    The row of the variant's CUDA version in force at the release (a release older than every
    row takes the first); None for a CUDA version without a row or a local build. `ptx` is None
    where no source says whether the wheel carries PTX; `index_url` and `install` are None for a
    variant PyTorch no longer publishes an index for.
    """
    cuda = variant_cuda(variant)
    rows = _torch_tables()[2].get(cuda or "") if cuda else None
    release = version_key(major_minor(version)) if isinstance(version, str) else ()
    if not rows or not release or local_build(version):
        return None
    in_force = [row for first, row in rows if first <= release] or [rows[0][1]]
    row = in_force[-1]
    name = str(variant).strip().lower()
    listed = _torch_tables()[0].get(name)
    shown = major_minor(version) or "any release"
    return {
        "version": major_minor(version),
        "variant": name,
        "cuda": cuda,
        "sm": list(row["sm"]),
        "ptx": list(row["ptx"]) if "ptx" in row else None,
        "release_from": row["release_from"],
        "index_url": listed["index_url"] if listed else None,
        "install": torch_install(version, name) if listed else None,
        "source": f"PyTorch's build policy for CUDA {cuda} from {row['release_from']} (for {shown}): "
        + row["source"],
    }


def torch_variant(version: str | None, cuda: str | None) -> str | None:
    """The CUDA wheel variant of a PyTorch install: the local version ("2.6.0+cu126") or its CUDA."""
    if isinstance(version, str) and "+" in version:
        local = version.partition("+")[2].strip().lower()
        match = re.match(r"(cu\d+)(?:$|\.)", local)
        if match:
            return match.group(1)
    parsed = parse_version(cuda)
    return f"cu{parsed[0]}{parsed[1]}" if parsed and len(parsed) >= 2 else None


def torch_kernels(version: str | None, variant: str | None, cuda: str | None = None) -> KernelBuild:
    """The architectures of one PyTorch CUDA build, its CUDA and the deviations for its release.

    A local build, or a CUDA version the policy has no row for, has `sm` None: only its CUDA
    version (`cuda`, else the variant's) then bounds what it can carry.
    """
    release = major_minor(version) if isinstance(version, str) else None
    deviations = kernel_deviations(load("torch").get("kernel_deviation", ()), release)
    toolkit = cuda or variant_cuda(variant)
    build = torch_build(version, variant)
    if build is None:
        if local_build(version):
            why = f"PyTorch {version} is a local build (its architecture list is whatever its builder chose)"
        elif not version_key(major_minor(version)):
            why = "the PyTorch version is unknown"
        else:
            why = f"no PyTorch build policy is recorded for CUDA {toolkit}"
        return KernelBuild(None, None, why, deviations, toolkit)
    ptx = tuple(build["ptx"]) if build["ptx"] is not None else None
    return KernelBuild(tuple(build["sm"]), ptx, build["source"], deviations, toolkit)


def torch_builds_for(variant: str | None) -> list[dict[str, Any]]:
    """Every policy row's build of one wheel variant ("cu128"), oldest first."""
    rows = _torch_tables()[2].get(variant_cuda(variant) or "") or []
    builds = [torch_build(row["release_from"], variant) for _, row in rows]
    return [build for build in builds if build]


def torch_fix(
    version: str | None, capabilities: list[str], *, oldest_first: bool = False
) -> dict[str, Any] | None:
    """The first PyTorch build from `version`'s release on that runs every GPU (the newest when unknown)."""
    _, releases, _ = _torch_tables()
    capabilities = list(dict.fromkeys(capabilities))  # 100,000 GPUs are a handful of capabilities
    floor = version_key(major_minor(version)) if version else ()
    for release in sorted(releases, key=version_key, reverse=not (version or oldest_first)):
        if version_key(release) < floor:
            continue
        for variant in releases[release]:
            build = torch_build(release, variant)
            kernels = torch_kernels(release, variant)
            if (
                build
                and build["install"]
                and all((k := gpu_kernels(kernels, cc)) and k.runs for cc in capabilities)
            ):
                return build
    return None


def torch_install(version: str | None, variant: str) -> str:
    """The command installing PyTorch `version` (the newest, when None) from the wheel index of `variant`."""
    template = load("torch")["install"]["command"]
    if version is None:
        template = template.replace("=={version}", "")
    return command_from_template(template, version=version, variant=variant)
