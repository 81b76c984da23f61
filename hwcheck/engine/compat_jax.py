"""JAX variables: whether jaxlib can drive NVIDIA GPUs, the CUDA it compiles with, its GPU and driver floors.

Reads rules/knowledge/jax.toml; rules/policy/compatibility.toml says what a mismatch means.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import major, parse_version, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(
    jax: dict[str, Any], facts: dict[str, Any], gpus: list[dict[str, Any]], driver_cuda: str | None
) -> dict[str, Any]:
    """The `jax` namespace; `cuda_toolkit` is the local CUDA a non-plugin jaxlib JIT-compiles with."""
    build = jax.get("cuda_build")
    cuda = jax.get("cuda") if parse_version(jax.get("cuda")) else None
    plugin = jax.get("plugin")
    cuda_major = major(cuda) or None
    toolkit = None
    if not plugin and build is not False:
        # Before the plugins (and with jax[cudaNN-local]) jaxlib compiles with the CUDA installed here.
        toolkit = cuda if cuda and len(version_key(cuda)) >= 2 else _local_cuda(facts, cuda_major)
    minimum_cc = knowledge.jax_minimum_capability(jax.get("jaxlib"), cuda_major) if build else None
    below = [g["label"] for g in gpus if minimum_cc and g["compute_capability"] and _below(g, minimum_cc)]
    install_family = knowledge.jax_cuda(13 if major(driver_cuda) >= 13 else 12)
    return {
        "installed": bool(jax.get("version")),
        "version": jax.get("version"),
        "jaxlib": jax.get("jaxlib"),
        "cuda_build": build,
        "cpu_only": build is False,
        "cuda": cuda,
        "plugin": plugin,
        "cuda_toolkit": toolkit,
        "min_cc": minimum_cc,
        "gpus_below_min_cc": sorted(set(below)),
        "install": (install_family or {}).get("install"),
    }


def cuda_for_compat(jax_variables: dict[str, Any]) -> str | None:
    """The CUDA figure the driver must run for this JAX: the local toolkit, else the plugin's major."""
    return jax_variables["cuda_toolkit"] or jax_variables["cuda"]


def _local_cuda(facts: dict[str, Any], cuda_major: int | None) -> str | None:
    section = facts.get("cuda")
    library: dict[str, Any] = section if isinstance(section, dict) else {}
    copies = [c.get("version") for c in library.get("found") or [] if isinstance(c, dict)]
    copies = [v for v in copies or [library.get("version")] if parse_version(v)]
    if cuda_major:
        copies = [v for v in copies if major(v) == cuda_major]
    return max(copies, key=version_key, default=None)


def _below(gpu: dict[str, Any], minimum: str) -> bool:
    return version_key(gpu["compute_capability"]) < version_key(minimum)
