"""Shell commands as data: an argument list and environment assignments, rendered with quoting.

A remedy a user pastes into a shell holds values from outside (a version from a METADATA
file, a directory from LD_LIBRARY_PATH, TORCH_CUDA_ARCH_LIST). Spliced into command text,
`2.5.1;touch x` or `$(...)` runs; a folder with a space splits into two words. Every command
hwcheck prints is therefore built here: each argument is one word, quoted for POSIX sh
(shlex.quote: single quotes, which nothing inside can end or expand), and an assignment's
name must be a variable name.
"""

from __future__ import annotations

import re
import shlex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def shell_word(value: Any) -> str:
    """`value` as one POSIX shell word that means exactly its text (quoted only where needed)."""
    return shlex.quote(value if isinstance(value, str) else str(value))


def _variable(name: str) -> str:
    if not isinstance(name, str) or not _VARIABLE_NAME.fullmatch(name):
        raise ValueError(f"not a shell variable name: {name!r}")
    return name


def shell_command(arguments: Iterable[Any], environment: Mapping[str, Any] | None = None) -> str:
    """The command line that runs `arguments` (each one word) with `environment` assigned before it."""
    assignments = [f"{_variable(name)}={shell_word(value)}" for name, value in (environment or {}).items()]
    return " ".join([*assignments, *(shell_word(argument) for argument in arguments)])


def export_command(name: str, value: Any) -> str:
    """`export NAME=value` with the value quoted as one word."""
    return f"export {_variable(name)}={shell_word(value)}"


def command_from_template(template: str, **values: Any) -> str:
    """A command from a trusted template ("pip install torch=={version} --index-url URL{variant}").

    The template (hwcheck's own knowledge tables) is split into words first; each word's
    {placeholders} are then filled and the word quoted, so a value can never add a word.
    """
    words = shlex.split(template)
    return shell_command(word.format_map(_Values(values)) for word in words)


class _Values(dict):
    """format_map's mapping: values as text; an unknown {name} stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"

    def __getitem__(self, key: str) -> str:
        value = super().__getitem__(key) if key in self else self.__missing__(key)
        return value if isinstance(value, str) else str(value)
