"""Which files an inventory reads: files, directories (recursive *.json), globs, `-` for stdin."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from hwcheck.inventory.reports import Rejected

GLOB_CHARACTERS = frozenset("*?[")


def report_paths(arguments: Iterable[str], stdin: TextIO | None = None) -> Iterator[Path | Rejected]:
    """Each report file the arguments name, once, in order; a Rejected for a name that finds none.

    `-` reads more arguments from `stdin`, one per line (as `find ... | hwcheck inventory -`).
    """
    seen: set[str] = set()
    for argument in _with_stdin(arguments, stdin):
        for found in _expand(argument):
            if isinstance(found, Rejected):
                yield found
                continue
            key = os.path.normpath(os.path.abspath(found))
            if key not in seen:
                seen.add(key)
                yield found


def _with_stdin(arguments: Iterable[str], stdin: TextIO | None) -> Iterator[str]:
    for argument in arguments:
        if argument != "-":
            yield argument
        elif stdin is not None:
            yield from (line.strip() for line in stdin if line.strip())


def _expand(argument: str) -> Iterator[Path | Rejected]:
    path = Path(argument)
    if path.is_dir():
        found = list(_json_files(path))
        if not found:
            yield Rejected(argument, "directory holds no *.json reports")
        yield from found
    elif path.exists():
        yield path
    elif GLOB_CHARACTERS.intersection(argument):
        matches = sorted(glob.glob(argument, recursive=True))
        if not matches:
            yield Rejected(argument, "no file matches this pattern")
        for match in matches:
            yield from _expand(match) if os.path.isdir(match) else (Path(match),)
    else:
        yield Rejected(argument, "no such file or directory")


def _json_files(directory: Path) -> Iterator[Path]:
    # Dot files are skipped: `hwcheck report` writes through a ".NAME.*.tmp" file.
    for root, directories, files in os.walk(directory):
        directories[:] = sorted(d for d in directories if not d.startswith("."))
        for name in sorted(files):
            if name.lower().endswith(".json") and not name.startswith("."):
                yield Path(root, name)
