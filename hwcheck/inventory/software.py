"""The software whose versions must agree across the nodes of one job, as a node's facts report it.

inventory/drift.py compares it between nodes (why each component matters is said there).
"""

from __future__ import annotations

from typing import Any

# (component, version) pairs of one node, in the order COMPONENTS lists them.
Software = tuple[tuple[str, str], ...]
COMPONENTS = (
    "NVIDIA driver",
    "CUDA runtime",
    "NCCL",
    "torch",
    "TensorFlow",
    "jax",
    "jaxlib",
    "JAX CUDA plugin",
    "keras",
)
# The framework whose loaded NCCL counts first: torch and JAX load theirs from NVIDIA's
# wheels or the loader path (facts.loaded); TensorFlow's is linked in.
NCCL_FRAMEWORKS = ("torch", "jax", "tensorflow")


def node_software(facts: dict[str, Any]) -> Software:
    """The versions of the software that must agree across a job, as this node's facts report them."""
    frameworks = facts.get("frameworks") or {}
    tensorflow = frameworks.get("tensorflow") or {}
    jax = frameworks.get("jax") or {}
    found = {
        "NVIDIA driver": (facts.get("nvidia_driver") or {}).get("version"),
        "CUDA runtime": (facts.get("cuda") or {}).get("version"),
        "NCCL": _nccl(facts),
        "torch": (frameworks.get("torch") or {}).get("version"),
        "TensorFlow": _tensorflow(tensorflow),
        "jax": jax.get("version"),
        "jaxlib": jax.get("jaxlib"),
        "JAX CUDA plugin": jax.get("plugin_version"),
        "keras": (frameworks.get("keras") or {}).get("version"),
    }
    return tuple((component, str(found[component])) for component in COMPONENTS if found[component])


def installed_frameworks(facts: dict[str, Any]) -> tuple[str, ...]:
    """The frameworks this node's facts record as installed, whether or not a version was read."""
    from hwcheck.facts import installed

    frameworks = facts.get("frameworks") or {}
    if not isinstance(frameworks, dict):
        return ()
    return tuple(name for name in ("tensorflow", "torch", "jax", "keras") if installed(frameworks, name))


def _nccl(facts: dict[str, Any]) -> str | None:
    # The copy a framework's loader picks is the one its collectives run; else the node's own.
    loaded = facts.get("loaded") or {}
    for framework in NCCL_FRAMEWORKS:
        version = ((loaded.get(framework) or {}).get("nccl") or {}).get("version")
        if version:
            return str(version)
    version = (facts.get("nccl") or {}).get("version")
    return str(version) if version else None


def _tensorflow(tensorflow: dict[str, Any]) -> str | None:
    version = tensorflow.get("version")
    if not version:
        return None
    if tensorflow.get("cuda_build") is False:
        return f"{version} CPU-only"
    return f"{version} CUDA {tensorflow['cuda']}" if tensorflow.get("cuda") else str(version)
