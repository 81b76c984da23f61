"""Whose policy an inventory states: the frameworks (and trainers) its classes were advised for, named."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hwcheck.inventory.merge import Inventory


def framework_label(framework: str) -> str:
    """A framework (or trainer) as its users name it: "PyTorch", "PyTorch Lightning"."""
    from hwcheck.engine.native import labels
    from hwcheck.engine.outcome import FRAMEWORKS, runtime_framework

    if framework not in FRAMEWORKS:
        return framework
    return labels(framework, runtime_framework(framework))["framework_label"]


def cluster_frameworks(inventory: Inventory) -> str:
    """Whose policy the cluster's is: the frameworks its classes were advised for, named."""
    names = sorted({node_class.framework for node_class in inventory.classes})
    return ", ".join(framework_label(name) for name in names) or "no framework"
