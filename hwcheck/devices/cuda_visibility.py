"""The GPUs the training process will see, in its own numbering: facts -> visible GPUs.

NVML (the GPU probe) lists every GPU on the machine; a CUDA process sees only those its
environment lets through, numbered as CUDA numbers them. This module resolves that once,
between the facts and the rules' context, so that every rule, renderer, emitter, NFD label
and inventory class speaks about the same GPUs. It is pure: facts (with their `environment`
block, which the environment probe fills from the live environment) in, a `Visibility` out.

`CUDA_VISIBLE_DEVICES`, as the CUDA Programming Guide documents it (§5.2.1.1,
https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html):
unset shows every GPU; empty shows none; otherwise a comma-separated sequence of GPU
identifiers, enumerated in the order given. An identifier is an integer index, a GPU UUID as
`nvidia-smi -L` prints it (`GPU-...`, any prefix long enough to name one GPU), or a MIG device
(`MIG-<uuid>`; the CUDA 11.0-era `MIG-GPU-<uuid>/<GI>/<CI>` form too). At the first invalid
identifier (an index out of range, `-1`, a UUID no GPU has or several share, garbage) parsing
stops: only the devices before it are visible. The guide says nothing about a repeated
identifier; PyTorch's mirror of the driver's parser (torch/cuda/__init__.py,
`_parse_visible_devices`: "Repeated ordinal results in empty set", and a strtoul-style index
read, so `1gpu` is 1) says the driver then shows no GPU, and that is what is modelled.

`CUDA_DEVICE_ORDER` (same page, §5.2.1.2): `FASTEST_FIRST`, the default, orders devices by a
heuristic guess of their speed; `PCI_BUS_ID` by PCI bus id, which is nvidia-smi's order. On a
machine whose GPUs are all one model the two agree; on a mixed machine an index means
different GPUs to CUDA and to nvidia-smi. The heuristic is not published, so indices are
resolved in nvidia-smi's order and the result is flagged `order_ambiguous`.

`NVIDIA_VISIBLE_DEVICES` is read by the NVIDIA container runtime before the process starts:
NVML inside the container already lists only those GPUs, so it is recorded, never applied
(`none`/`void` explain an NVML that lists no GPU). `JAX_PLATFORMS` without `cuda`/`gpu`
(https://docs.jax.dev/en/latest/installation.html, "JAX_PLATFORMS=cpu") keeps JAX off the
GPU, so for the jax backend it hides every GPU too.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from hwcheck.base.errors import InputError
from hwcheck.base.numbers import leading_whole, parse_whole, whole_or_none
from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
JAX_PLATFORMS = "JAX_PLATFORMS"
PCI_BUS_ID = "PCI_BUS_ID"
FASTEST_FIRST = "FASTEST_FIRST"
# JAX platform names that run on NVIDIA GPUs ("gpu" is the older alias of "cuda").
JAX_NVIDIA_PLATFORMS = frozenset({"cuda", "gpu"})
_LEGACY_MIG = r"MIG-(GPU-[0-9A-Fa-f-]+)/([0-9]+)/([0-9]+)\Z"
# ASCII digits only, as CUDA reads them: a fullwidth "１" is no index.
_LEADING_INDEX = r"\+?[0-9]"


# A NamedTuple, not a dataclass: doctor must not pay for importing dataclasses.
class Visibility(NamedTuple):
    """What the process sees: `gpus` in its numbering (cuda:0 first), and why."""

    physical: tuple[dict[str, Any], ...]  # NVIDIA GPUs NVML lists, nvidia-smi order
    gpus: tuple[dict[str, Any], ...]  # the visible ones, process order (MIG devices as GPUs)
    variable: str | None = None  # the variable that restricted them (set and in effect)
    value: str | None = None
    stopped_at: str | None = None  # the identifier where CUDA stopped reading
    stop_reason: str = ""
    ignored: tuple[str, ...] = ()  # identifiers after (and including) stopped_at
    repeated: bool = False
    order: str = FASTEST_FIRST
    order_ambiguous: bool = False
    unresolved: bool = False  # a UUID could not be checked: the facts lack UUIDs
    container_devices: str | None = None  # NVIDIA_VISIBLE_DEVICES, as recorded

    @property
    def hidden(self) -> list[dict[str, Any]]:
        """Physical GPUs none of whose devices the process sees."""
        seen = {gpu.get("physical_position") for gpu in self.gpus}
        return [gpu for position, gpu in enumerate(self.physical) if position not in seen]


def nvidia_gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The NVIDIA GPUs of the facts, in nvidia-smi's order (NVML index, else listed order)."""
    gpus = [
        gpu
        for gpu in facts.get("gpus") or []
        if isinstance(gpu, dict) and gpu.get("vendor", "nvidia") == "nvidia"
    ]
    return sorted(gpus, key=lambda gpu: gpu["index"] if isinstance(gpu.get("index"), int) else 1 << 30)


