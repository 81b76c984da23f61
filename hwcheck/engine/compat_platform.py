"""The `platform` variables: the GPU remedies the operating system allows (rules/knowledge/platforms.toml)."""

from __future__ import annotations

from hwcheck import knowledge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(operating_system: dict[str, Any]) -> dict[str, Any]:
    """Platform name (linux, windows, wsl2, macos) and what platforms.toml says about it."""
    system = (operating_system.get("system") or "").lower()
    if operating_system.get("wsl"):
        name = "wsl2"
    elif system == "windows":
        name = "windows"
    elif system == "darwin":
        name = "macos"
    else:
        name = system or "unknown"
    row = knowledge.platform_facts(name)
    return {
        "name": name,
        "macos": name == "macos",
        "cuda": row.get("cuda", name != "macos"),
        "driver_on_windows": row.get("driver_installed_on") == "windows",
        "remedy": row.get("remedy") or "",
        "tensorflow_gpu_last": row.get("tensorflow_gpu_last"),
        "jax_cuda_wheels": row.get("jax_cuda_wheels", name not in ("macos",)),
    }
