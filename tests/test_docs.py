"""Every example in README.md and in docs/ runs as written, and the site builds.

The documents are found by glob (README.md and every docs/**/*.md), so a page added later is
checked without a change here. In each document, fenced blocks marked ```toml file=NAME are
written to a scratch folder; each `$ ` line of a ```console block runs there (with the
checkout's tests/ beside it) at 80 columns, and the lines the document shows under it must be
what the command printed, line by line (blank lines aside). A ```python run block is executed
as a script, as after the README's install (`pip install .`): the packages that install does
not bring are unimportable unless the block names them (```python run requires=torch, with the
same document saying to install it). Samples that are not replayable (a measurement, a session
on another machine) go in a ```text block, which is not run.

When an output changes on purpose, refresh a page's samples from the current code:

    python tests/test_docs.py --show docs/doctor.md     # print what each console command prints now
    python tests/test_docs.py --update docs/doctor.md   # rewrite the page's console blocks with it
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\S*)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def documents() -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _name(document: Path) -> str:
    return document.relative_to(ROOT).as_posix()


class Block(NamedTuple):
    language: str
    info: str
    body: str


def blocks(document: Path) -> list[Block]:
    """The fenced blocks of a document: language, the rest of the info string, the body."""
    text = document.read_text(encoding="utf-8")
    return [Block(match[1], match[2].strip(), match[3]) for match in FENCE.finditer(text)]


def _options(info: str) -> dict[str, str]:
    return dict(word.partition("=")[::2] for word in info.split() if "=" in word)


def files(document: Path) -> dict[str, str]:
    """The ```LANG file=NAME blocks of a document, by NAME."""
    return {
        _options(block.info)["file"]: block.body
        for block in blocks(document)
        if "file" in _options(block.info)
    }


def console_examples(document: Path) -> list[tuple[str, list[str]]]:
    """Each `$ ` command of the document's console blocks, with the lines shown under it."""
    examples: list[tuple[str, list[str]]] = []
    for block in blocks(document):
        if block.language != "console":
            continue
        for line in block.body.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], []))
            elif examples and line.strip():
                examples[-1][1].append(line.rstrip())
    return examples


def python_examples(document: Path) -> list[tuple[str, tuple[str, ...]]]:
    """The ```python run blocks of a document, with the packages each says it needs."""
    examples = []
    for block in blocks(document):
        if block.language == "python" and "run" in block.info.split():
            requires = _options(block.info).get("requires", "")
            examples.append((block.body, tuple(filter(None, requires.split(",")))))
    return examples


def make_scratch(document: Path, folder: Path) -> Path:
    """Lay out the document's files in folder, with the checkout's tests/, docs/ and deploy/.

    docs/ holds the recorded measurements a page may replay (docs/measurements/); deploy/ the
    scripts a page runs.
    """
    for name, body in files(document).items():
        (folder / name).write_text(body, encoding="utf-8")
    (folder / "tests").symlink_to(ROOT / "tests")
    (folder / "docs").symlink_to(ROOT / "docs")
    (folder / "deploy").symlink_to(ROOT / "deploy")
    return folder


def environment() -> dict[str, str]:
    """The environment a newcomer's shell has after the install, on this checkout."""
    # `hwcheck` as a newcomer types it: the script installed beside this interpreter.
    path = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    return {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}


