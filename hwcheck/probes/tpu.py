"""Google TPU: whether one is attached, its generation, and the evidence for it."""

from __future__ import annotations

import os
from collections import Counter

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import joined, plain_path
from hwcheck.base.numbers import numbered
from hwcheck.probes import site_packages
from hwcheck.probes.result import ABSENT, ERROR, OK, ProbeResult
from hwcheck.probes.sysfs import PCI_DEVICES, pci_devices

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path
    from typing import Any


# The most device nodes the evidence names (a slice host has 4 or 8).
MAX_NODES_SHOWN = 16


def probe(
    *,
    root: str | Path = PCI_DEVICES,
    dev: str | Path = "/dev",
    environ: Mapping[str, str] | None = None,
    site_paths: Iterable[str] | None = None,
) -> ProbeResult:
    """The "tpu" facts: present only on PCI or TPU-slice evidence, never on libtpu alone."""
    from hwcheck.base.tables import load

    try:
        table = load("tpu")
    except InputError as error:  # a broken install: say which file, never raise
        return ProbeResult(ERROR, reason=str(error))
    environ = os.environ if environ is None else environ
    try:
        tpus = tpu_pci_devices(root, table)
    except OSError as error:
        return ProbeResult(ERROR, reason=f"{root}: cannot read: {error.strerror or error}")

    evidence = [
        f"PCI: {count} x Google {device_id} ({generation or 'TPU with no public name'})"
        for (device_id, generation), count in Counter(
            (tpu["device_id"], tpu["generation"]) for tpu in tpus
        ).items()
    ]
    slice_variables = [name for name in table["env"]["platform"] if environ.get(name)]
    evidence += [_describe_variable(name, environ[name]) for name in slice_variables]
    present = bool(evidence)
    if present:
        # /dev/accel* and /dev/vfio/* also belong to Intel/AMD NPUs and VFIO passthrough,
        # so they only back up other evidence.
        nodes = tpu_device_nodes(dev)
        if nodes:
            # A /dev of 100,000 nodes is named by its first few: the facts stay small.
            more = f" and {len(nodes) - MAX_NODES_SHOWN:,} more" if len(nodes) > MAX_NODES_SHOWN else ""
            evidence.append("device nodes: " + ", ".join(nodes[:MAX_NODES_SHOWN]) + more)

    weak = [
        f"{name} is set (weak: also set on workstations that drive a remote TPU)"
        for name in table["env"]["weak"]
        if environ.get(name)
    ]
    libtpu = libtpu_version(table["libtpu"]["distributions"], site_paths)
    if libtpu:
        weak.append(f"libtpu {libtpu} installed (weak: `pip install jax[tpu]` installs it on any machine)")

    if not present:
        facts: dict[str, Any] = {"present": False, "libtpu": libtpu}
        if weak:
            facts["detected_by"] = weak
        reason = "no TPU on the PCI bus and no TPU slice environment variables"
        if weak:
            reason += "; " + "; ".join(weak)
        return ProbeResult(ABSENT, {"tpu": facts}, reason=reason)

    generations = Counter(tpu["generation"] for tpu in tpus if tpu["generation"])
    if generations:
        generation = generations.most_common(1)[0][0]
    else:
        generation = accelerator_type_generation(
            environ.get("TPU_ACCELERATOR_TYPE", ""), table["accelerator_types"]
        )
    facts = {
        "present": True,
        "type": generation,
        "chips": len(tpus) or None,
        "detected_by": evidence + weak,
        # The runtime JAX and TensorFlow load (jax[tpu] and tensorflow-tpu install it).
        "libtpu": libtpu,
    }
    return ProbeResult(OK, {"tpu": facts})


def tpu_pci_devices(root: str | Path, table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Google PCI devices whose device id is a TPU's, each with its "generation" (or None)."""
    known = table["pci"]["devices"]
    tpus = []
    for device in pci_devices(root, vendors={table["pci"]["vendor_id"]}):
        entry = known.get(device["device_id"])
        if entry is not None:
            subsystems = entry.get("subsystems", {})
            generation = subsystems.get(device["subsystem_device_id"], entry.get("generation"))
            tpus.append({**device, "generation": generation})
    return tpus


def accelerator_type_generation(value: str, types: Mapping[str, str]) -> str | None:
    """The generation in a TPU accelerator type such as "v5litepod-16" or "v4-8"."""
    prefix, _, _count = value.strip().rpartition("-")
    return types.get(prefix.lower())


def tpu_device_nodes(dev: str | Path = "/dev") -> list[str]:
    """TPU-style device nodes: /dev/accelN (v4 and older), /dev/accel/accelN, /dev/vfio/N (v5e+)."""
    dev = plain_path(dev)
    nodes = []
    places = ((dev, "accel"), (joined(dev, "accel"), "accel"), (joined(dev, "vfio"), ""))
    for folder, prefix in places:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        nodes += [joined(folder, name) for name in names if numbered(name, prefix)]
    return sorted(nodes)


def libtpu_version(distributions: Iterable[str], site_paths: Iterable[str] | None = None) -> str | None:
    """The installed libtpu version, read from its dist-info folder name (no import)."""
    wanted = {site_packages.normalize(name) for name in distributions}
    installed = site_packages.distributions(site_paths)
    return next((dist.version for dist in installed if dist.name in wanted), None)


def _describe_variable(name: str, value: str) -> str:
    # Only the accelerator type is worth showing; host lists would leak into reports.
    if name == "TPU_ACCELERATOR_TYPE":
        return f"{name}={value}"
    return f"{name} is set"
