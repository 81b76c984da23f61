"""What a child or a cache hands back is checked against its schema (base/answers.py) before any
use: a distributed rank's answer, fit --measure's child and its cache entries. What does not fit
is a measurement that failed, said in one line, never cached, never a traceback.

The forged answers are what a child running the user's interpreter (or a process that took its
place, or a file edited in the cache) could write; they are written by real child processes here
where the parent reads a pipe, and replayed in-process where it reads a function's return.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from hwcheck.base.answers import Unusable, checked, problem
from hwcheck.cli import main
from hwcheck.facts import schema_problem
from hwcheck.measure import distributed, fit_measure

GPT2 = FIXTURES / "models" / "gpt2.json"

# --------------------------------------------------------------------------- the one check


@pytest.mark.parametrize(
    ("value", "schema", "why"),
    [
        ({"a": math.nan}, {"type": "object"}, "answer.a: nan is not a finite number"),
        ([math.inf], {"type": "array", "items": {"type": "number"}}, "answer[0]: inf is not a finite"),
        ({"n": 2**64}, {"type": "object"}, "answer.n: an integer beyond 64 bits"),
        (True, {"type": "integer"}, "expected integer, not boolean"),
        (1, {"enum": [True]}, "is not one of True"),
        ("x" * 9, {"type": "string", "maxLength": 8}, "a text of 9 characters"),
        ([1, 2, 3], {"type": "array", "maxItems": 2}, "3 items, not at most 2"),
        (-1, {"type": "number", "minimum": 0}, "-1 is not at least 0"),
        ({"k": {1, 2}}, {"type": "object"}, "answer.k: set is no JSON value"),
        ({"extra": 1}, {"type": "object", "additionalProperties": False}, "answer.extra: not expected"),
        ({}, {"type": "object", "required": ["outcome"]}, "answer: outcome is missing"),
    ],
)
def test_what_does_not_fit_is_one_line_naming_the_part(value, schema, why):
    with pytest.raises(Unusable) as raised:
        checked(value, schema)
    assert why in str(raised.value) and "\n" not in str(raised.value)
    assert problem(value, schema) == str(raised.value)


def test_what_fits_is_handed_back_as_it_is():
    schema = {"type": "object", "properties": {"seconds": {"type": ["number", "null"], "minimum": 0}}}
    for value in ({"seconds": 0.5}, {"seconds": None}, {"seconds": 3, "other": [1, "a", None]}):
        assert checked(value, schema) is value


# --------------------------------------------------------------------------- distributed ranks

FORGER = """
import json, sys
job = json.loads(sys.stdin.readline())
forged = json.loads({forged!r})
rank = job["rank"]
honest = {{"rank": rank, "outcome": "ok", "pairs": [], "all_reduce": {{"ok": True, "seconds": 0.01}}}}
answer = forged if rank == 0 else honest
if rank == 1:
    answer["pairs"] = [{{"ranks": [0, 1], "ok": True, "seconds": 0.02}}]
