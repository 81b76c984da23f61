"""Loads the CEL (Common Expression Language) evaluator that rule conditions are written in."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def cel() -> ModuleType:
    """The compiled CEL extension of common-expression-language (compile, Context, Program)."""
    # `import cel` also imports the package's command line (typer, prompt_toolkit):
    # ~130 ms, more than doctor's whole budget. The Rust extension alone loads in
    # ~10 ms, so it is loaded directly; if the package layout ever changes, the
    # plain import still works, only slower.
    spec = importlib.util.find_spec("cel")
    locations = spec.submodule_search_locations if spec else None
    if locations:
        for location in locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(location) / f"cel{suffix}"
                if path.is_file():
                    loader = importlib.machinery.ExtensionFileLoader("cel.cel", str(path))
                    module_spec = importlib.util.spec_from_loader("cel.cel", loader)
                    if module_spec is None:
                        break
                    module = importlib.util.module_from_spec(module_spec)
                    loader.exec_module(module)
                    return module
    import cel as package

    return package
