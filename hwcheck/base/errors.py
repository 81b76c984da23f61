"""The one error type for bad input: it carries the file and the problem."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os


class InputError(Exception):
    """A file or value given to hwcheck cannot be used; str() is the one-line message."""

    def __init__(self, source: str | os.PathLike[str], problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = str(source)
        self.problem = problem


class FactsError(InputError, ValueError):
    """A facts document given to the Python API breaks the facts schema."""
