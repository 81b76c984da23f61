"""One bad report never takes down the inventory (issue 13, class 1; SPEC §7).

A folder of good reports with every hostile kind of tests/hostile_reports.py among them:
each bad file is listed once with a one-line reason, every good and every tolerated one
merges, the exit status is 1, and the table, --json and --csv all come out without a
traceback and with hostile text escaped.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hostile_reports import REJECTED, TOLERATED, usable_kinds, write_kind
from inventory_helpers import make_report, write_report

from conftest import run_hwcheck
from hwcheck.inventory.merge import Merger
from hwcheck.inventory.reports import report_problem
from hwcheck.inventory.sources import report_paths

GOOD_PROFILES = ("a100-sxm4x8-epyc", "v100-sxm2x8-broadwell", "h100x8-sapphirerapids", "haswell-cpu")
GOOD_REPORTS = 300
HOSTILE_BASE = "a100-sxm4x8-epyc"
# What the reason must say for the kinds whose cause is plain from the file alone.
REASONS = {
    "int_over_4300_digits": "(5000 digits) is beyond 64 bits",
    "int_of_401_digits": "(401 digits) is beyond 64 bits",
    "int_just_beyond_64_bits": "9223372036854775808 is beyond 64 bits",
    "int_just_below_64_bits": "-9223372036854775809 is beyond 64 bits",
    "nan": "NaN is not a JSON number",
    "infinity": "Infinity is not a JSON number",
    "float_overflow": "too large for a 64-bit float",
    "nesting_40_levels": "nested too deeply",
    "nesting_100000_levels": "nested too deeply",
    "truncated": "malformed JSON",
    "binary": "not UTF-8",
    "empty": "empty file",
    "utf16_with_bom": "UTF-16",
    "utf16_without_bom": "NUL bytes",
    "utf8_bom": "byte order mark",
    "schema_version_2": "schema_version 2 is not supported",
    "schema_version_true": "schema_version True is not supported",
    "top_level_array": "expected a JSON object, got an array",
    "facts_not_report": "a facts file, not a report",
    "time_not_a_time": "not an ISO 8601 date-time",
    "time_far_future": "in the future",
    "gpu_name_huge": "longer than 256 characters",
    "cpu_model_huge": "facts.cpu.model: '[/][/]",
    "host_huge": "longer than 256 characters",
    "finding_message_huge": "longer than 4096 characters",
    "over_the_size_cap": "larger than 10 MB",
    "fifo": "FIFO",
    "symlink_to_dev_zero": "character device",
    "symlink_loop": "symbolic links",
    "dangling_symlink": "no such file",
}
MAX_REASON = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A folder of good, hostile and tolerated reports, and what each should become."""
    root = tmp_path_factory.mktemp("cluster")
    good = {}
    for number in range(GOOD_REPORTS):
        host = f"good{number:04d}"
        path = write_report(
            root / f"rack{number % 7}", f"{host}.json", make_report(GOOD_PROFILES[number % 4], host)
        )
        good[str(path)] = host
    base = make_report(HOSTILE_BASE, "hostile")
    (root / "bad").mkdir()
    (root / "odd").mkdir()
    rejected = {
        str(write_kind(root / "bad", REJECTED, kind, base, n)): kind
        for n, kind in enumerate(usable_kinds(REJECTED))
    }
    tolerated = {
        str(write_kind(root / "odd", TOLERATED, kind, make_report(HOSTILE_BASE, f"odd{n}"), n)): kind
        for n, kind in enumerate(usable_kinds(TOLERATED))
    }
    # Read by name only: neither a FIFO nor anything else without .json is opened by the walker.
    if os.name == "posix":
        os.mkfifo(root / "bad" / "pipe-without-suffix")
    (root / "bad" / "notes.txt").write_text("[/] not a report", encoding="utf-8")
    (root / "bad" / "directory.json").mkdir()
    unreadable = write_report(root / "bad", "unreadable.json", make_report(HOSTILE_BASE, "unreadable"))
    unreadable.chmod(0)
    # As root the file still reads, and is then a good report.
    (tolerated if os.access(unreadable, os.R_OK) else rejected)[str(unreadable)] = "unreadable"
    return {"root": root, "good": good, "rejected": rejected, "tolerated": tolerated}


@pytest.fixture(scope="module")
def extra_paths(cluster: dict) -> dict[str, str]:
    """Paths given on the command line that are not report files at all."""
    paths = {"/dev/zero": "character device"}
    if os.name == "posix":
        fifo = cluster["root"] / "pipe.json"
        os.mkfifo(fifo)
        paths[str(fifo)] = "FIFO"
    return paths


