"""The layers of docs/architecture.md, enforced from the code's own imports.

Every `import` and `from ... import` in hwcheck/ counts, at module level, inside functions and
under TYPE_CHECKING alike: a lazy import up the layers is still an arrow up.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "hwcheck"

# Bottom first. A module may import its own layer and the layers below it, never one above.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("hwcheck.base",)),
    ("facts", ("hwcheck.facts",)),
    ("probes", ("hwcheck.probes",)),
    ("knowledge", ("hwcheck.knowledge",)),
    ("devices", ("hwcheck.devices",)),
    ("engine", ("hwcheck.engine",)),
    ("recommendation", ("hwcheck.recommendation",)),
    ("emit/render", ("hwcheck.emit", "hwcheck.render")),
    ("bench/inventory", ("hwcheck.measure", "hwcheck.inventory")),
    ("commands/CLI/API", ("hwcheck.commands", "hwcheck.cli", "hwcheck.__main__", "hwcheck")),
)
MAX_LINES = 450


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    """The index of the layer holding `module` (the longest matching prefix wins)."""
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and docs/architecture.md"
    return best


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every hwcheck module `path` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            modules = [f"{target}.{alias.name}" for alias in node.names]
            # `from hwcheck import knowledge` imports the module hwcheck.knowledge; the root package
            # itself runs for any submodule import and counts only when a name is taken from it.
            if target != "hwcheck" or not all(known_module(name) for name in modules):
                found.append((node.lineno, target))
            found.extend((node.lineno, name) for name in modules)
    return [(line, name) for line, name in found if name == "hwcheck" or name.startswith("hwcheck.")]


def known_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (ROOT / relative).with_suffix(".py").is_file() or (ROOT / relative / "__init__.py").is_file()


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_imports_a_layer_above_its_own():
    arrows_up = []
    for path in sources():
        importer = module_name(path)
        own = layer_of(importer)
        for line, name in imported_modules(path):
            if not known_module(name):
                continue  # `from hwcheck.x import some_function`: the module itself is counted
            if layer_of(name) > own:
                arrows_up.append(
                    f"{path.relative_to(ROOT)}:{line}: {importer} ({LAYERS[own][0]}) imports "
                    f"{name} ({LAYERS[layer_of(name)][0]})"
                )
    assert not arrows_up, "imports pointing up the layers:\n" + "\n".join(arrows_up)


def test_the_contract_check_catches_an_arrow_up(tmp_path):
    # The walk itself must see a lazy import inside a function, the way a regression would add one.
    probe = tmp_path / "hwcheck" / "probes" / "sneaky.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from hwcheck.engine import build_context\n    from . import gpu\n")
    names = [name for _, name in imported_modules(probe, tmp_path)]
    assert "hwcheck.engine" in names and layer_of("hwcheck.engine") > layer_of("hwcheck.probes.sneaky")
    assert "hwcheck.probes.gpu" in names  # a sibling module, resolved from the relative import


@pytest.mark.parametrize("prefix", [prefix for _, prefixes in LAYERS for prefix in prefixes])
def test_every_layer_in_the_contract_exists(prefix):
    assert known_module(prefix), f"{prefix} is in LAYERS but not in hwcheck/"


def test_every_layer_is_named_in_the_architecture_page():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.partition("# Architecture")[2].partition("\n## ")[0]
    assert section, "docs/architecture.md has no Architecture section"
    for folder in sorted({p.relative_to(PACKAGE).parts[0] for p in PACKAGE.iterdir() if p.is_dir()}):
        if folder.startswith("__"):
            continue
        assert f"hwcheck/{folder}/" in section, (
            f"docs/architecture.md does not name hwcheck/{folder}/ before its first subsection"
        )


def test_no_module_swaps_its_class():
    swapped = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"__class__\s*=", line)
    ]
    assert not swapped


def test_no_module_is_longer_than_the_limit():
    long = {
        str(path.relative_to(ROOT)): count
        for path in sources()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"longer than {MAX_LINES} lines: {long}"


def test_hwcheck_bench_stays_a_plain_function_after_its_modules_load():
    import types

    import hwcheck
    import hwcheck.measure.runner  # noqa: F401  a submodule import binds hwcheck.measure, not .bench

    assert isinstance(hwcheck.bench, types.FunctionType)


# The vendors the devices layer knows, and the words for their runtimes and chips.
VENDOR_WORDS = (
    "nvidia",
    "amd",
    "rocm",
    "apple",
    "mps",
    "intel",
    "xpu",
    "tpu",
    "tegra",
    "jetson",
    "gaudi",
    "ascend",
)


def test_the_engine_names_no_vendor() -> None:
    """The engine loops over hwcheck.devices: no engine module is a vendor's or imports one's module."""
    vendor_modules = {f"hwcheck.devices.{path.stem}" for path in (PACKAGE / "devices").glob("*.py")}
    vendor_modules -= {"hwcheck.devices.__init__", "hwcheck.devices.record"}
    found = []
    for path in sorted((PACKAGE / "engine").glob("*.py")):
        words = set(re.split(r"[^a-z0-9]+", path.stem.lower()))
        # A vendor's runtime names a module as much as the vendor does: CUDA's checks are NVIDIA's.
        found.extend(f"{path.name}: named after {word}" for word in (*VENDOR_WORDS, "cuda") if word in words)
        found.extend(
            f"{path.name}:{line}: imports {module}"
            for line, module in imported_modules(path)
            if any(module == name or module.startswith(name + ".") for name in vendor_modules)
        )
    assert not found, "\n".join(found)


def test_only_the_engine_builds_the_rule_context() -> None:
    """Outside the engine, the devices a process sees come from hwcheck.devices (engine/seen.py),
    the advice from the recommendation: nothing else builds the rule variables itself."""
    found = []
    for path in sources():
        if module_name(path).startswith("hwcheck.engine"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hwcheck.engine"):
                named = {alias.name for alias in node.names}
                if "build_context" in named or node.module == "hwcheck.engine.context":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import):
                found.extend(
                    f"{path.relative_to(ROOT)}:{node.lineno}"
                    for alias in node.names
                    if alias.name == "hwcheck.engine.context"
                )
            elif isinstance(node, ast.Attribute) and node.attr == "build_context":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "build_context outside the engine: " + ", ".join(found)


# Circles left to break, each by whoever owns those modules: none is left, and none may come.
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()


def import_circles() -> list[frozenset[str]]:
    """The modules that import each other round a circle (strongly connected, lazy imports too)."""
    graph = {module_name(path): set() for path in sources()}
    for path in sources():
        own = module_name(path)
        graph[own] = {name for _, name in imported_modules(path) if name in graph and name != own}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            members = {stack.pop()}
            while module not in members:
                members.add(stack.pop())
            if len(members) > 1:
                circles.append(frozenset(members))

    for module in graph:
        if module not in index:
            visit(module)
    return circles


def test_no_new_import_circle() -> None:
    """No module imports one that imports it back, but the known circles (which may only shrink)."""
    new = [
        sorted(circle) for circle in import_circles() if not any(circle <= known for known in KNOWN_CIRCLES)
    ]
    assert not new, f"import circles: {new}"
