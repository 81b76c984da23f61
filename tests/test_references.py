"""Everything hwcheck prints or documents stands on its own: it cites the repository or a public URL.

The rules (whose sources doctor prints), the README, every docs page and every string in
hwcheck/ (Python string literals, templates, schemas) are scanned for references a reader
cannot open: a specification or note outside the repository, an issue of this project by
number, "the project machines", paths into folders that are not in the repository. A
measurement is cited by its file under docs/measurements/, which must exist.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import ROOT

OUTSIDE = {
    "the specification": re.compile(r"\bSPEC\b"),
    "an issue by number": re.compile(r"\bissues? \d+", re.IGNORECASE),
    "the project's machines": re.compile(
        r"\bproject machines?\b|\bthis project\b|\bthe project's\b", re.IGNORECASE
    ),
    "a shared folder": re.compile(r"(?<![\w/.-])shared/"),
    "a seeds folder": re.compile(r"(?<![\w/.-])seeds/"),
}
# `#12` alone is this project's issue (it has fewer than 100); `owner/repo#12`, `PR #12`, `issue #12`
# and a list after one of them are public ones, cited with their repository.
BARE_NUMBER = re.compile(r"(?<![\w/.&-])#\d{1,2}\b")
PUBLIC_NUMBER = re.compile(r"[\w.-]+/[\w.-]+#\d+|\b(?:issues?|pulls?|PRs?)\s+#\d+", re.IGNORECASE)
MEASUREMENT = re.compile(r"docs/measurements/[\w./-]+?\.(?:md|txt|json)")


def _documents() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "rules").rglob("*.toml")),
    ]


def _strings(path: Path) -> str:
    """The text a reader may see from path: a Python file's string literals, any other file whole."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return source
    return "\n".join(
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _files() -> list[Path]:
    shipped = [path for path in sorted((ROOT / "hwcheck").rglob("*")) if path.is_file()]
    return _documents() + [path for path in shipped if path.suffix not in {".pyc", ".png"}]


def outside_references(text: str) -> list[str]:
    """What in text points outside the repository, each as 'kind: the words'."""
    found = []
    for line in text.splitlines():
        for kind, pattern in OUTSIDE.items():
            found += [f"{kind}: {match[0]!r} in {line.strip()[:160]!r}" for match in pattern.finditer(line)]
        for match in BARE_NUMBER.finditer(line):
            if not PUBLIC_NUMBER.search(line[: match.end()]):
                found.append(f"an issue by number: {match[0]!r} in {line.strip()[:160]!r}")
    return found


def test_the_scan_finds_what_it_is_for() -> None:
    assert outside_references("measured on the project machines (SPEC §3, issue 20)")
    assert outside_references("see shared/anchors/h100.md") and outside_references("fixed in #42")
    assert not outside_references("pytorch/pytorch#147626, #164346 and ROCm/rocBLAS#1339")
    assert not outside_references("find /shared/reports -name '*.json'; color: #333; builder #465")
    assert not outside_references("NVIDIA/tensorflow issue #96 and #12")
    assert not outside_references("measured on a 2-core VM: docs/measurements/h100-2026.md")


@pytest.mark.parametrize("path", _files(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_nothing_points_outside_the_repository(path: Path) -> None:
    found = outside_references(_strings(path))
    assert not found, f"{path.relative_to(ROOT)} cites what a reader cannot open:\n" + "\n".join(found)


def test_every_cited_measurement_is_in_the_repository() -> None:
    cited = {(path, cited) for path in _files() for cited in MEASUREMENT.findall(_strings(path))}
    assert cited, "nothing cites docs/measurements/"
    missing = sorted(
        f"{path.relative_to(ROOT)}: {cited}" for path, cited in cited if not (ROOT / cited).is_file()
    )
    assert not missing, "cited measurements that are not in the repository:\n" + "\n".join(missing)