def test_every_hostile_report_is_listed_once_with_one_line_and_every_other_merges(cluster, extra_paths):
    result = run_hwcheck("inventory", str(cluster["root"]), *extra_paths, "--json", timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)

    listed = [entry["source"] for entry in document["rejected"]]
    assert sorted(listed) == sorted([*cluster["rejected"], *extra_paths])
    reasons = {entry["source"]: entry["reason"] for entry in document["rejected"]}
    for source, reason in reasons.items():
        assert reason and "\n" not in reason and len(reason) <= MAX_REASON, (source, reason)
    for source, kind in cluster["rejected"].items():
        if kind in REASONS:
            assert REASONS[kind] in reasons[source], (kind, reasons[source])
    for source, expected in extra_paths.items():
        assert expected in reasons[source]

    members = {member["source"]: member["host"] for c in document["classes"] for member in c["members"]}
    assert set(members) == {*cluster["good"], *cluster["tolerated"]}
    assert all(members[source] == host for source, host in cluster["good"].items())
    assert document["summary"]["nodes"] == len(cluster["good"]) + len(cluster["tolerated"])
    assert document["summary"]["superseded"] == 0


def test_the_table_shows_every_hostile_text_escaped_and_each_reject_on_one_line(cluster, extra_paths):
    result = run_hwcheck("inventory", str(cluster["root"]), *extra_paths, timeout=120, env={"COLUMNS": "100"})
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    out = result.stdout
    assert f"Rejected reports ({len(cluster['rejected']) + len(extra_paths)})" in out
    for raw in ("\x1b", "\x07", "\u202e", "\r", "\x00"):
        assert raw not in out, repr(raw)
    assert "[/]\\x1b]8;;http://x\\x07y" in out  # the error finding that tried to plant a link
    # The host with a newline and the file with one stay on their own lines.
    assert not any(line.startswith(("forged line", "[bold]", "\\x1b[2J")) for line in out.splitlines())
    rejects = out.split("Rejected reports", 1)[1].splitlines()[1:21]
    # Each reject starts its own line (path: reason); a long one wraps under a deeper indent.
    assert all(line.startswith("  ") for line in rejects), rejects
    assert all(":" in line for line in rejects if not line.startswith("    ")), rejects


def test_the_csv_lists_the_same_rejects_and_nodes(cluster, extra_paths):
    result = run_hwcheck("inventory", str(cluster["root"]), *extra_paths, "--csv", timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    rejected = [row for row in rows if row["record"] == "rejected"]
    nodes = [row for row in rows if row["record"] == "node"]
    assert len(rejected) == len(cluster["rejected"]) + len(extra_paths)
    assert len(nodes) == len(cluster["good"]) + len(cluster["tolerated"])
    assert all(row["reason"] and "\n" not in row["reason"] for row in rejected)
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values() if cell)


def test_a_report_that_vanishes_between_listing_and_reading_is_rejected(tmp_path):
    for host in ("stays", "goes"):
        write_report(tmp_path, f"{host}.json", make_report(HOSTILE_BASE, host))
    paths = list(report_paths([str(tmp_path)]))
    (tmp_path / "goes.json").unlink()
    merger = Merger()
    merger.add_files(paths)
    inventory = merger.finish()
    assert [node.host for c in inventory.classes for node in c.nodes] == ["stays"]
    assert [(Path(r.source).name, r.reason) for r in inventory.rejected] == [("goes.json", "no such file")]


@pytest.mark.host("linux")
def test_a_fifo_in_a_folder_never_blocks_the_walk_or_the_read(tmp_path):
    write_report(tmp_path, "good.json", make_report(HOSTILE_BASE, "good"))
    os.mkfifo(tmp_path / "waiting.json")
    os.mkfifo(tmp_path / "waiting")
    assert stat.S_ISFIFO(os.stat(tmp_path / "waiting.json").st_mode)
    result = run_hwcheck("inventory", str(tmp_path), "--json", timeout=30)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert [Path(r["source"]).name for r in document["rejected"]] == ["waiting.json"]
    assert document["summary"]["nodes"] == 1


@pytest.mark.parametrize(
    ("ahead", "taken"),
    [(timedelta(hours=-1), True), (timedelta(hours=12), True), (timedelta(days=2), False)],
)
def test_a_report_dated_more_than_a_day_ahead_is_rejected(ahead, taken):
    report = make_report(HOSTILE_BASE, "skewed", (datetime.now(UTC) + ahead).isoformat())
    problem = report_problem(report)
    assert (problem is None) == taken, problem
    if not taken:
        assert "in the future" in problem
