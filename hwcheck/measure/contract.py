"""The user contract: a Python file defining make_step(policy) -> a zero-argument training step.

The parent only reads the file (exists, parses, binds make_step at top level); the child
process executes it, so a script's imports and crashes stay out of the parent.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwcheck.base.errors import InputError

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
# The framework a script is benched with when --framework is not given: the first it imports
# (Keras before TensorFlow and torch, whose Keras backend it may import too).
IMPORT_ORDER = ("keras", "tensorflow", "torch", "jax")
# Packages a file beside the script would stand in for: the script's folder comes first on sys.path.
SHADOWED = (*IMPORT_ORDER, "optax", "numpy")
ENTRY = "make_step"
MAX_SCRIPT_BYTES = 4 * 1024 * 1024


def check_script(path: str | Path) -> bool | None:
    """Read and parse the script without running it.

    Returns whether make_step accepts `loss_scaling` (None when make_step is not a plain
    function definition, so only running it can tell); raises InputError for a missing or
    unreadable file, a syntax error or no top-level make_step.
    """
    from hwcheck.base.inputs import read_text

    text = read_text(path, expected="a Python script defining make_step", max_bytes=MAX_SCRIPT_BYTES)
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as error:
        raise InputError(path, f"syntax error at line {error.lineno}: {error.msg}") from None
    except ValueError as error:  # null bytes
        raise InputError(path, f"not a Python script: {error}") from None
    found: bool | None = None
    bound = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == ENTRY:
            bound = True
            arguments = node.args
            names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
            found = "loss_scaling" in names or arguments.kwarg is not None
        elif _binds(node, ENTRY):
            bound, found = True, None
    if not bound:
        raise InputError(path, f"defines no top-level {ENTRY}(policy) function")
    folder = Path(path).resolve().parent
    for package in SHADOWED:
        for shadow in (folder / f"{package}.py", folder / package / "__init__.py"):
            if shadow.is_file():
                raise InputError(
                    path, f"{shadow} would be imported instead of the {package} package; rename it"
                )
    return found


def script_framework(path: str | Path) -> str | None:
    """The framework a script imports at top level (IMPORT_ORDER decides between several), or None."""
    from hwcheck.base.inputs import read_text

    text = read_text(path, expected="a Python script defining make_step", max_bytes=MAX_SCRIPT_BYTES)
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError):
        return None
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    return next((name for name in IMPORT_ORDER if name in imported), None)


def load_make_step(path: str | Path) -> Callable[..., Any]:
    """Execute the script as a module and return its make_step (raises InputError if unusable)."""
    import importlib.util

    path = Path(path).resolve()
    specification = importlib.util.spec_from_file_location("hwcheck_bench_script", path)
    if specification is None or specification.loader is None:
        raise InputError(path, "cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(specification)
    sys.path.insert(0, str(path.parent))  # the script's own helper modules import as they would
    sys.modules[specification.name] = module
    try:
        specification.loader.exec_module(module)
    except SyntaxError as error:
        raise InputError(path, f"syntax error at line {error.lineno}: {error.msg}") from None
    make_step = getattr(module, ENTRY, None)
    if make_step is None:
        raise InputError(path, f"defines no top-level {ENTRY}(policy) function")
    if not callable(make_step):
        raise InputError(path, f"{ENTRY} is not a function (found {type(make_step).__name__})")
    return make_step


def accepts_loss_scaling(make_step: Callable[..., Any]) -> bool:
    """Whether make_step takes a `loss_scaling` keyword (so float16 can run without scaling)."""
    try:
        parameters = inspect.signature(make_step).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == "loss_scaling" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


def _binds(node: ast.stmt, name: str) -> bool:
    """Whether a top-level statement other than a def binds `name` (assignment, import, class)."""
    if isinstance(node, ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Import | ast.ImportFrom):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)