def resolve(facts: dict[str, Any], backend: str | None = None) -> Visibility:
    """The GPUs a process with the facts' `environment` sees; `backend` "jax" applies JAX_PLATFORMS."""
    environment = facts.get("environment")
    env = environment if isinstance(environment, dict) else {}
    physical = tuple(nvidia_gpus(facts))
    order = (
        PCI_BUS_ID if str(env.get("CUDA_DEVICE_ORDER") or "").strip().upper() == PCI_BUS_ID else FASTEST_FIRST
    )
    container = env.get("NVIDIA_VISIBLE_DEVICES")
    common: dict[str, Any] = {
        "physical": physical,
        "order": order,
        "container_devices": container if isinstance(container, str) else None,
    }
    value = env.get(CUDA_VISIBLE_DEVICES)
    if not isinstance(value, str):
        visibility = Visibility(gpus=tuple(_as_visible(physical)), **common)
    else:
        visibility = _parse(value, physical, common)
    platforms = env.get(JAX_PLATFORMS)
    if backend == "jax" and isinstance(platforms, str) and platforms.strip() and visibility.gpus:
        names = {name.strip().lower() for name in platforms.split(",")}
        if not names & JAX_NVIDIA_PLATFORMS:
            return visibility._replace(gpus=(), variable=JAX_PLATFORMS, value=platforms)
    return visibility


