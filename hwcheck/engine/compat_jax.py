"""JAX variables: whether jaxlib can drive NVIDIA GPUs, the CUDA it compiles with, its GPU and driver floors.

Reads rules/knowledge/jax.toml; rules/policy/compatibility.toml says what a mismatch means.
"""

from __future__ import annotations

import hwcheck.engine.compiled as compiled
from hwcheck import knowledge
from hwcheck.base.shell import shell_command
from hwcheck.base.versions import major, parse_version, version_key
from hwcheck.facts import installed, section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(
    jax: dict[str, Any], facts: dict[str, Any], gpus: list[dict[str, Any]], driver_cuda: str | None
) -> dict[str, Any]:
    """The `jax` namespace; `cuda_toolkit` is the local CUDA a non-plugin jaxlib JIT-compiles with.

    jaxlib's own kernels are the architectures read from its CUDA plugin's files where the facts
    have them (engine/compiled.py), else jax.toml's build policy.
    """
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
    # jaxlib's own CUDA kernels (its build policy, else its CUDA's reach) for the GPUs above that floor.
    kernels = knowledge.jax_kernels(jax.get("jaxlib"), cuda) if build else None
    kernels = compiled.read_build(facts, "jax", kernels) or kernels
    exact = bool(facts.get("tegra")) and isinstance(
        facts["tegra"], dict
    )  # a Jetson (Tegra SoC) runs only a cubin of its own X.Y
    verdicts = [
        (g, knowledge.gpu_kernels(kernels, g["compute_capability"], exact_cubin=exact))
        for g in gpus
        if kernels
    ]
    without = [(g, k) for g, k in verdicts if k is not None and k.path == "none" and g["label"] not in below]
    install_family = knowledge.jax_cuda(13 if major(driver_cuda) >= 13 else 12)
    return {
        **_plugin(jax),
        "installed": installed(section(facts, "frameworks"), "jax"),
        "version": jax.get("version"),
        "jaxlib": jax.get("jaxlib"),
        "cuda_build": build,
        "cpu_only": build is False,
        "cuda": cuda,
        "plugin": plugin,
        "cuda_toolkit": toolkit,
        "min_cc": minimum_cc,
        "gpus_below_min_cc": sorted(set(below)),
        "gpus_without_kernels": sorted({g["label"] for g, _ in without}),
        "kernels_reason": "; ".join(dict.fromkeys(_reason(k, kernels, g, exact) for g, k in without)),
        "install": (install_family or {}).get("install"),
        # The Jetson's own SASS target ("87" for an Orin), for the build command.
        "tegra_sm": "".join(str(gpus[0]["compute_capability"]).split(".")[:2]) if exact and gpus else "",
    }


def _plugin(jax: dict[str, Any]) -> dict[str, Any]:
    """The CUDA plugin's version against jaxlib's and its PJRT runtime's, and the install that matches them.

    jaxlib's check_plugin_version (jaxlib/plugin_support.py) refuses a plugin whose version's
    numeric prefix differs from jaxlib's; the plugin pins its PJRT runtime to its own version.
    """
    jaxlib, plugin, pjrt = jax.get("jaxlib"), jax.get("plugin_version"), jax.get("pjrt_version")
    if not jax.get("cuda_build"):
        # Another PJRT plugin (Apple's jax-metal) has versions of its own: compat_apple pairs them.
        plugin = pjrt = None
    mismatch = ""
    if plugin and jaxlib and _numeric(plugin) != _numeric(jaxlib):
        mismatch = f"the CUDA plugin is {plugin} and jaxlib {jaxlib}"
    elif plugin and pjrt and _numeric(plugin) != _numeric(pjrt):
        mismatch = f"the CUDA plugin is {plugin} and its PJRT runtime {pjrt}"
    target = _numeric(jaxlib) or _numeric(plugin)
    extra = f"cuda{major(jax.get('cuda'))}" if major(jax.get("cuda")) else "cuda12"
    return {
        "plugin_version": plugin,
        "pjrt_version": pjrt,
        "plugin_mismatch": mismatch,
        "plugin_fix": shell_command(["pip", "install", f"jax[{extra}]=={target}"])
        if mismatch and target
        else "",
    }


def _numeric(version: Any) -> str:
    parsed = parse_version(version) if isinstance(version, str) else None
    return ".".join(str(part) for part in parsed) if parsed else ""


def _local_cuda(facts: dict[str, Any], cuda_major: int | None) -> str | None:
    section = facts.get("cuda")
    library: dict[str, Any] = section if isinstance(section, dict) else {}
    copies = [c.get("version") for c in library.get("found") or [] if isinstance(c, dict)]
    copies = [v for v in copies or [library.get("version")] if parse_version(v)]
    if cuda_major:
        copies = [v for v in copies if major(v) == cuda_major]
    return max(copies, key=version_key, default=None)


def _reason(
    verdict: knowledge.GpuKernels,
    build: knowledge.KernelBuild | None,
    gpu: dict[str, Any],
    tegra: bool = False,
) -> str:
    """Why jaxlib has no kernels for a GPU: its CUDA's reach, or the list it was compiled for."""
    if verdict.reason or build is None:
        return verdict.reason or verdict.source
    carried = " ".join((*(build.sm or ()), *(build.ptx or ())))
    capability = gpu["compute_capability"]
    why = f"none of the architectures it carries ({carried}) runs on compute capability {capability}"
    if tegra:
        why += (
            " (a Jetson runs no cubin built for another compute capability: 'no kernel image is available')"
        )
    return why


def _below(gpu: dict[str, Any], minimum: str) -> bool:
    return version_key(gpu["compute_capability"]) < version_key(minimum)
