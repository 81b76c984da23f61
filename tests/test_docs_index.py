"""Docs a newcomer can follow: the README's and the docs index's page tables list every page, the
site's dependencies install with one documented command, and the README says nothing twice."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
PAGES = sorted(path.name for path in (ROOT / "docs").glob("*.md") if path.name != "index.md")


def linked(text: str, prefix: str) -> set[str]:
    return set(re.findall(rf"\]\({re.escape(prefix)}([a-z-]+\.md)\)", text))


def test_both_page_tables_list_every_page():
    readme = (ROOT / "README.md").read_text().partition("## Documentation")[2]
    index = (ROOT / "docs" / "index.md").read_text().partition("## The pages")[2]
    assert sorted(linked(readme, "docs/")) == PAGES
    assert sorted(linked(index, "")) == PAGES


def test_the_docs_site_installs_with_one_documented_command():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {requirement.split("==")[0] for requirement in extras["docs"]} == {"mkdocs", "mkdocs-material"}
    assert "hwcheck[docs]" in extras["dev"]  # the tests build the site with the same pins
    assert "pip install '.[docs]' && mkdocs serve" in (ROOT / "README.md").read_text()


def test_the_readme_says_nothing_twice():
    paragraphs = [
        " ".join(block.split())
        for block in (ROOT / "README.md").read_text().split("\n\n")
        if block.strip() and not block.lstrip().startswith(("|", "```", "    "))
    ]
    openings = [paragraph[:60] for paragraph in paragraphs if len(paragraph) > 60]
    assert len(openings) == len(set(openings)), [o for o in openings if openings.count(o) > 1]