def _as_visible(physical: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [{**gpu, "physical_position": position} for position, gpu in enumerate(physical)]


def _parse(value: str, physical: tuple[dict[str, Any], ...], common: dict[str, Any]) -> Visibility:
    """Apply CUDA_VISIBLE_DEVICES=value to the physical GPUs."""
    tokens = [token.strip() for token in value.split(",")]
    mixed = len({(gpu.get("name"), gpu.get("compute_capability")) for gpu in physical}) > 1
    devices = _Devices(physical)
    visible: list[dict[str, Any]] = []
    seen: set[tuple[int, str | None]] = set()
    used_index = False
    for position, token in enumerate(tokens):
        found, reason, unresolved = _identify(token, devices)
        used_index = used_index or re.match(_LEADING_INDEX, token) is not None
        if found is None:
            # Identifiers with no UUID to check them against: the facts cannot say what CUDA
            # would do, so the advice stays about every GPU (and says so).
            if unresolved:
                return Visibility(
                    gpus=tuple(_as_visible(physical)),
                    variable=CUDA_VISIBLE_DEVICES,
                    value=value,
                    stopped_at=token,
                    stop_reason=reason,
                    unresolved=True,
                    **common,
                )
            return Visibility(
                gpus=tuple(visible),
                variable=CUDA_VISIBLE_DEVICES,
                value=value,
                stopped_at=token,
                stop_reason=reason,
                ignored=tuple(tokens[position:]),
                order_ambiguous=_ambiguous(mixed, common["order"], used_index),
                **common,
            )
        key = (found["physical_position"], found.get("uuid") if found.get("mig_device") else None)
        if key in seen:
            return Visibility(
                gpus=(),
                variable=CUDA_VISIBLE_DEVICES,
                value=value,
                stopped_at=token,
                stop_reason="names a GPU already listed (a repeated identifier leaves no GPU visible)",
                ignored=tuple(tokens),
                repeated=True,
                order_ambiguous=_ambiguous(mixed, common["order"], used_index),
                **common,
            )
        seen.add(key)
        visible.append(found)
    return Visibility(
        gpus=tuple(visible),
        variable=CUDA_VISIBLE_DEVICES,
        value=value,
        order_ambiguous=_ambiguous(mixed, common["order"], used_index),
        **common,
    )


def _ambiguous(mixed: bool, order: str, used_index: bool) -> bool:
    return mixed and order != PCI_BUS_ID and used_index


class _UuidIndex:
    """UUIDs sorted once, so a prefix is found by bisection, not by a scan of every device."""

    def __init__(self, candidates: list[tuple[int, dict[str, Any]]], kind: str) -> None:
        self.kind = kind
        named = [(str(d.get("uuid")).lower(), p, d) for p, d in candidates if d.get("uuid")]
        named.sort(key=lambda entry: entry[0])
        self.keys = [key for key, _, _ in named]
        self.entries = [(p, d) for _, p, d in named]
        self.unknown = len(candidates) - len(named)
        self.empty = not candidates

    def find(self, token: str) -> tuple[dict[str, Any] | None, str, bool]:
        """The one device whose UUID begins with `token`, or why there is none."""
        prefix = token.lower()
        low = bisect_left(self.keys, prefix)
        # Every key that begins with the prefix sorts before prefix + the last code point.
        count = bisect_left(self.keys, prefix + "\U0010ffff", low) - low
        if count == 1:
            position, device = self.entries[low]
            return {**device, "physical_position": position}, "", False
        if count > 1:
            return None, f"is ambiguous: {count} {self.kind} UUIDs begin with it", False
        if self.unknown:
            missing = f"{self.unknown} {self.kind} UUID(s) are not in the facts"
            return None, f"could not be checked: {missing}", True
        return None, f"matches no {self.kind} UUID on this machine", False


class _Devices:
    """The physical GPUs and their MIG devices, indexed once for every identifier of the variable."""

    def __init__(self, physical: tuple[dict[str, Any], ...]) -> None:
        self.physical = physical
        self.gpus = _UuidIndex(list(enumerate(physical)), "GPU")
        instances: list[tuple[int, dict[str, Any]]] = []
        for position, gpu in enumerate(physical):
            for device in gpu.get("mig_devices") or []:
                if isinstance(device, dict):
                    instances.append((position, _mig_as_gpu(gpu, device)))
        self.migs = _UuidIndex(instances, "MIG")
        self.mig_unlisted = not instances and any(gpu.get("mig") for gpu in physical)
        # Legacy MIG names give the parent's UUID and the instance ids: indexed by the ids,
        # each with its parents' UUIDs sorted for a prefix search.
        by_ids: dict[tuple[Any, Any], list[tuple[int, dict[str, Any]]]] = {}
        for position, device in instances:
            ids = (device.get("gpu_instance_id"), device.get("compute_instance_id"))
            parent = {"uuid": physical[position].get("uuid"), "device": device}
            by_ids.setdefault(ids, []).append((position, parent))
        self.legacy = {ids: _UuidIndex(entries, "MIG") for ids, entries in by_ids.items()}


def _identify(token: str, devices: _Devices) -> tuple[dict[str, Any] | None, str, bool]:
    """(the device `token` names, why it names none, whether that is for want of UUIDs)."""
    if not token:
        return None, "is empty", False
    upper = token.upper()
    if upper.startswith("GPU-"):
        return devices.gpus.find(token)
    if upper.startswith("MIG-"):
        return _mig(token, devices)
    try:
        index = leading_whole(token, token)
    except InputError as error:
        return None, f"is not a GPU index: {error.problem}", False
    if index is None:
        if token.startswith("-"):
            return None, "is a negative index", False
        return None, "is neither a GPU index nor a GPU-/MIG- UUID", False
    physical = devices.physical
    if index >= len(physical):
        count = len(physical)
        return None, f"is out of range (the machine has {count} GPU{'s' if count != 1 else ''})", False
    return {**physical[index], "physical_position": index}, "", False


def _mig(token: str, devices: _Devices) -> tuple[dict[str, Any] | None, str, bool]:
    """A MIG device as the process sees it: its parent's model and capability, its own memory."""
    legacy = re.match(_LEGACY_MIG, token)
    if legacy:
        try:
            ids = (parse_whole(legacy.group(2), token), parse_whole(legacy.group(3), token))
        except InputError as error:
            return None, f"is not a MIG device name: {error.problem}", False
        index = devices.legacy.get(ids)
        found = index.find(legacy.group(1)) if index is not None else None
        if found is not None and found[0] is not None:
            return {**found[0]["device"], "physical_position": found[0]["physical_position"]}, "", False
        if devices.mig_unlisted:
            return None, "could not be checked: the facts list no MIG devices", True
        return None, "matches no MIG device on this machine", False
    if devices.mig_unlisted:
        return None, "could not be checked: the facts list no MIG devices", True
    return devices.migs.find(token)


def _mig_as_gpu(parent: dict[str, Any], device: dict[str, Any]) -> dict[str, Any]:
    profile = device.get("profile")
    return {
        **{
            key: parent.get(key)
            for key in ("vendor", "name", "compute_capability", "pci_device_id", "pci_bus_id")
        },
        "index": parent.get("index"),
        "mig": True,
        "mig_device": True,
        "mig_profile": profile,
        "memory_mib": device.get("memory_mib"),
        "uuid": device.get("uuid"),
        "gpu_instance_id": device.get("gpu_instance_id"),
        "compute_instance_id": device.get("compute_instance_id"),
        "label_suffix": f"MIG {profile}" if profile else "MIG device",
    }


def mig_instances(seen: Visibility) -> tuple[list[str], str]:
    """The MIG devices the process can see, described, and the one CUDA will give it.

    CUDA 11/R450 and 12/R525 enumerate a single MIG device per process (NVIDIA MIG user guide,
    'CUDA Device Enumeration'); of those CUDA_VISIBLE_DEVICES lists, the first (pytorch#92315:
    with two listed, device_count() is 1 and cuda:0 works). Without the variable, every MIG
    device of the visible GPUs in MIG mode is a candidate, in nvidia-smi -L order.
    """
    listed = [gpu for gpu in seen.gpus if gpu.get("mig_device")]
    if listed:
        return [
            _mig_text(gpu) for gpu in listed
        ], f"{_mig_text(listed[0])}, the first listed in {CUDA_VISIBLE_DEVICES}"
    candidates = [
        _mig_text(_mig_as_gpu(gpu, device))
        for gpu in seen.gpus
        if gpu.get("mig")
        for device in gpu.get("mig_devices") or []
        if isinstance(device, dict)
    ]
    used = f"the one CUDA enumerates first (nvidia-smi -L lists {candidates[0]} first)" if candidates else ""
    return candidates, used


def _mig_text(device: dict[str, Any]) -> str:
    where = f"GPU {device.get('index')}" if isinstance(device.get("index"), int) else "its GPU"
    ids = [
        f"{name} {device[key]}"
        for key, name in (("gpu_instance_id", "GI"), ("compute_instance_id", "CI"))
        if isinstance(device.get(key), int)
    ]
    uuid = device.get("uuid")
    return (
        f"{describe(device)} ({where}{', ' + ' '.join(ids) if ids else ''}{', ' + str(uuid) if uuid else ''})"
    )


def describe(gpu: dict[str, Any]) -> str:
    """One visible device in words: its model, and the MIG profile when it is a MIG device."""
    name = str(gpu.get("name") or "unknown GPU")
    return f"{name} {gpu['label_suffix']}" if gpu.get("label_suffix") else name


def available(physical: tuple[dict[str, Any], ...]) -> str:
    """The identifiers a user can list: `0 (NVIDIA ..., GPU-...)`, MIG devices with their UUIDs."""
    parts = []
    for position, gpu in enumerate(physical):
        uuid = gpu.get("uuid")
        text = f"{position} ({gpu.get('name') or 'unknown GPU'}{', ' + uuid if uuid else ''})"
        migs = [str(d["uuid"]) for d in gpu.get("mig_devices") or [] if isinstance(d, dict) and d.get("uuid")]
        if migs:
            text += " with MIG devices " + ", ".join(migs)
        parts.append(text)
    return "; ".join(parts)


def arch_list_missing(arch_list: str, capabilities: list[str]) -> list[str]:
    """Compute capabilities TORCH_CUDA_ARCH_LIST ("8.0;8.6+PTX", "7.5 8.0") builds no code for.

    An entry builds SASS for that capability; `+PTX` adds PTX, which the driver compiles for
    any newer GPU (PyTorch, torch/utils/cpp_extension.py, _get_cuda_arch_flags).
    """
    named: set[tuple[int, ...]] = set()
    ptx: list[tuple[int, ...]] = []
    for item in re.split(r"[;\s,]+", arch_list):
        version = _capability(item.removesuffix("+PTX"))
        if version is None:
            continue
        named.add(version)
        if item.endswith("+PTX"):
            ptx.append(version)
    lowest_ptx = min(ptx, default=None)  # PTX for the lowest covers every newer GPU
    missing = []
    for capability in capabilities:
        version = _capability(capability)
        if version is not None and version not in named and not (lowest_ptx and lowest_ptx <= version):
            missing.append(capability)
    return missing


def _capability(text: str) -> tuple[int, ...] | None:
    match = re.fullmatch(r"([0-9]+)\.([0-9]+)[a-z]?", text.strip())
    if not match:
        return None
    major, minor = whole_or_none(match.group(1)), whole_or_none(match.group(2))
    return (major, minor) if major is not None and minor is not None else None


def fraction(text: Any) -> float | None:
    """XLA_PYTHON_CLIENT_MEM_FRACTION as a number (-1.0 when it is not one; None when unset)."""
    if not isinstance(text, str):
        return None
    try:
        return float(text)
    except ValueError:
        return -1.0
