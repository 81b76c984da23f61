"""What every vendor's plug-in says about a device, and what a plug-in is.

A `Device` is one device the training process will see, in its own numbering, after the
vendor's visibility variables (CUDA_VISIBLE_DEVICES, ROCR/HIP_VISIBLE_DEVICES, ...) are
applied. Commands that plan for "the GPUs" (fit, config, nfd, inventory) read these records
and never a vendor's facts. Features are three-valued: True, False, or None when unknown.
"""

from __future__ import annotations

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MIB = 2**20


# NamedTuples rather than frozen dataclasses: importing dataclasses costs doctor ~7 ms.
class Device(NamedTuple):
    """One device the process sees: who makes it, what it is, its memory and what it computes in."""

    vendor: str  # "nvidia", "amd", "apple", "intel", "google", or an accelerator family's vendor key
    plugin: str  # the plug-in that found it (PLUGINS' name)
    number: int  # its index in the process (cuda:0, xpu:0, ...); `index` is a tuple method
    name: str  # the model, as the facts name it ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X")
    label: str  # the name as messages show it (with its capability or target)
    memory_bytes: int | None  # memory one device may use (unified: the total it shares); None unknown
    unified: bool = False  # its memory is the host's (Apple silicon, Jetson): shared, not its own
    architecture: str | None = None  # compute capability ("9.0") or target ("gfx942")
    family: str | None = None  # the architecture's family ("Hopper", "CDNA3")
    runtime: str = ""  # what drives it: "cuda", "rocm", "mps", "xpu", "tpu", ...
    float16: bool | None = None
    bfloat16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None
    mig: bool = False  # a MIG slice (or a GPU in MIG mode) of an NVIDIA GPU
    product_id: str | None = None  # the PCI device id ("0x74a1") where the facts give it
    kind: str = "gpu"  # "gpu", or "tpu" / "accelerator": GPU labels (nfd) name GPUs only


class Asked(NamedTuple):
    """What a plug-in's rule variables are built from: the facts and the runtime that will run."""

    facts: dict[str, Any]
    backend: str  # the runtime framework (torch, tensorflow, jax)
    frameworks: dict[str, Any]  # the facts' frameworks section
    environment: dict[str, Any]  # the process environment as the facts recorded it
    operating_system: dict[str, Any]  # the facts' os section


class Plugin(NamedTuple):
    """A vendor family: its visible devices, its rule namespaces, its doctor row."""

    name: str
    # facts, runtime framework (None: any) -> the devices the process sees
    visible: Callable[[dict[str, Any], str | None], list[Device]]
    # -> {namespace: variables}; every key present, unknown values null, false or empty
    variables: Callable[[Asked], dict[str, Any]] | None = None
    # facts -> facts with what the plug-in infers added (a Jetson's integrated GPU in `gpus`)
    complete: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # facts -> the doctor report's line for this vendor ("" when it has nothing to say)
    doctor_row: Callable[[dict[str, Any]], str] | None = None
    doctor_label: str = ""  # the row's label in the doctor report (a built-in vendor's: its probe's)
    # facts, the framework variables (tf, torch, jax), runtime framework -> {namespace: variables}
    # comparing the framework's build with the vendor's runtime (NVIDIA: `compat`, CUDA and driver)
    compat: Callable[[dict[str, Any], dict[str, Any], str], dict[str, Any]] | None = None
    # A built-in vendor's row is its probe's: drawn where the vendor has something to say.


def counted(items: list[str]) -> list[str]:
    """The items in first-seen order, a repeated one said once with its count ("8× AMD Instinct MI300X")."""
    counts = dict.fromkeys(items, 0)
    for item in items:
        counts[item] += 1
    return [f"{count}× {item}" if count > 1 else item for item, count in counts.items()]


def mebibytes(value: Any) -> int | None:
    """Bytes from a facts field in MiB (a positive whole number), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value * MIB


def vendor_gpus(facts: dict[str, Any], vendor: str) -> list[dict[str, Any]]:
    """The facts' GPUs of one vendor, as listed."""
    return [g for g in facts.get("gpus") or [] if isinstance(g, dict) and g.get("vendor") == vendor]
