"""Reads the knowledge tables in rules/knowledge/ (TOML data; no advice lives in Python)."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

from hwcheck.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def rules_dir() -> Path:
    """The shipped rules/ folder: inside the wheel, or at the top of a source checkout."""
    packaged = Path(__file__).parent / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent / "rules"


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file, raising InputError with the file and the parser's complaint."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(path, f"malformed TOML: {error}") from None


@cache
def load(name: str) -> dict[str, Any]:
    """The knowledge table rules/knowledge/NAME.toml."""
    return read_toml(rules_dir() / "knowledge" / f"{name}.toml")