print(json.dumps({{"distributed": answer}}), flush=True)
"""


def forged_check(monkeypatch, forged: str) -> dict:
    """The check with rank 0 answering `forged` (JSON text, NaN allowed as Python writes it)."""
    script = FORGER.format(forged=forged)
    monkeypatch.setattr(distributed, "child_argv", lambda module: [sys.executable, "-c", script])
    return distributed.check("torch", "cpu", [], timeout=60)


@pytest.mark.parametrize(
    ("forged", "why"),
    [
        ('{"outcome": "ok", "pairs": "not a list"}', "its answer.pairs: expected array"),
        ('{"outcome": "ok", "pairs": [{"ranks": [0, 1], "seconds": "fast"}]}', "seconds: expected number"),
        ('{"outcome": "ok", "all_reduce": {"ok": true, "seconds": 1e308}}', "is not from 0 to 60"),
        ('{"outcome": "ok", "all_reduce": {"ok": true, "seconds": -5}}', "-5 is not from 0 to 60"),
        ('{"outcome": "ok", "all_reduce": {"ok": true, "seconds": NaN}}', None),  # the reader refuses NaN
        ('{"outcome": "ok", "all_reduce": {"ok": true, "seconds": 1e999}}', None),  # Infinity, likewise
        ('["a", "list"]', "its answer: expected object"),
        ('{"outcome": "fine"}', "its answer.outcome: 'fine' is not one of"),
    ],
)
def test_a_forged_rank_answer_is_that_ranks_failure_and_never_reaches_the_facts(monkeypatch, forged, why):
    seen = forged_check(monkeypatch, forged)
    assert seen["outcome"] == "error" and seen["error"].startswith("rank 0: ")
    if why is not None:
        assert why in seen["error"] and "\n" not in seen["error"]
    assert isinstance(seen["all_reduce"]["seconds"], float) and 0 <= seen["all_reduce"]["seconds"] < 60
    assert schema_problem({"schema_version": 1, "distributed": seen}, "facts") is None
    json.dumps(seen, allow_nan=False)  # what doctor --json writes


def test_honest_forged_ranks_still_read_as_a_pair_that_worked(monkeypatch):
    seen = forged_check(
        monkeypatch, '{"rank": 0, "outcome": "ok", "pairs": [], "all_reduce": {"ok": true, "seconds": 0.03}}'
    )
    assert seen["outcome"] == "ok" and seen["all_reduce"] == {"ok": True, "seconds": 0.03}
    assert seen["pairs"][0]["ok"] is True and seen["pairs"][0]["seconds"] == 0.02


# --------------------------------------------------------------------------- fit --measure


def fit_measure_json(capsys) -> dict:
    argv = ["fit", "--model", str(GPT2), "--batch", "1", "--seq-len", "64", "--policy", "float32"]
    assert main([*argv, "--measure", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["measured"]


GOOD = {
    "outcome": "ok",
    "peak_bytes": 700_000_000,
    "how": "the peak resident set less the resident set before the model was built",
    "parts": {"weights": 497_759_232, "gradients": 497_759_232, "optimizer": 995_518_464},
    "loss": 10.9,
    "seconds": 1.5,
    "versions": {"torch": "2.5.1", "transformers": "4.46.0"},
}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(folder))
    return folder


def answering(monkeypatch, answer: object) -> list[int]:
    """fit_measure's child replaced by one that answers `answer`; the list counts its runs."""
    runs: list[int] = []

    def run_child(job: dict, timeout: float) -> object:
        runs.append(1)
        return json.loads(json.dumps(answer))

    monkeypatch.setattr(fit_measure, "run_child", run_child)
    return runs


def entries(cache: Path) -> list[dict]:
    """The fit --measure entries in the cache (the parsed rules beside them are left out)."""
    found = [json.loads(path.read_text()) for path in cache.glob("*.json")]
    return [entry for entry in found if "measured" in entry["document"]]


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({**GOOD, "parts": ["weights", 1]}, "its answer.parts: expected object"),
        ({**GOOD, "parts": {"weights": "many"}}, "its answer.parts.weights: expected integer"),
        ({**GOOD, "versions": "torch 2.5"}, "its answer.versions: expected object"),
        ({**GOOD, "peak_bytes": -1}, "its answer.peak_bytes: -1 is not from 1"),
        ({**GOOD, "seconds": "slow"}, "its answer.seconds: expected number"),
        ("just text", "its answer: expected object"),
    ],
)
def test_a_forged_fit_child_answer_is_a_failed_measurement_never_cached(
    monkeypatch, capsys, cache, answer, why
):
    answering(monkeypatch, answer)
    measured = fit_measure_json(capsys)
    assert measured["status"] == "failed" and why in measured["error"]
    assert entries(cache) == []


@pytest.mark.parametrize(
    "forged",
    [
        lambda entry: entry["measured"].update(parts="not a mapping"),
        lambda entry: entry["measured"].update(versions=["torch"]),
        lambda entry: entry.update(measured=["not", "a", "mapping"]),
        lambda entry: entry["measured"].update(loss=math.nan),
        lambda entry: entry["measured"].update(peak_bytes=math.inf),
    ],
    ids=["parts", "versions", "measured", "nan-loss", "infinite-peak"],
)
def test_a_forged_cache_entry_is_measured_again_never_a_traceback(monkeypatch, capsys, cache, forged):
    runs = answering(monkeypatch, GOOD)
    assert fit_measure_json(capsys)["status"] == "measured"
    (path,) = [
        path for path in cache.glob("*.json") if "measured" in json.loads(path.read_text())["document"]
    ]
    entry = json.loads(path.read_text())
    forged(entry["document"])
    path.write_text(json.dumps(entry))  # Python writes NaN and Infinity as such
    measured = fit_measure_json(capsys)
    assert measured["status"] == "measured" and len(runs) == 2
    assert entries(cache)[0]["document"]["measured"]["parts"] == GOOD["parts"]  # rewritten whole
    assert fit_measure_json(capsys)["status"] == "reused" and len(runs) == 2


