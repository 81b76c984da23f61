"""What CPU flags mean for training: rules/knowledge/cpu_features.toml."""

from __future__ import annotations

from functools import cache

from hwcheck.base.tables import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


@cache
def _cpu_flags() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in load("cpu_features")["flag"]}


def cpu_flags(arch_family: str | None = None) -> tuple[dict[str, Any], ...]:
    """The flags that change precision advice (every row of the table), in table order; only
    those of `arch_family` ("x86" or "arm") when given."""
    return tuple(dict(row) for row in _cpu_flags().values() if arch_family in (None, row["arch"]))


def cpu_feature(flag: str) -> dict[str, Any] | None:
    """What a /proc/cpuinfo flag means for training, or None for flags the table does not know."""
    row = _cpu_flags().get(flag.strip().lower()) if isinstance(flag, str) else None
    return dict(row) if row else None


@cache
def _bf16_classes() -> tuple[dict[str, Any], ...]:
    return tuple(load("cpu_features")["bf16_class"])


def bf16_class(flags: Iterable[str], *, arch_family: str) -> dict[str, Any]:
    """The CPU's bfloat16 class row: the first whose flags are all present.

    `arch_family` is "x86", "arm" or "" (unknown). The kernel is no part of the class: distributions
    backport AMX support to kernels older than mainline's 5.16, so an old release only warns.
    """
    present = {flag.strip().lower() for flag in flags if isinstance(flag, str)}
    for row in _bf16_classes():
        if row["arch"] not in ("any", arch_family) or not set(row["flags"]) <= present:
            continue
        return dict(row)
    return dict(_bf16_classes()[-1])


def fast_bf16_flag(flags: Iterable[str], *, arch_family: str = "x86") -> str | None:
    """The flag of the CPU's class when the table marks it `fast_bf16_training` ("amx_bf16"), else None."""
    row = bf16_class(flags, arch_family=arch_family)
    return row["flags"][0] if row.get("fast_bf16_training") else None


def kernel_floor(name: str) -> str | None:
    """The Linux release a class needs (AMX: 5.16), or None."""
    return next((row.get("min_linux_kernel") for row in _bf16_classes() if row["name"] == name), None)


@cache
def _arch_families() -> dict[str, str]:
    return {
        machine: row["name"] for row in load("cpu_features")["arch_family"] for machine in row["machines"]
    }


def arch_family(machine: str | None, *, kernel_only: bool = False) -> str:
    """The CPU family ("x86", "arm") of a machine name (uname -m, platform.machine()), else "".

    `kernel_only`: only for the name the Linux kernel gives the family's 64-bit member (x86_64,
    aarch64), the one the CPU probe records with flags from /proc/cpuinfo.
    """
    name = str(machine or "").lower()
    if kernel_only:
        return next((row["name"] for row in load("cpu_features")["arch_family"] if row["kernel"] == name), "")
    return _arch_families().get(name, "")
