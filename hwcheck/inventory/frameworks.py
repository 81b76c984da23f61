"""Whose policy an inventory states: the frameworks (and trainers) its classes were advised for, named."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hwcheck.inventory.merge import Inventory
    from hwcheck.inventory.node_class import NodeClass


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


def framework_build(node_class: NodeClass) -> str:
    """The build of the class's own framework its nodes report: "PyTorch 2.4.1+cu124", "TF 2.16.1
    CUDA 12.3", "JAX not installed"; the versions found, in order, when the nodes differ."""
    from hwcheck.engine.outcome import runtime_framework

    family = runtime_framework(node_class.framework)
    if family in ("tensorflow", "keras"):
        return "TF " + node_class.hardware.tensorflow_text()
    label = {"torch": "PyTorch", "jax": "JAX"}.get(family, family)
    return f"{label} {installed_versions(node_class, family)}"


def installed_versions(node_class: NodeClass, component: str) -> str:
    """The versions of `component` ("torch", "jax", "keras") the class's nodes report, in order;
    "(version unknown)" where it is installed without one read, as doctor says; else "not installed"."""
    versions = sorted(
        {version for node in node_class.nodes for name, version in node.software if name == component}
    )
    if versions:
        return ", ".join(versions)
    if any(component in node.frameworks for node in node_class.nodes):
        return "(version unknown)"
    return "not installed"
