"""Shared test helpers: run the CLI in a subprocess, find fixtures."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent


def run_hwcheck(
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m hwcheck ARGS` the way a user would, capturing its output."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "hwcheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        input=input,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def fixtures() -> Path:
    """The tests/fixtures folder."""
    return FIXTURES


# Parsed-TOML cache of the test run, kept out of the user's ~/.cache; subprocesses inherit it.
os.environ.setdefault("HWCHECK_CACHE_DIR", tempfile.mkdtemp(prefix="hwcheck-test-cache-"))

# A pytest-xdist worker starts with COLUMNS=80 and LINES=24 that no user set (GNU readline exports
# them when it starts); the CLI would wrap at 80 where the tests expect a pipe's unwrapped output.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty cache folder of the test's own (HWCHECK_CACHE_DIR), not yet created."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(directory))
    return directory


def pytest_addoption(parser: pytest.Parser) -> None:
    """--update-golden: rewrite the golden files (tests/golden/) instead of comparing with them."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="regenerate tests/golden/ from the current code instead of comparing with it",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the `host` marker (see tests/host.py)."""
    config.addinivalue_line(
        "markers", "host(*requirements): run only on a host that has them (tests/host.py REQUIREMENTS)"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test whose `host` requirements this machine does not meet, saying which."""
    import host

    for marker in item.iter_markers(name="host"):
        reason = host.unmet(marker.args)
        if reason:
            pytest.skip(f"host: {reason}")
