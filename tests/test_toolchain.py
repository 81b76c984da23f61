"""The toolchain is part of the test command: lint, formatting and types fail the suite like a test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def _tool(name: str) -> str:
    # The tools are in the dev extra, installed beside this interpreter.
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return found


def _run(*command: str) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}"


# The project's own Python: a script a user writes into the checkout (a docs example's train.py)
# is theirs, not the project's, and must not fail the suite.
PROJECT_PYTHON = ("hwcheck", "tests", "benchmarks", "docs")


def test_ruff_check_is_clean() -> None:
    _run(_tool("ruff"), "check", *PROJECT_PYTHON)


def test_ruff_format_is_clean() -> None:
    _run(_tool("ruff"), "format", "--check", *PROJECT_PYTHON)


def test_a_users_script_in_the_checkout_is_not_the_projects(tmp_path) -> None:
    # A badly formatted file at the top of the checkout is outside what the two tests above read.
    stray = ROOT / "hwcheck-stray-user-script.py"
    stray.write_text("x  =  1\n")
    try:
        result = subprocess.run(
            [_tool("ruff"), "format", "--check", *PROJECT_PYTHON],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert stray.name not in result.stdout + result.stderr
    finally:
        stray.unlink()


def test_mypy_is_clean() -> None:
    _run(_tool("mypy"))
