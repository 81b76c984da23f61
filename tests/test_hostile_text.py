"""Hostile text from facts, reports, environment variables and file names never drives the terminal.

Every string another machine or program chose is printed through
hwcheck.base.safe.terminal_text: escape sequences, newlines, bidi overrides and lone
surrogates are shown as visible escapes, rich markup is shown as written, and the JSON
outputs still give back exactly what was planted. A lone surrogate also round-trips: JSON
writes it as a \\udXXX escape, which json.loads turns back into the same lone surrogate.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from inventory_helpers import make_report, write_report

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.safe import csv_cell, json_text, terminal_text, without_lone_surrogates
from hwcheck.inventory.nfd import label_problem, label_value, namespace_problem

OSC8_LINK = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
TITLE = "\x1b]0;pwned\x07"
CURSOR_UP = "\x1b[2A"
C1_CSI = "\x9b31m"
MARKUP = "[bold red]RED[/]"
FORGED_LINE = "\nCluster policy: FORGED"
# Planted in every untrusted field below; each piece is one attack.
HOSTILE = f"{OSC8_LINK} {TITLE}{CURSOR_UP}{C1_CSI} {MARKUP} \u202eevil\ud800{FORGED_LINE}"
# How the terminal must show it: every piece visible, nothing acted on.
SHOWN = (
    r"\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\ \x1b]0;pwned\x07\x1b[2A\x9b31m "
    r"[bold red]RED[/] \u202eevil\ud800\nCluster policy: FORGED"
)
# A raw control, bidi or surrogate character; \n alone is allowed (it ends a line).
RAW_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
FORGED = re.compile(r"^[ \t]*Cluster policy: FORGED", re.M)
# Wide enough that rich never wraps inside the planted text.
WIDE = {"COLUMNS": "400"}


def hostile_facts() -> dict[str, Any]:
    """The A100 facts fixture with the hostile text in the GPU name, CPU model and environment."""
    facts = json.loads((FIXTURES / "facts" / "a100-sxm4x4-tf216.json").read_text(encoding="utf-8"))
    facts["gpus"][0]["name"] = f"NVIDIA {HOSTILE}"
    facts["cpu"]["model"] = f"AMD {HOSTILE}"
    facts["environment"] = {"XLA_FLAGS": f"--xla {HOSTILE}", "CUDA_HOME": f"/usr/{HOSTILE}"}
    return facts


def write_json(path: Path, document: Any) -> Path:
    """Write `document` as JSON (lone surrogates as \\udXXX escapes) to `path`."""
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def assert_safe(text: str) -> None:
    """No raw control character, no forged line, and the planted text shown escaped."""
    assert not RAW_UNSAFE.search(text), RAW_UNSAFE.findall(text)
    assert not FORGED.search(text)
    assert SHOWN in text


# The function every renderer uses.


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred", r"\x1b[31mred"),
        ("a\nb\rc\td", r"a\nb\rc\td"),
        ("bell\x07 del\x7f nul\x00", r"bell\x07 del\x7f nul\x00"),
        ("c1 \x9b csi \x85 nel", r"c1 \x9b csi \x85 nel"),
        ("\u202eevil \u2066iso\u2069 \u200flrm", r"\u202eevil \u2066iso\u2069 \u200flrm"),
        ("line\u2028sep", r"line\u2028sep"),
        ("lone \ud800 and \udcff", r"lone \ud800 and \udcff"),
    ],
)
def test_terminal_text_shows_unsafe_characters_as_escapes(raw: str, shown: str) -> None:
    assert terminal_text(raw) == shown
    terminal_text(raw).encode("utf-8")  # always encodable


def test_terminal_text_keeps_ordinary_text_and_escapes_markup_only_when_asked() -> None:
    ordinary = "NVIDIA GeForce RTX 4090 – Ünïcode ✓ 中文 C:\\path 😀"
    assert terminal_text(ordinary) == ordinary
    assert terminal_text(MARKUP) == MARKUP
    assert terminal_text(MARKUP, markup=True) == r"\[bold red]RED\[/]"
    assert terminal_text(42) == "42"


def test_rich_markup_of_escaped_text_prints_the_text_as_written() -> None:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(f"[bold]GPU:[/bold] {terminal_text(HOSTILE, markup=True)}")
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert printed == f"GPU: {SHOWN}\n"


def test_json_text_is_exact_printable_and_encodable() -> None:
    document = {"name": HOSTILE, "plain": "Ünïcode ✓", "n": -3, HOSTILE: [HOSTILE]}
    text = json_text(document)
    assert json.loads(text) == document  # exact, lone surrogate included
    assert not RAW_UNSAFE.search(text.replace("\n", ""))
    text.encode("utf-8")
    assert "Ünïcode ✓" in text  # valid non-ASCII stays readable


def test_without_lone_surrogates_reaches_into_nested_data() -> None:
    cleaned = without_lone_surrogates({"a\udc80": ["x\ud800", ("y",), 1, None]})
    assert cleaned == {r"a\udc80": [r"x\ud800", ("y",), 1, None]}


# CSV formula injection (OWASP: prefix a single quote).


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://evil")', '\'=HYPERLINK("http://evil")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", r"'\t=1"),
        ("\r=1", r"'\r=1"),
        ("a=1", "a=1"),
        ("", ""),
        (-3, -3),  # a number is not text
        (2.5, 2.5),
        (None, None),
    ],
)
def test_csv_cell_neutralises_formulas_in_text_only(cell: Any, written: Any) -> None:
    assert csv_cell(cell) == written


# NFD: a trailing newline is not a valid namespace or label.


def test_nfd_rejects_a_trailing_newline() -> None:
    assert namespace_problem("example.com\n") is not None
    assert namespace_problem("example.com") is None
    assert label_problem("feature.node.kubernetes.io/hwcheck-policy", "float32\n") is not None
    assert label_problem("feature.node.kubernetes.io/hwcheck-policy\n", "float32") is not None
    value = label_value(f"GPU {HOSTILE}\n")
    assert value.startswith("GPU-8-https-evil.example-click-8-0-pwned-2A-31m-bold-red-RED")
    assert label_problem("feature.node.kubernetes.io/hwcheck-gpu.model", value) is None


def test_nfd_namespace_with_a_newline_is_bad_input() -> None:
    result = run_hwcheck("nfd", "--namespace", "example.com\n", "-o", "-")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "example.com\\n" in result.stderr


def test_nfd_labels_from_hostile_facts_are_valid(tmp_path: Path) -> None:
    facts = write_json(tmp_path / "facts.json", hostile_facts())
    result = run_hwcheck("nfd", "--facts", str(facts), "-o", "-")
    assert result.returncode == 0, result.stderr
    labels = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert labels
    for line in labels:
        key, _, value = line.partition("=")
        assert label_problem(key, value) is None, line
    assert not RAW_UNSAFE.search(result.stdout)


# doctor


def test_doctor_shows_hostile_facts_escaped(tmp_path: Path) -> None:
    facts = write_json(tmp_path / "facts.json", hostile_facts())
    result = run_hwcheck("doctor", "--facts", str(facts), env=WIDE)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert_safe(result.stdout)
    assert f"NVIDIA {SHOWN}" in result.stdout  # the GPU row
    assert f"AMD {SHOWN}" in result.stdout  # the CPU row
    assert f"XLA_FLAGS=--xla {SHOWN}" in result.stdout
    assert f"CUDA_HOME=/usr/{SHOWN}" in result.stdout


def test_doctor_rule_messages_quote_hostile_facts_escaped(tmp_path: Path) -> None:
    facts = hostile_facts()
    del facts["gpus"][1:]  # one GPU, so the reason names it as the weakest
    result = run_hwcheck("doctor", "--facts", str(write_json(tmp_path / "facts.json", facts)), env=WIDE)
    assert result.returncode == 0, result.stderr
    why = [line for line in result.stdout.splitlines() if line.strip().startswith("why")]
    assert why and "weakest: NVIDIA" in why[0]
    assert not RAW_UNSAFE.search(why[0]) and r"\x1b]0;pwned\x07" in why[0]


def test_doctor_json_gives_back_the_planted_text(tmp_path: Path) -> None:
    facts = hostile_facts()
    result = run_hwcheck("doctor", "--json", "--facts", str(write_json(tmp_path / "facts.json", facts)))
    assert result.returncode == 0, result.stderr
    assert not RAW_UNSAFE.search(result.stdout.replace("\n", ""))
    report = json.loads(result.stdout)
    assert report["facts"]["gpus"][0]["name"] == facts["gpus"][0]["name"]
    assert report["facts"]["cpu"]["model"] == facts["cpu"]["model"]


def test_error_line_shows_a_hostile_file_name_escaped(tmp_path: Path) -> None:
    name = tmp_path / f"missing {TITLE}{CURSOR_UP}\u202e{FORGED_LINE}.json"
    result = run_hwcheck("doctor", "--facts", str(name))
    assert result.returncode == 2
    assert result.stderr.startswith("hwcheck: error: ")
    assert result.stderr.count("\n") == 1  # one line, no forged second one
    assert not RAW_UNSAFE.search(result.stderr)
    assert r"missing \x1b]0;pwned\x07\x1b[2A\u202e\nCluster policy: FORGED.json" in result.stderr


# inventory


def hostile_reports(directory: Path) -> tuple[dict[str, Any], Path]:
    """A hostile report under a hostile file name, a hostile rejected file, and a plain report."""
    report = make_report("t4-vm-old-driver", f"host {HOSTILE}")
    facts = report["facts"]
    facts["gpus"][0]["name"] = f"Tesla {HOSTILE}"
    facts["cpu"]["model"] = f"Xeon {HOSTILE}"
    finding = report["recommendation"]["findings"][0]
    finding["message"] = f"message {HOSTILE}"
    finding["remedy"] = f"=remedy {HOSTILE}"
    # A file name that is not UTF-8 reads back with a lone surrogate (\udcff).
    hostile_name = os.fsdecode(b"node\xff " + f"{TITLE}{FORGED_LINE}.json".encode())
    path = write_json(directory / hostile_name, report)
    (directory / f"broken {TITLE}{FORGED_LINE}.json").write_text("{not json", encoding="utf-8")
    write_report(directory, "plain.json", make_report("a100-sxm4x8-epyc", "-1"))
    return report, path


def test_inventory_table_shows_hostile_reports_escaped(tmp_path: Path) -> None:
    hostile_reports(tmp_path)
    result = run_hwcheck("inventory", str(tmp_path), env=WIDE)
    assert result.returncode == 1, result.stderr  # the broken file is rejected
    assert_safe(result.stdout)
    assert f"Tesla {SHOWN}" in result.stdout
    assert f"Xeon {SHOWN}" in result.stdout
    assert f"host {SHOWN}" in result.stdout  # the node with errors
    assert f"message {SHOWN}" in result.stdout
    assert r"broken \x1b]0;pwned\x07\nCluster policy: FORGED.json" in result.stdout
    assert sum(line.startswith("Cluster policy:") for line in result.stdout.splitlines()) == 1


def test_inventory_json_gives_back_the_planted_text(tmp_path: Path) -> None:
    report, path = hostile_reports(tmp_path)
    result = run_hwcheck("inventory", "--json", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert not RAW_UNSAFE.search(result.stdout.replace("\n", ""))
    document = json.loads(result.stdout)
    error_node = document["error_nodes"][0]
    assert error_node["host"] == report["host"]
    assert error_node["source"] == str(path)  # the lone surrogate included
    assert error_node["findings"][0]["message"] == report["recommendation"]["findings"][0]["message"]
    descriptions = [c["description"] for c in document["classes"]]
    assert f"Tesla {HOSTILE}" in descriptions[0]["gpus"] + descriptions[1]["gpus"]
    assert any(r["source"].startswith(str(tmp_path / f"broken {TITLE}")) for r in document["rejected"])


def test_inventory_csv_is_safe_text_without_formulas(tmp_path: Path) -> None:
    report, _ = hostile_reports(tmp_path)
    result = run_hwcheck("inventory", "--csv", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert not RAW_UNSAFE.search(result.stdout.replace("\n", ""))
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    error_row = next(row for row in rows if row["record"] == "error")
    assert error_row["host"] == f"host {SHOWN}"
    assert error_row["remedy"] == f"'=remedy {SHOWN}"
    assert next(row for row in rows if row["host"] == "'-1")["record"] == "node"
    class_row = next(row for row in rows if row["record"] == "class")
    assert class_row["nodes"] == "1"  # numbers stay numbers
