"""NVIDIA Jetson (Tegra) in the rules: its integrated GPU joins the GPUs, its driver's CUDA comes
from the L4T release (not from the x86 driver-number table), and the L4T release says whether its
CUDA is the SBSA one pip's aarch64 CUDA wheels are built for (rules/knowledge/tegra.toml)."""

from __future__ import annotations

from hwcheck.base.tables import load
from hwcheck.base.versions import version_key
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def with_integrated_gpu(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts with the Tegra GPU in `gpus` when the probes found a Tegra SoC and NVML listed no
    NVIDIA GPU (before JetPack 7 NVML may not see it); unchanged otherwise."""
    tegra = section(facts, "tegra")
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    if not tegra.get("compute_capability") or any(g.get("vendor", "nvidia") == "nvidia" for g in gpus):
        return facts
    integrated = {
        "index": 0,
        "vendor": "nvidia",
        "name": tegra.get("gpu_name") or f"NVIDIA {tegra.get('family') or 'Jetson'} integrated GPU",
        "compute_capability": tegra["compute_capability"],
        "integrated": True,
    }
    return {**facts, "gpus": [*gpus, integrated]}


def own_name(gpu: dict[str, Any]) -> bool:
    """Whether `gpu` is the integrated GPU with_integrated_gpu made, named from rules/knowledge/tegra.toml
    (hwcheck's own table lists it, with its capability: not a board the GPU table fails to list)."""
    names = {
        row.get("gpu_name") or f"NVIDIA {row['family']} integrated GPU"
        for row in load("tegra")["soc"].values()
    }
    return gpu.get("integrated") is True and gpu.get("name") in names


def release(l4t: Any) -> dict[str, Any] | None:
    """The [[l4t]] row in force for an L4T release ("36.4.3"), or None when unknown or too old."""
    if not isinstance(l4t, str) or not version_key(l4t):
        return None
    given = (*version_key(l4t), 0)[:2] if len(version_key(l4t)) < 2 else version_key(l4t)  # "38" is 38.0
    rows = [row for row in load("tegra")["l4t"] if version_key(row["l4t_from"]) <= given]
    return max(rows, key=lambda row: version_key(row["l4t_from"]), default=None)


def variables(facts: dict[str, Any]) -> dict[str, Any]:
    """The `tegra` namespace: every key present; what could not be read is null."""
    tegra = section(facts, "tegra")
    row = release(tegra.get("l4t"))
    return {
        "present": bool(tegra),
        "family": tegra.get("family") or ("a Jetson (Tegra " + str(tegra.get("soc")) + ")" if tegra else ""),
        "l4t": tegra.get("l4t"),
        "jetpack": row["jetpack"] if row else None,
        "cuda": row["cuda"] if row else None,
        # Whether the L4T CUDA is the SBSA one of pip's aarch64 wheels: null when L4T is unknown.
        "sbsa": row["sbsa"] if row else None,
    }


def complete_driver(driver: dict[str, Any], tegra: dict[str, Any]) -> dict[str, Any]:
    """On a Jetson, the driver's CUDA from its L4T release when NVML did not report one: the
    x86 driver-number table does not describe Jetson drivers."""
    if not tegra["present"] or driver.get("cuda_from") == "NVML":
        return driver
    return {**driver, "cuda": tegra["cuda"], "cuda_from": "the L4T release" if tegra["cuda"] else ""}