def test_a_forged_answer_is_said_as_a_failure_in_the_text_output(monkeypatch, capsys, cache):
    answering(monkeypatch, {**GOOD, "parts": "nope"})
    monkeypatch.setenv("COLUMNS", "80")
    argv = ["fit", "--model", str(GPT2), "--batch", "1", "--seq-len", "64", "--policy", "float32"]
    assert main([*argv, "--measure"]) == 0
    out = capsys.readouterr().out
    said = " ".join(out[out.index("measured: failed") :].split())
    assert said.startswith("measured: failed on the CPU (the child answered unusably: its answer.parts:")
    assert "nothing was cached" in said and all(len(line) <= 80 for line in out.splitlines())


# --------------------------------------------------------------------------- bench's measuring child

BENCH_FORGER = """
import json, sys
job = json.loads(sys.stdin.readline())
forged = json.loads({forged!r})
print(json.dumps({{"loaded": "ok"}}), flush=True)
for line in sys.stdin:
    if json.loads(line).get("done"):
        break
    print(json.dumps({{"batch": {{"times_ms": [1.0], "status": "ok", "reason": None}}}}), flush=True)
print(json.dumps({{"result": forged}}), flush=True)
"""


@pytest.mark.parametrize(
    ("forged", "why"),
    [
        (
            '{"status": "ok", "framework_versions": ["torch"]}',
            "its result.framework_versions: expected object",
        ),
        ('{"status": "ok", "times_ms": [1.0, "fast"]}', "its result.times_ms[1]: expected number"),
        ('{"status": "ok", "rounds_ms": [-3]}', "its result.rounds_ms[0]: -3 is not at least 0"),
        ('{"status": "ok", "notes": 7}', "its result.notes: expected array"),
        (
            '{"status": "ok", "numerics": {"loss_heads": "x"}}',
            "its result.numerics.loss_heads: expected array",
        ),
        ('{"status": "great"}', "its result.status: 'great' is not one of"),
    ],
)
def test_a_forged_bench_result_is_that_precisions_failure_in_one_line(monkeypatch, forged, why):
    from hwcheck.measure import interpreter
    from hwcheck.measure.runner import Worker

    script = BENCH_FORGER.format(forged=forged)
    monkeypatch.setattr(interpreter, "child_argv", lambda module: [sys.executable, "-c", script])
    worker = Worker({"framework": "torch", "policy": "float32"}, 60, lambda done: None)
    assert worker.loaded() and worker.batch(1) == [1.0]
    result = worker.finish()
    assert result["status"] == "failed" and why in result["reason"] and "\n" not in result["reason"]


def test_an_honest_bench_result_is_handed_back(monkeypatch):
    from hwcheck.measure import interpreter
    from hwcheck.measure.runner import Worker

    honest = '{"status": "ok", "times_ms": [1.0], "rounds_ms": [1.0], "framework_versions": {"torch": "2.5"}}'
    script = BENCH_FORGER.format(forged=honest)
    monkeypatch.setattr(interpreter, "child_argv", lambda module: [sys.executable, "-c", script])
    worker = Worker({"framework": "torch", "policy": "float32"}, 60, lambda done: None)
    assert worker.loaded() and worker.batch(1) == [1.0]
    assert worker.finish() == json.loads(honest)


# --------------------------------------------------------------------------- every cache


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_cache_entry_holding_nan_or_infinity_is_ignored_by_every_reader(cache, constant):
    from hwcheck.base.tables import cache_key, cached_document, store_document

    key = cache_key("measure", b"forged")
    store_document(key, {"format": 1, "block": {"seconds": 1.0}})
    assert cached_document(key) == {"format": 1, "block": {"seconds": 1.0}}
    path = cache / f"{key}.json"
    path.write_text(path.read_text().replace("1.0", constant))  # an edited file: JSON has no such number
    assert cached_document(key) is None
