"""The README's examples run as written.

Fenced blocks marked ```toml file=NAME are written to a scratch folder; each `$ ` line of a
```console block runs there (with the checkout's tests/ beside it), and every line the
README shows under it must appear in what the command printed. A ```python run block is
executed as a script, as after the README's install (`pip install .`): the packages that
install does not bring are unimportable unless the block names them (```python run
requires=torch, with the README saying to install it).
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


# What the dev extra installs and `pip install .` does not.
NOT_IN_THE_INSTALL = (
    "keras",
    "tensorflow",
    "tf_keras",
    "torch",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numpy",
    "ray",
)
# None in sys.modules makes `import NAME` raise ImportError, as if it were not installed.
AS_INSTALLED = """
import runpy, sys
for name in {blocked!r}:
    sys.modules[name] = None
runpy.run_path("example.py", run_name="__main__")
"""


def _python_examples() -> list[tuple[str, tuple[str, ...]]]:
    examples = []
    for language, info, body in _blocks():
        words = info.split()
        if language == "python" and "run" in words:
            options = dict(word.partition("=")[::2] for word in words if "=" in word)
            examples.append((body, tuple(filter(None, options.get("requires", "").split(",")))))
    return examples


def test_the_python_examples_say_what_they_need() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for _source, requires in _python_examples():
        for name in requires:
            assert f"pip install {name}" in text, f"the README never says to install {name}"


@pytest.mark.parametrize("source, requires", _python_examples(), ids=lambda value: str(value)[:40])
def test_python_example_runs(scratch: Path, source: str, requires: tuple[str, ...]) -> None:
    (scratch / "example.py").write_text(source, encoding="utf-8")
    blocked = tuple(name for name in NOT_IN_THE_INSTALL if name not in requires)
    result = subprocess.run(
        [sys.executable, "-c", AS_INSTALLED.format(blocked=blocked)],
        cwd=scratch,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


def test_ci_runs_the_readmes_test_set_up_exactly():
    """.ci/run is the README's development set-up command, character for character."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("Install the development extra and run the tests", 1)[1]
    readme_command = next(line.strip() for line in section.splitlines() if line.startswith("    "))
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci_command = next(line for line in ci_lines if "pip install -e '.[dev]'" in line)
    assert ci_command == readme_command
    assert "apt-get install -y -qq chromium" in ci_command and "|| true" in ci_command
