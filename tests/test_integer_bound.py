"""One bound for every integer from outside: a signed 64-bit integer, refused where it is read.

A schema-valid report whose GPU memory is a 401-digit integer used to stop inventory, nfd,
doctor and fit with a traceback (the rules engine takes 64-bit integers only). The bound sits
in the one JSON reader (base/inputs.parse_json) and in validate_facts for documents given as
objects; at the cap (2**63 - 1) every command still answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from inventory_helpers import make_report, write_report

from conftest import run_hwcheck
from hwcheck import recommend_policy
from hwcheck.base.errors import FactsError
from hwcheck.base.numbers import MAX_INTEGER, MIN_INTEGER, json_integer, wide_integer

CAP = str(MAX_INTEGER)
JUST_OVER = str(MAX_INTEGER + 1)
DIGITS_401 = "9" * 401


def _with_memory(report: dict, value: str) -> str:
    """The report's JSON text with every GPU's memory_mib written as `value`, verbatim."""
    return re.sub(r'"memory_mib": \d+', f'"memory_mib": {value}', json.dumps(report))


@pytest.mark.parametrize("text", [CAP, str(MIN_INTEGER), "0", "-1", "0" * 19])
def test_integers_within_64_bits_are_read(text):
    assert json_integer(text) == int(text)


@pytest.mark.parametrize("text", [JUST_OVER, str(MIN_INTEGER - 1), DIGITS_401, "1" + "0" * 4400])
def test_integers_beyond_64_bits_are_refused_naming_their_size(text):
    with pytest.raises(ValueError, match="beyond 64 bits") as error:
        json_integer(text)
    assert len(str(error.value)) < 120


def test_wide_integer_names_where_a_document_holds_one():
    assert wide_integer({"gpus": [{"memory_mib": MAX_INTEGER}], "x": True}) is None
    assert wide_integer({"gpus": [{"memory_mib": MAX_INTEGER + 1}]}) == "gpus[0].memory_mib"
    assert wide_integer([MIN_INTEGER - 1]) == "[0]"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reports")
    base = make_report("a100-sxm4x8-epyc", "huge")
    (root / "huge.json").write_text(_with_memory(base, DIGITS_401), encoding="utf-8")
    (root / "capped.json").write_text(_with_memory(make_report("a100-sxm4x8-epyc", "capped"), CAP))
    write_report(root, "good.json", make_report("v100-sxm2x8-broadwell", "good"))
    (root / "huge-facts.json").write_text(_with_memory(base["facts"], DIGITS_401), encoding="utf-8")
    (root / "over-facts.json").write_text(_with_memory(base["facts"], JUST_OVER), encoding="utf-8")
    (root / "capped-facts.json").write_text(_with_memory(base["facts"], CAP), encoding="utf-8")
    return root


@pytest.mark.parametrize("framework", [None, "torch"])
def test_a_401_digit_memory_is_one_refused_report_and_the_rest_of_the_inventory_stands(folder, framework):
    chosen = ["--framework", framework] if framework else []
    paths = [str(folder / name) for name in ("huge.json", "capped.json", "good.json")]
    result = run_hwcheck("inventory", *paths, *chosen, "--json", timeout=120)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    [rejected] = document["rejected"]
    assert rejected["source"] == paths[0]
    assert "(401 digits) is beyond 64 bits" in rejected["reason"] and "\n" not in rejected["reason"]
    merged = sorted(member["host"] for group in document["classes"] for member in group["members"])
    assert merged == ["capped", "good"]


@pytest.mark.parametrize(
    "command",
    [["doctor"], ["nfd", "-o", "-"], ["fit", "--params", "7e9"]],
    ids=["doctor", "nfd", "fit"],
)
@pytest.mark.parametrize(
    ("name", "shown"), [("huge-facts.json", "(401 digits)"), ("over-facts.json", JUST_OVER)]
)
def test_an_integer_beyond_64_bits_in_facts_is_one_line_exit_2(folder, command, name, shown):
    result = run_hwcheck(*command, "--facts", str(folder / name))
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert str(folder / name) in line and f"{shown} is beyond 64 bits" in line


@pytest.mark.parametrize(
    "command",
    [["doctor", "--json"], ["nfd", "-o", "-"], ["fit", "--params", "7e9", "--json"]],
    ids=["doctor", "nfd", "fit"],
)
def test_every_command_answers_for_a_memory_at_the_cap(folder, command):
    result = run_hwcheck(*command, "--facts", str(folder / "capped-facts.json"))
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and result.stdout


def test_the_api_refuses_a_facts_document_holding_an_integer_beyond_64_bits(folder):
    facts = json.loads((folder / "capped-facts.json").read_text())
    assert recommend_policy(facts, framework="torch").policy
    facts["gpus"][0]["memory_mib"] = MAX_INTEGER + 1
    with pytest.raises(FactsError, match=r"gpus\[0\]\.memory_mib: an integer beyond 64 bits"):
        recommend_policy(facts, framework="torch")


def test_a_verify_block_with_hostile_figures_reads_back_as_facts():
    """What doctor --verify --json writes reads back: texts cut to the schema's lengths, impossible
    figures (a negative or 401-digit memory, NaN) dropped, the rest kept."""
    from hwcheck.facts import validate_facts
    from hwcheck.facts.conform import verified_block

    facts = json.loads((Path(__file__).parent / "fixtures/facts/h100-anchor-torch211.json").read_text())
    seen = {
        "outcome": "ok",
        "framework": "torch",
        "arch_list": ["sm_90", "sm_" + "9" * 300],
        "devices": [
            {"kind": "gpu", "name": "H100", "memory_mib": -1, "arch": "x" * 300},
            {"kind": "gpu", "name": "H100", "memory_mib": int(DIGITS_401)},
            {"kind": "gpu", "name": "H100", "memory_mib": 81559},
        ],
        "loss": float("nan"),
        "seconds": -2.0,
        "warnings": ["w"] * 100,
    }
    with pytest.raises(FactsError):
        recommend_policy({**facts, "verified": seen}, framework="torch")
    block = verified_block(seen)
    validate_facts({**facts, "verified": block}, "the written facts")
    assert block["arch_list"] == ["sm_90", "sm_" + "9" * 61]
    assert [device.get("memory_mib") for device in block["devices"]] == [None, None, 81559]
    assert "loss" not in block and "seconds" not in block and len(block["warnings"]) == 64
    assert verified_block({"outcome": "ok", "framework": 3})["outcome"] == "ok"