def run_console(command: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    """Run one `$ ` line as the docs' reader would, in the scratch folder."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=scratch,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def printed_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What a command printed, standard output then standard error, line by line."""
    return [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]


CONSOLE = [
    pytest.param(document, command, shown, id=f"{_name(document)}: {command[:60]}")
    for document in documents()
    for command, shown in console_examples(document)
]
PYTHON = [
    pytest.param(document, source, requires, id=f"{_name(document)}: {source[:40]}")
    for document in documents()
    for source, requires in python_examples(document)
]


def test_the_documents_are_found() -> None:
    names = [_name(document) for document in documents()]
    assert "README.md" in names and "docs/doctor.md" in names
    assert len(CONSOLE) >= 8


@pytest.mark.parametrize("document, command, shown", CONSOLE)
def test_console_example_prints_what_the_page_shows(
    tmp_path: Path, document: Path, command: str, shown: list[str]
) -> None:
    assert shown, f"{_name(document)}: {command!r} shows no output, so nothing would check it"
    result = run_console(command, make_scratch(document, tmp_path))
    printed = [line for line in printed_lines(result) if line.strip()]
    if printed != shown:
        first = next(
            (i for i, (a, b) in enumerate(zip(printed, shown, strict=False)) if a != b),
            min(len(printed), len(shown)),
        )
        pytest.fail(
            f"{_name(document)}: {command!r} printed, from line {first + 1}:\n"
            + "\n".join(printed[first : first + 5])
            + "\nbut the page shows:\n"
            + "\n".join(shown[first : first + 5])
            + f"\n(refresh with: python tests/test_docs.py --update {_name(document)})"
        )
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


@pytest.mark.parametrize("document", documents(), ids=_name)
def test_the_python_examples_say_what_they_need(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    for _source, requires in python_examples(document):
        for name in requires:
            assert f"pip install {name}" in text, f"{_name(document)} never says to install {name}"


@pytest.mark.parametrize("document, source, requires", PYTHON)
def test_python_example_runs(tmp_path: Path, document: Path, source: str, requires: tuple[str, ...]) -> None:
    scratch = make_scratch(document, tmp_path)
    (scratch / "example.py").write_text(source, encoding="utf-8")
    blocked = tuple(name for name in NOT_IN_THE_INSTALL if name not in requires)
    result = subprocess.run(
        [sys.executable, "-c", AS_INSTALLED.format(blocked=blocked)],
        cwd=scratch,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict`: every page in the nav exists, every link and anchor resolves."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[dev]' brings them)")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path),
        ],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "index.html").is_file() and (tmp_path / "doctor" / "index.html").is_file()


def test_update_rewrites_each_console_block_with_what_its_commands_print(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro.\n\n```console\n$ echo fresh; echo two\nstale\n$ printf 'x\\n'\nold\n```\n\n"
        "```text\n$ echo untouched\nkept\n```\nAfter.\n",
        encoding="utf-8",
    )
    assert _rewrite(page) == (
        "Intro.\n\n```console\n$ echo fresh; echo two\nfresh\ntwo\n$ printf 'x\\n'\nx\n```\n\n"
        "```text\n$ echo untouched\nkept\n```\nAfter.\n"
    )


def _current_output(document: Path) -> list[tuple[str, list[str]]]:
    with tempfile.TemporaryDirectory() as folder:
        scratch = make_scratch(document, Path(folder))
        return [
            (command, printed_lines(run_console(command, scratch)))
            for command, _ in console_examples(document)
        ]


def _rewrite(document: Path) -> str:
    outputs = iter(_current_output(document))
    text = document.read_text(encoding="utf-8")

    def refreshed(match: re.Match[str]) -> str:
        if match[1] != "console":
            return match[0]
        body: list[str] = []
        for line in match[3].splitlines():
            if line.startswith("$ "):
                command, printed = next(outputs)
                if not printed:
                    print(f"warning: {command!r} printed nothing", file=sys.stderr)
                body += [f"$ {command}", *printed]
        closing = match[0][match[0].rindex("```") :]  # the fence and the blank lines it matched
        return f"```{match[1]}{match[2]}\n" + "".join(line + "\n" for line in body) + closing

    return FENCE.sub(refreshed, text)


def main(argv: list[str] | None = None) -> int:
    """--show PAGE prints each console command's current output; --update PAGE rewrites the page."""
    parser = argparse.ArgumentParser(description="Show or refresh the console samples of a docs page.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--show", metavar="PAGE", help="print what each console command of PAGE prints now")
    action.add_argument(
        "--update", metavar="PAGE", help="rewrite PAGE's console blocks with the current output"
    )
    options = parser.parse_args(argv)
    document = Path(options.show or options.update).resolve()
    if not document.is_file():
        parser.error(f"{document}: no such page")
    if options.show:
        for command, printed in _current_output(document):
            print("\n".join([f"$ {command}", *printed]))
    else:
        document.write_text(_rewrite(document), encoding="utf-8")
        print(f"rewrote the console blocks of {_name(document)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
