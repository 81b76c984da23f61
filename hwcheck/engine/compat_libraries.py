"""The `libs` variables: the cuDNN, cuBLAS, cuSPARSE and NCCL the runtime will load, and what it needs.

Facts only (facts["loaded"] from the CUDA probe's loader search, the framework's pins and
requirements); rules/policy/compatibility.toml says what a mismatch means.
"""

from __future__ import annotations

import os

from hwcheck import knowledge
from hwcheck.base.shell import export_command, shell_command
from hwcheck.base.versions import major, parse_version, version_key, version_less
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMPONENTS = ("cudnn", "cublas", "cusparse", "nccl")
_NAMES = {"cudnn": "cuDNN", "cublas": "cuBLAS", "cusparse": "cuSPARSE", "nccl": "NCCL"}


def variables(facts: dict[str, Any], backend: str, environment: dict[str, Any]) -> dict[str, Any]:
    """The `libs` namespace for the runtime `backend` (torch, tensorflow, jax)."""
    loaded = section(section(facts, "loaded"), backend)
    frameworks = section(facts, "frameworks")
    copies = {component: _copy(facts, loaded, component) for component in COMPONENTS}
    torch = section(frameworks, "torch")
    built = torch.get("cudnn") if backend == "torch" else None
    cudnn = copies["cudnn"]
    too_old = (
        backend == "torch"
        and cudnn["loaded"]
        and bool(parse_version(built))
        and major(cudnn["version"]) == major(built)
        and _older_minor(cudnn["version"], built)
    )
    result: dict[str, Any] = {
        **copies,
        "built_cudnn": built if parse_version(built) else None,
        "cudnn_too_old": too_old,
        "cudnn_fix": _cudnn_fix(cudnn, built, torch, environment) if too_old else "",
    }
    result.update(_jax(section(frameworks, "jax"), copies, backend))
    return result


def _copy(facts: dict[str, Any], loaded: dict[str, Any], component: str) -> dict[str, Any]:
    """The copy the runtime will load (`loaded` true), else the CUDA probe's first choice."""
    entry = loaded.get(component)
    if isinstance(entry, dict) and parse_version(entry.get("version")):
        chosen, is_loaded = entry, True
    else:
        chosen, is_loaded = section(facts, component), False
    return {
        "loaded": is_loaded,
        "version": chosen.get("version") if parse_version(chosen.get("version")) else None,
        "source": chosen.get("source") or "",
        "path": chosen.get("path") or "",
        "found_by": chosen.get("found_by") or chosen.get("source") or "",
    }


def _older_minor(loaded: str | None, needed: str | None) -> bool:
    """cuDNN's rule from 7 on (torch.backends.cudnn checks it): the same major, a minor as new or newer."""
    have, want = version_key(loaded)[:2], version_key(needed)[:2]
    return len(have) == 2 and len(want) == 2 and have < want


def _cudnn_fix(
    copy: dict[str, Any], built: str | None, torch: dict[str, Any], environment: dict[str, Any]
) -> str:
    """The exact remedy for a cuDNN older than the one torch was built with, by where it comes from."""
    name = knowledge.nvidia_wheel("cudnn")
    wheel = f"{name}-cu{major(torch.get('cuda'))}" if major(torch.get("cuda")) >= 12 else name
    install = shell_command(["pip", "install", f"{wheel}=={built}"])
    if copy["found_by"] == "LD_LIBRARY_PATH" and not copy["path"]:
        return (
            f"Take the directory holding cuDNN {copy['version']} out of LD_LIBRARY_PATH so PyTorch loads the "
            f"cuDNN it was built with, or put cuDNN {built} first there"
        )
    if copy["found_by"] == "LD_LIBRARY_PATH":
        directory = os.path.dirname(copy["path"])
        entries = str(environment.get("LD_LIBRARY_PATH") or "").split(os.pathsep)
        kept = [entry for entry in entries if entry and entry.rstrip("/") != directory.rstrip("/")]
        export = export_command("LD_LIBRARY_PATH", os.pathsep.join(kept))
        return (
            f"Take {directory} out of LD_LIBRARY_PATH ({export}) so PyTorch loads the "
            f"cuDNN it was built with, or put cuDNN {built} first there"
        )
    if copy["source"] == "pip":
        return f"{install} (the cuDNN this PyTorch was built with)"
    return f"Install cuDNN {built} where the loader finds it first ({copy['path']}), or {install}"


def _jax(jax: dict[str, Any], copies: dict[str, Any], backend: str) -> dict[str, Any]:
    """The libraries JAX will load that are older than its CUDA plugin allows (its METADATA's floors)."""
    too_old, unsure = [], []
    floors = jax.get("requires")
    requires: dict[str, Any] = floors if isinstance(floors, dict) else {}
    for component in ("cudnn", "cusparse", "cublas"):
        copy, floor = copies[component], requires.get(component)
        if backend != "jax" or not copy["version"] or not parse_version(floor):
            continue
        where = copy["path"] or copy["source"]
        named = f"{_NAMES[component]} {copy['version']}" + (f" ({where})" if where else "")
        older = _known_older(copy["version"], str(floor))
        if older is None:
            unsure.append(f"{named} against {floor}")
        elif older:
            too_old.append(f"{named} is older than {floor}")
    return {
        "jax_too_old": too_old,
        "jax_unsure": unsure,
        "jax_requires": {k: str(v) for k, v in requires.items()},
    }


def _known_older(have: str, floor: str) -> bool | None:
    """Whether `have` is older than `floor`; None when `have` is known only to fewer places (a soname's
    major) and agrees with `floor` as far as it goes, so the places that would decide are unknown."""
    have_key, floor_key = version_key(have), version_key(floor)
    if len(have_key) < len(floor_key) and have_key == floor_key[: len(have_key)]:
        return None
    return version_less(have, floor)
