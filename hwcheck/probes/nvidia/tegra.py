"""NVIDIA Jetson (Tegra): an integrated GPU that is not on the PCI bus, found from the device tree
(/proc/device-tree/compatible: nvidia,tegra234 ...), the L4T release file (/etc/nv_tegra_release)
and the GPU driver module (nvgpu up to JetPack 6, nvidia from JetPack 7)."""

from __future__ import annotations

import os
import re

from hwcheck.base.inputs import joined, plain_path
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import read_attribute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

MAX_BYTES = 4096
# "# R36 (release), REVISION: 4.3, GCID: ...": L4T 36.4.3.
_RELEASE = r"#\s*R([0-9]{1,3})\s*\(release\),\s*REVISION:\s*([0-9]{1,3}(?:\.[0-9]{1,3})?)"


def probe(*, root: str | Path = "/") -> ProbeResult:
    """The "tegra" facts: the SoC, its GPU family and compute capability, the L4T release, the driver."""
    from hwcheck.base.errors import InputError
    from hwcheck.base.tables import load

    root = plain_path(root)
    compatible = read_attribute(joined(root, "proc", "device-tree", "compatible"), MAX_BYTES) or ""
    socs = [entry[len("nvidia,") :] for entry in compatible.split("\0") if entry.startswith("nvidia,tegra")]
    release_text = read_attribute(joined(root, "etc", "nv_tegra_release"), MAX_BYTES)
    if not socs and release_text is None:
        return ProbeResult(ABSENT, reason="no Tegra SoC in the device tree and no /etc/nv_tegra_release")
    try:
        table = load("tegra")
    except InputError as error:
        return ProbeResult(ERROR, reason=str(error))
    facts: dict[str, Any] = {"soc": socs[-1] if socs else None}
    row = table["soc"].get(facts["soc"] or "")
    if row:
        facts["family"] = row["family"]
        facts["compute_capability"] = row["compute_capability"]
        facts["gpu_name"] = gpu_name(row)
    match = re.search(_RELEASE, release_text or "")
    facts["l4t"] = f"{match.group(1)}.{match.group(2)}" if match else None
    modules = joined(root, "sys", "module")
    facts["gpu_driver"] = next((m for m in ("nvgpu", "nvidia") if os.path.isdir(joined(modules, m))), None)
    return ProbeResult(OK, {"tegra": facts})


def gpu_name(row: dict[str, Any]) -> str:
    """The name of a [soc.*] row's integrated GPU (rules/knowledge/tegra.toml): NVML's where it names one."""
    return str(row.get("gpu_name") or f"NVIDIA {row['family']} integrated GPU")
