"""The README's examples run as written.

Fenced blocks marked ```toml file=NAME are written to a scratch folder; each `$ ` line of a
```console block runs there (with the checkout's tests/ beside it), and every line the
README shows under it must appear in what the command printed. A ```python run block is
executed as a script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(match[1], match[2].strip(), match[3]) for match in FENCE.finditer(text)]


def _files() -> dict[str, str]:
    files = {}
    for _language, info, body in _blocks():
        name = dict(item.partition("=")[::2] for item in info.split()).get("file")
        if name:
            files[name] = body
    return files


def _console_examples() -> list[tuple[str, list[str]]]:
    examples: list[tuple[str, list[str]]] = []
    for language, _info, body in _blocks():
        if language != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], []))
            elif examples and line.strip():
                examples[-1][1].append(line.rstrip())
    return examples


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    for name, body in _files().items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    return tmp_path


def _environment() -> dict[str, str]:
    # `hwcheck` as a newcomer types it: the script installed beside this interpreter.
    path = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    return {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}


def test_the_readme_has_tested_examples() -> None:
    assert len(_console_examples()) >= 2
    assert "site.toml" in _files()


@pytest.mark.parametrize("command, shown", _console_examples(), ids=lambda value: str(value)[:60])
def test_console_example_prints_what_the_readme_shows(scratch: Path, command: str, shown: list[str]) -> None:
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=scratch,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    printed = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
    for line in shown:
        assert line in printed, f"{command!r} did not print {line!r}; it printed:\n" + "\n".join(printed)
    if any(line.startswith("hwcheck: error:") for line in shown):
        assert result.returncode == 2
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "source", [body for language, info, body in _blocks() if language == "python" and "run" in info.split()]
)
def test_python_example_runs(scratch: Path, source: str) -> None:
    script = scratch / "example.py"
    script.write_text(source, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=scratch,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()
