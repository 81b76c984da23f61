"""Version drift between nodes that train together: NCCL, driver, CUDA and framework versions.

Nodes of one distributed job run the same collectives and the same framework code on every
rank, and a difference between them fails late and obscurely: NCCL's maintainers ask first
whether the nodes of a hanging job run different NCCL versions (NVIDIA/nccl#354), two NCCL
releases may pick different algorithms for the same all-reduce and hang
(NVIDIA/nccl#1136), ranks on different PyTorch releases fail where the same release works
(open-mmlab/mmdetection#1089) and torch.distributed assumes one PyTorch version in a job
(pytorch/pytorch#174917, #175023); pytorch/pytorch#108212 asks for exactly this check of
driver and NCCL versions across nodes.

Who trains together: by default, the nodes with the same hardware (GPUs, CPU, TPU), which
the class table splits by driver, CUDA and TensorFlow build; or the job groups given with
`hwcheck inventory --group NAME=HOST,...`.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from hwcheck.inventory.software import COMPONENTS

if TYPE_CHECKING:
    from hwcheck.inventory.classes import HardwareClass
    from hwcheck.inventory.node_class import NodeClass

GROUP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_GROUP_PATTERNS = 4096
MAX_PATTERN = 256


@dataclass(frozen=True)
class JobGroup:
    """Nodes that train together, named on the command line: host names or * ? patterns."""

    name: str
    patterns: tuple[str, ...]

    def matches(self, node: str) -> bool:
        """Whether `node` (a host name) is one of the group's."""
        names, wildcards = _matcher(self.patterns)
        return node in names or bool(wildcards and wildcards.fullmatch(node))


@cache
def _matcher(patterns: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str] | None]:
    # Plain names by set lookup, patterns as one expression: a 4,096-host group against
    # 50,000 reports stays one pass. * and ? only: a Slurm host list such as gpu[01-04]
    # means a range, not a character set, so brackets are literal (expand it with
    # `scontrol show hostnames`).
    names = frozenset(p for p in patterns if "*" not in p and "?" not in p)
    wild = [p for p in patterns if p not in names]
    if not wild:
        return names, None
    expression = "|".join(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p) for p in wild
    )
    return names, re.compile(f"(?:{expression})", re.DOTALL)


@dataclass(frozen=True)
class VersionDrift:
    """One component whose version differs between the nodes of one group."""

    group: str  # "C1+C3" (same hardware) or a job group's name
    what: str  # the group in words: its hardware, or "job group"
    component: str
    versions: tuple[tuple[str, tuple[str, ...]], ...]  # version -> its nodes, most nodes first

    def describe(self, limit: int | None = None) -> str:
        """E.g. "C1+C2 (8× H100): NCCL 2.21.5 on gpu1, gpu2; 2.18.1 on gpu3"."""
        parts = []
        for version, nodes in self.versions:
            shown = nodes if limit is None else nodes[:limit]
            more = f" and {len(nodes) - len(shown)} more" if len(shown) < len(nodes) else ""
            parts.append(f"{version} on {', '.join(shown)}{more}")
        return f"{self.group} ({self.what}): {self.component} " + "; ".join(parts)


def job_group(text: str) -> JobGroup:
    """An argparse type: NAME=HOST[,HOST...], each host a name or a pattern with * and ?."""
    name, equals, listed = text.partition("=")
    if not equals or not GROUP_NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(
            f"expected NAME=HOST[,HOST...] with NAME of letters, digits, . _ - (at most 64), "
            f"not {text[:60]!r}"
        )
    patterns = tuple(part.strip() for part in listed.split(",") if part.strip())
    if not patterns:
        raise argparse.ArgumentTypeError(f"job group {name!r} names no host")
    if len(patterns) > MAX_GROUP_PATTERNS:
        raise argparse.ArgumentTypeError(f"job group {name!r} names more than {MAX_GROUP_PATTERNS} hosts")
    for pattern in patterns:
        if len(pattern) > MAX_PATTERN:
            raise argparse.ArgumentTypeError(
                f"job group {name!r}: a host longer than {MAX_PATTERN} characters: {pattern[:40]!r}..."
            )
    return JobGroup(name, patterns)


def hardware_only(hardware: HardwareClass) -> HardwareClass:
    """A class's hardware without its software: what nodes that can train together share."""
    return replace(
        hardware,
        driver=None,
        driver_cuda=None,
        cuda=None,
        tensorflow=None,
        tensorflow_cuda_build=None,
        tensorflow_cuda=None,
        tensorflow_cudnn=None,
    )


def find_drift(classes: list[NodeClass], groups: Iterable[JobGroup] = ()) -> list[VersionDrift]:
    """Components whose versions differ within a job group, or, without groups, within one hardware.

    A node without a component (no driver on a CPU node, no torch in the environment that
    wrote its report) is not counted: only versions that two nodes really report can disagree.
    """
    members: list[tuple[str, str, list[Any]]] = []
    groups = tuple(groups)
    if groups:
        nodes = [node for node_class in classes for node in node_class.nodes]
        for group in groups:
            members.append((group.name, "job group", [n for n in nodes if group.matches(n.name)]))
    else:
        by_hardware: dict[HardwareClass, list[NodeClass]] = defaultdict(list)
        for node_class in classes:
            by_hardware[hardware_only(node_class.hardware)].append(node_class)
        for hardware, sharing in by_hardware.items():
            label = "+".join(node_class.id for node_class in sharing)
            what = hardware.gpu_text() if hardware.gpus else hardware.cpu_text()
            members.append((label, what, [node for node_class in sharing for node in node_class.nodes]))
    found = []
    for label, what, nodes in members:
        versions: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for node in nodes:
            for component, version in node.software:
                versions[component][version].append(node.name)
        for component in COMPONENTS:
            if len(versions.get(component) or ()) > 1:
                ordered = sorted(versions[component].items(), key=lambda item: (-len(item[1]), item[0]))
                listed = tuple((version, tuple(sorted(names))) for version, names in ordered)
                found.append(VersionDrift(label, what, component, listed))
    return found


def unmatched(classes: list[NodeClass], groups: Iterable[JobGroup]) -> list[tuple[str, str]]:
    """(group, host or pattern) for each name in a job group that no merged report matches."""
    names = {node.name for node_class in classes for node in node_class.nodes}
    missing = []
    for group in groups:
        for pattern in group.patterns:
            if "*" in pattern or "?" in pattern:
                single = JobGroup(group.name, (pattern,))
                found = any(single.matches(name) for name in names)
            else:
                found = pattern in names
            if not found:
                missing.append((group.name, pattern))
    return missing
