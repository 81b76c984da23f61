"""The CUDA builds of JAX and TensorFlow that carry a machine's GPUs, and what every install plan
is made of: the pip and uv commands (every value quoted: commands are data), the plan without a
command, its sources and whether a driver runs a CUDA build.

A build carries a GPU only where its CUDA major can target the GPU's architecture
(rules/knowledge/nvidia.toml [cuda_targets]: CUDA 13 nothing below 7.5, CUDA 12 nothing below
5.0) and, for JAX, at or above the plugin's own floor (jax.toml); a newer build that does not
is passed over for the newest that does, and the plan says why.
"""

from __future__ import annotations

import shlex

from hwcheck import knowledge
from hwcheck.base.versions import major_minor, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def command(tool: str, package: str, index_url: str | None, extra_index: bool = False) -> str:
    """The `tool` (pip or uv) command that installs `package`, from `index_url` when given."""
    words = ["pip", "install", package] if tool == "pip" else ["uv", "pip", "install", package]
    if index_url:
        words += ["--extra-index-url" if extra_index else "--index-url", index_url]
    return shlex.join(words)


def commands(requirement: str, index_url: str | None, *, extra: bool = False) -> dict[str, str]:
    """The plan's "pip" and "uv" commands for `requirement`."""
    return {
        "pip": command("pip", requirement, index_url, extra),
        "uv": command("uv", requirement, index_url, extra),
    }


def no_command(why: str, table: dict[str, Any], package: str) -> dict[str, Any]:
    """A plan with no command: no build in hwcheck's tables runs this machine, and why."""
    return {
        "target": None,
        "index_url": None,
        "pip": None,
        "uv": None,
        "why": why,
        "sources": sources(table, package),
    }


def sources(table: dict[str, Any], package: str) -> list[str]:
    """Where `package`'s install commands come from (install.toml)."""
    return list(table[package]["sources"])


def driver_runs(driver: str | None, cuda: str) -> bool | None:
    """Whether driver `driver` runs a build for `cuda` (minor version compatibility); None when unknown."""
    minimum = knowledge.cuda_driver_minimum(cuda)
    if not driver or not minimum or not minimum.get("minor_compat_linux"):
        return None
    return version_key(driver) >= version_key(minimum["minor_compat_linux"])


def shown_capabilities(capabilities: list[str]) -> str:
    """Compute capabilities as a plan's reason names them ("6.0, 6.1", or "unknown")."""
    return ", ".join(capabilities) or "unknown"


def tensorflow_cuda_plan(names: str, capabilities: list[str], table: dict[str, Any]) -> dict[str, Any]:
    """The newest TensorFlow release whose build carries every GPU's architecture (tensorflow.toml)."""
    row = table["tensorflow"]
    releases = sorted(
        (build for build in knowledge.load("tensorflow")["build"] if "sm" in build),
        key=lambda build: version_key(build["version"]),
        reverse=True,
    )
    newest = releases[0] if releases else None
    for build in releases:
        kernels = knowledge.tensorflow_kernels(build["version"], cuda=build["cuda"])
        if not all(
            (kernel := knowledge.gpu_kernels(kernels, cc))
            and kernel.runs
            # A build carries nothing its CUDA cannot target ([cuda_targets]: CUDA 13 nothing below 7.5).
            and knowledge.cuda_targets(build["cuda"], cc) is not False
            for cc in capabilities
        ):
            continue
        if build is newest:
            why = f"{names}: TensorFlow's CUDA build (its pip extra installs the CUDA libraries)"
            return {
                "target": "cuda",
                "index_url": None,
                **commands(row["cuda_requirement"], None),
                "why": why,
                "sources": sources(table, "tensorflow"),
            }
        release = str(major_minor(build["version"]))
        why = (
            f"{names} (compute capability {shown_capabilities(capabilities)}): TensorFlow "
            f"{major_minor(newest['version']) if newest else '?'} (the current release) carries no code "
            f"for it (its architectures: {', '.join(newest['sm'] if newest else ())}); {release} is the "
            f"newest whose build does ({', '.join(build['sm'])}), built with CUDA {build['cuda']} and "
            f"cuDNN {build['cudnn']}: install those beside it (its tested build configuration)"
        )
        return {
            "target": "cuda",
            "release": release,
            "index_url": None,
            **commands(f"tensorflow=={release}.*", None),
            "why": why,
            "sources": sources(table, "tensorflow"),
        }
    why = (
        f"{names} (compute capability {shown_capabilities(capabilities)}): no TensorFlow build in "
        "hwcheck's tables carries code for it (build TensorFlow from source, or use the CPU build)"
    )
    return no_command(why, table, "tensorflow")


def _jax_uncarried(extra: dict[str, Any], capabilities: list[str]) -> tuple[str, list[str]]:
    """The lowest compute capability a JAX CUDA plugin carries, and the GPUs' below it.

    The plugin's CUDA major bounds it (nvidia.toml [cuda_targets]: CUDA 13 targets nothing below
    7.5, CUDA 12 nothing below 5.0), and JAX's own floor for that major (jax.toml) may be higher.
    """
    floors = [
        floor
        for floor in (
            knowledge.cuda_lowest_capability(extra["cuda"]),
            (knowledge.jax_cuda(int(extra["cuda"].split(".")[0])) or {}).get("minimum_compute_capability"),
        )
        if floor
    ]
    floor = max(floors, key=version_key) if floors else ""
    below = [
        cc
        for cc in capabilities
        if knowledge.cuda_targets(extra["cuda"], cc) is False
        or (floor and version_key(cc) < version_key(floor))
    ]
    return floor, below


def jax_cuda_plan(
    names: str, capabilities: list[str], driver: str | None, table: dict[str, Any]
) -> dict[str, Any]:
    """The newest JAX CUDA plugin that carries every GPU and that the driver runs."""
    row = table["jax"]
    passed_over: list[str] = []  # newer plugins that carry no code for these GPUs, and why
    carrying = []
    for extra in row["cuda_extras"]:
        floor, below = _jax_uncarried(extra, capabilities)
        if below:
            passed_over.append(
                f"jax[{extra['extra']}]: its CUDA {extra['cuda'].split('.')[0]} build carries nothing below "
                f"compute capability {floor} (these GPUs: {', '.join(below)})"
            )
        else:
            carrying.append(extra)
    for extra in carrying:
        runs = driver_runs(driver, extra["cuda"])
        if runs or (runs is None and extra is carrying[-1]):
            why = f"{names}: JAX's CUDA {extra['cuda'].split('.')[0]} plugin"
            why += (
                f"; driver {driver} runs CUDA {extra['cuda']} builds" if driver else "; the driver is unknown"
            )
            if passed_over:
                why += "; not " + "; not ".join(passed_over)
            return {
                "target": extra["extra"],
                "index_url": None,
                **commands(f"jax[{extra['extra']}]", None),
                "why": why,
                "sources": sources(table, "jax"),
            }
    if not carrying:
        return no_command(
            f"{names}: no JAX CUDA plugin carries code for these GPUs: " + "; ".join(passed_over),
            table,
            "jax",
        )
    return no_command(
        f"{names}: driver {driver} is older than every JAX CUDA plugin needs (update the driver)",
        table,
        "jax",
    )
