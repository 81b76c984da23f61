"""The README is the newcomer's first page: short, the commands on its first screen, and
CI's set-up command exactly as it says. Its examples run in tests/test_docs.py with every
docs page's."""

from __future__ import annotations

import re

from conftest import ROOT

README = ROOT / "README.md"
COMMANDS = ("doctor", "report", "config", "fit", "bench", "inventory", "nfd", "install", "explain")


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_first_screen_shows_every_command() -> None:
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    for command in COMMANDS:
        assert f"`hwcheck {command}" in first_screen, f"hwcheck {command} is not on the README's first screen"


def test_every_command_of_the_cli_is_in_the_readme() -> None:
    from hwcheck.cli import COMMANDS as CLI_COMMANDS

    assert set(CLI_COMMANDS) == set(COMMANDS)


def test_the_readme_links_into_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).is_file(), f"README links to {target}, which does not exist"
    for page in ("doctor", "measure", "config", "fit", "inventory", "rules", "architecture"):
        assert f"(docs/{page}.md)" in text


def test_ci_runs_the_readmes_test_set_up_exactly():
    """.ci/run is the README's development set-up command, character for character."""
    text = README.read_text(encoding="utf-8")
    section = text.split("Install the development extra and run the tests", 1)[1]
    readme_command = next(line.strip() for line in section.splitlines() if line.startswith("    "))
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci_command = next(line for line in ci_lines if "pip install -e '.[dev]'" in line)
    assert ci_command == readme_command
    assert "apt-get install -y -qq chromium" in ci_command and "|| true" in ci_command
    # A newcomer learns how long the second command takes before running it.
    assert re.search(r"runs the whole suite.*?about \d+ minutes on a 2-core\s+machine", text, re.S)
