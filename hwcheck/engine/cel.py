"""Loads the CEL (Common Expression Language) evaluator that rule conditions are written in."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from hwcheck.base.shell import export_command, shell_command, shell_word
from hwcheck.base.versions import major, major_minor, version_at_least, version_less


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


def _shell_command(*arguments: Any) -> str:
    """shell_command(['pip', 'install', x]) or shell_command('pip', 'install', x) in a template."""
    if len(arguments) == 1 and isinstance(arguments[0], list):
        return shell_command(arguments[0])
    return shell_command(arguments)


# Functions rule conditions may call besides CEL's own.
FUNCTIONS = {
    "version_less": version_less,
    "version_at_least": version_at_least,
    "major": major,
    "major_minor": major_minor,
    # Remedies build commands with these, never by splicing a value into command text.
    "shell_command": _shell_command,
    "shell_word": shell_word,
    "shell_export": export_command,
}
