"""--facts FILE: good files drive the whole run, bad ones exit 2 with one line naming the file."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.errors import InputError
from hwcheck.facts import load_facts


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
