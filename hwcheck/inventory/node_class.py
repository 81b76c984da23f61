"""A class of nodes in an inventory: nodes with the same hardware and the same recommendation."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwcheck.inventory.classes import HardwareClass
from hwcheck.inventory.reports import NodeReport


@dataclass
class ClassFinding:
    """A finding as it occurs across the nodes of one class."""

    id: str
    severity: str
    message: str
    remedy: str | None
    nodes: int


@dataclass
class ClassSpeedup:
    """A measured speed-up over float32 in one class: the median over the nodes that measured it."""

    workload: str
    framework: str
    device: str
    variant: str
    speedup: float
    nodes: int


@dataclass
class NodeClass:
    """Nodes with the same hardware and the same recommendation."""

    id: str
    hardware: HardwareClass
    policy: str | None
    device: str | None
    loss_scaling: bool | None
    nodes: list[NodeReport]
    runs_well: tuple[str, ...]
    findings: list[ClassFinding]
    speedups: list[ClassSpeedup] = field(default_factory=list)
    # Whose policy it is: the framework (or trainer) the class's advice was written for.
    framework: str = "tensorflow"

    def has_errors(self) -> bool:
        """Whether the class's reports carry an error finding (a broken class, not a slow one)."""
        return any(finding.severity == "error" for finding in self.findings)

    def label(self) -> str:
        """E.g. "C2 (8× Tesla V100-SXM2-16GB)", noting error-level findings."""
        what = self.hardware.gpu_text() if self.hardware.gpus else self.hardware.cpu_text()
        if self.has_errors():
            what += ", has errors"
        return f"{self.id} ({what})"
