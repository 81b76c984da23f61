"""Vendor ids, wheel and plugin names, CPU families and package indexes live once, in rules/knowledge.

The code asks the tables (through hwcheck.knowledge, or base.tables.load below the knowledge
layer); a value typed into the code again would drift from its cited row unseen.
"""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT
from hwcheck import knowledge
from hwcheck.base.tables import load
from hwcheck.probes import pci
from hwcheck.probes.nvidia.wheels import is_nvidia_wheel, jax_cuda_plugins

# Spellings only a table may hold: PCI vendor ids, NVIDIA's and JAX's wheel names, the PyTorch
# wheel index, the machine names of the CPU families.
TABLE_ONLY = (
    "0x10de",
    "0x1002",
    "0x8086",
    "nvidia-cudnn",
    "nvidia-cublas",
    "nvidia-cusparse",
    "nvidia-nccl",
    "nvidia-cuda-runtime",
    "jax-cuda12",
    "jax-cuda13",
    "download.pytorch.org",
    "armv8l",
)


def _code_strings(path):
    """The string literals of a module that are not docstrings (comments are not in the tree)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_module_spells_what_a_knowledge_table_holds():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {word}"
        for path in sorted((ROOT / "hwcheck").rglob("*.py"))
        for line, text in _code_strings(path)
        for word in TABLE_ONLY
        if word in text.lower()
    ]
    assert found == []


def test_the_pci_probe_looks_for_the_tables_vendors():
    ids = load("vendors")["pci_vendor_ids"]
    assert pci.vendors() == {
        ids["nvidia"]: "nvidia",
        ids["amd"]: "amd",
        load("tpu")["pci"]["vendor_id"]: "google",
    }
    assert knowledge.pci_vendor_id("intel") == ids["intel"] and knowledge.pci_vendor_id("matrox") is None


@pytest.mark.parametrize(
    ("machine", "family"),
    [
        ("x86_64", "x86"),
        ("AMD64", "x86"),
        ("i686", "x86"),
        ("aarch64", "arm"),
        ("arm64", "arm"),
        ("ppc64le", ""),
    ],
)
def test_cpu_families_come_from_the_table(machine, family):
    assert knowledge.arch_family(machine) == family


def test_wheel_and_plugin_names_come_from_the_tables():
    assert knowledge.nvidia_wheel("cudnn") == load("nvidia")["pip_wheels"]["library"]["cudnn"]["name"]
    assert is_nvidia_wheel("nvidia-cudnn-cu12", "cudnn") and is_nvidia_wheel("nvidia-cublas", "cublas")
    assert not is_nvidia_wheel("nvidia-cudnn-frontend", "cudnn")
    majors = [major for major, _, _ in jax_cuda_plugins()]
    assert majors == sorted(majors, reverse=True)  # newest CUDA first: the probe prefers it
    assert all(
        plugin.endswith("-plugin") and pjrt.endswith("-pjrt") for _, plugin, pjrt in jax_cuda_plugins()
    )


def test_the_rocm_install_reads_the_torch_index_from_the_table():
    template = load("torch")["install"]["command"]
    index = template.split("--index-url ", 1)[1].replace("{variant}", "rocm6.2.4")
    assert knowledge.torch_install("2.6.0", "rocm6.2.4") == f"pip install torch==2.6.0 --index-url {index}"
    assert knowledge.torch_install(None, "rocmX.Y").startswith("pip install torch --index-url ")
