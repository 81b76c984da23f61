"""The NVIDIA plug-in's `compat` namespace: the CUDA the chosen framework needs, the copies found,
what the driver runs.

Lookups only (facts and rules/knowledge tables); rules/policy/compatibility.toml decides what
a mismatch means. The engine asks every plug-in for its compatibility namespaces once the
framework's own variables (tf, torch, jax) are built, so it names no runtime itself.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import major, major_minor, parse_version, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def driver_platform(operating_system: dict[str, Any]) -> str:
    """Whose driver numbering applies: under WSL2 the driver is the Windows one, read on Windows."""
    system = (operating_system.get("system") or "").lower()
    wsl = bool(operating_system.get("wsl"))
    return "windows" if system == "windows" or wsl else "linux"


def variables(facts: dict[str, Any], context: dict[str, Any], framework: str) -> dict[str, Any]:
    """The `compat` namespace: the framework's CUDA and where that figure came from, copies found, drivers."""
    jax = context.get("jax") or {}
    # The CUDA the driver must run for this JAX: the local toolkit, else the plugin's major.
    jax_cuda = jax.get("cuda_toolkit") or jax.get("cuda")
    cuda, cuda_from = _framework_cuda(context, framework, jax_cuda)
    copies = _copies(facts, "cuda")
    cudnn_copies = _copies(facts, "cudnn")
    tensorflow = context["tf"]
    needed_cudnn = tensorflow.get("cudnn") if framework == "tensorflow" else None
    operating_system = facts.get("os")
    platform = driver_platform(operating_system if isinstance(operating_system, dict) else {})
    minimum = (knowledge.cuda_driver_minimum(cuda) if cuda and len(version_key(cuda)) >= 2 else None) or {}
    family = knowledge.cuda_driver_minimum(f"{major(cuda)}.0") if cuda else None
    return {
        "compat": {
            "cuda": cuda,
            "cuda_from": cuda_from,
            "cuda_found": [_label(copy) for copy in copies],
            "cuda_match": _matching(copies, cuda),
            "cudnn": needed_cudnn,
            "cudnn_found": [_label(copy) for copy in cudnn_copies],
            "cudnn_match": _matching(cudnn_copies, needed_cudnn),
            "driver_platform": platform,
            "min_driver": minimum.get(platform),
            "min_driver_minor_compat": (family or {}).get(f"minor_compat_{platform}"),
        }
    }


def _framework_cuda(context: dict[str, Any], framework: str, jax_cuda: str | None) -> tuple[str | None, str]:
    tensorflow = context["tf"]
    if framework == "tensorflow":
        if tensorflow["cuda"]:
            return tensorflow["cuda"], "its build_info"
        if tensorflow["installed"] and tensorflow["cuda_build"] and tensorflow["tested_cuda"]:
            return (
                tensorflow["tested_cuda"],
                f"TensorFlow {major_minor(tensorflow['version'])}'s tested build configuration "
                "(its build_info names no CUDA)",
            )
        return None, ""
    if framework == "torch":
        cuda = context["torch"]["cuda"]
        return (cuda, "the wheel's build") if cuda else (None, "")
    if framework == "jax" and jax_cuda:
        return jax_cuda, "the jaxlib build and the CUDA it loads"
    return None, ""


def _copies(facts: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """Every copy the probe recorded (`found`), else the single version the facts give."""
    section = facts.get(key)
    library: dict[str, Any] = section if isinstance(section, dict) else {}
    found = [c for c in library.get("found") or [] if isinstance(c, dict) and parse_version(c.get("version"))]
    if found:
        return found
    if parse_version(library.get("version")):
        return [{"version": library["version"], "source": library.get("source")}]
    return []


def _label(copy: dict[str, Any]) -> str:
    return f"{copy['version']} ({copy['source']})" if copy.get("source") else str(copy["version"])


def _matching(copies: list[dict[str, Any]], needed: str | None) -> str | None:
    """The newest copy of the same major version as `needed` (minor versions are compatible within one)."""
    if not needed or not parse_version(needed):
        return None
    same = [copy for copy in copies if major(copy["version"]) == major(needed)]
    return max((copy["version"] for copy in same), key=version_key, default=None)
