"""--facts FILE: good files drive the whole run, bad ones exit 2 with one line naming the file."""

from __future__ import annotations

import json
import math
import os
import socket

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.base.inputs import MAX_RULES_BYTES
from hwcheck.base.tables import read_toml
from hwcheck.facts import load_facts
from hwcheck.render.report import to_json


def test_facts_file_replaces_probing(tmp_path):
    result = run_hwcheck("doctor", "--json", "--facts", str(FIXTURES / "facts/a100-sxm4x4-tf216.json"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [gpu["name"] for gpu in report["facts"]["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 4
    assert {probe["status"] for probe in report["probes"].values()} == {"file"}
    assert report["recommendation"]["policy"] == "mixed_bfloat16"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"schema_version": 1, "gpus": [', "malformed JSON at line 1"),
        (b"", "empty file"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2, 3]", "expected a JSON object"),
        (b'{"schema_version": 1, "gpus": "A100"}', 'gpus: "A100" is not of type "array"'),
        (b'{"schema_version": 1, "cpu": {"flags": ["avx", 2]}}', 'cpu.flags[1]: 2 is not of type "string"'),
        (
            b'{"schema_version": 1, "gpus": [{"name": "A100", "compute_capability": "eight"}]}',
            "gpus[0].compute_capability",
        ),
        (b'{"schema_version": 7}', "schema_version 7 is not supported"),
    ],
    ids=["truncated", "empty", "binary", "array", "wrong-type", "wrong-item-type", "bad-cc", "version"],
)
def test_bad_facts_file_exits_2_with_one_line(tmp_path, content, expected):
    path = tmp_path / "facts.json"
    path.write_bytes(content)
    result = run_hwcheck("doctor", "--facts", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and expected in lines[0]
    assert "Traceback" not in result.stderr


def test_missing_facts_file_exits_2(tmp_path):
    missing = tmp_path / "nope.json"
    result = run_hwcheck("doctor", "--json", "--facts", str(missing))
    assert result.returncode == 2
    assert result.stderr.strip() == f"hwcheck: error: {missing}: no such file"


def test_directory_as_facts_file(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        load_facts(tmp_path)


def test_report_file_is_accepted_as_facts(tmp_path):
    report = run_hwcheck("doctor", "--json", "--facts", str(FIXTURES / "facts/v100-driver-too-old.json"))
    path = tmp_path / "report.json"
    path.write_text(report.stdout)
    assert load_facts(path)["gpus"][0]["name"] == "Tesla V100-SXM2-16GB"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"schema_version": 1, "x": NaN}', "unusable JSON: NaN is not a JSON number"),
        (b'{"schema_version": 1, "x": -Infinity}', "unusable JSON: -Infinity is not a JSON number"),
        (
            b'{"schema_version": 1, "x": 1e999}',
            "unusable JSON: the number 1e999 is too large for a 64-bit float",
        ),
        (
            b'{"schema_version": 1, "x": ' + b"9" * 5000 + b"}",
            "unusable JSON: the integer 999999999999... (5000 digits) is beyond 64 bits",
        ),
        (
            b'{"schema_version": 1, "x": ' + b"9" * 401 + b"}",
            "unusable JSON: the integer 999999999999... (401 digits) is beyond 64 bits",
        ),
        (
            b'{"schema_version": 1, "x": 9223372036854775808}',
            "unusable JSON: the integer 9223372036854775808 is beyond 64 bits",
        ),
        (b'{"schema_version": 1, "x": ' + b"[" * 33 + b"]" * 33 + b"}", "JSON nested too deeply"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
    ],
    ids=[
        "nan",
        "infinity",
        "huge-float",
        "huge-int",
        "int-of-401-digits",
        "int-one-past-64-bits",
        "deep",
        "very-deep",
    ],
)
def test_numbers_and_nesting_json_cannot_carry_exit_2(tmp_path, content, expected):
    path = tmp_path / "facts.json"
    path.write_bytes(content)
    result = run_hwcheck("doctor", "--json", "--facts", str(path))
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"hwcheck: error: {path}: {expected}")


def test_nesting_within_the_bound_is_read(tmp_path):
    facts = json.loads((FIXTURES / "facts/a100-sxm4x4-tf216.json").read_text())
    facts["site_notes"] = json.loads("[" * 28 + "]" * 28)
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    assert load_facts(path)["site_notes"] == facts["site_notes"]


@pytest.mark.parametrize("option", ["--facts", "--cpuinfo", "--rules"])
def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path, option):
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    result = run_hwcheck("doctor", option, str(fifo), timeout=30)
    [line] = result.stderr.strip().splitlines()
    assert result.returncode == 2
    assert line.startswith(f"hwcheck: error: {fifo}: is a FIFO (named pipe), expected ")


@pytest.mark.parametrize("option", ["--facts", "--cpuinfo", "--rules"])
def test_a_character_device_is_refused_before_reading(option):
    result = run_hwcheck("doctor", option, os.devnull, timeout=30)
    [line] = result.stderr.strip().splitlines()
    assert result.returncode == 2
    assert line.startswith(f"hwcheck: error: {os.devnull}: is a character device, expected ")


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        with pytest.raises(InputError, match="is a socket, expected a JSON document"):
            load_facts(path)


def test_a_rules_file_over_the_limit_is_refused(tmp_path):
    path = tmp_path / "site.toml"
    path.write_bytes(b"# padding\n" * (MAX_RULES_BYTES // 10 + 1))
    with pytest.raises(InputError, match=r"larger than 4 MB, not a TOML file"):
        read_toml(path)


def test_a_deeply_nested_rules_file_is_an_input_error(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(InputError, match="TOML nested too deeply"):
        read_toml(path)


def test_reports_never_carry_nan():
    with pytest.raises(ValueError, match="not JSON compliant"):
        to_json({"schema_version": 1, "facts": {"x": math.nan}})


def test_a_key_from_outside_stays_on_one_line_in_the_path():
    # Found by test_fuzz: a report whose probes held the key "\n" gave a two-line reason.
    from hwcheck.facts import schema_path

    assert schema_path(["gpus", 0, "name"]) == "gpus[0].name"
    assert schema_path(["probes", "\n"]) == 'probes["\\n"]'
    assert schema_path(["frameworks", "a.b"]) == 'frameworks["a.b"]'
