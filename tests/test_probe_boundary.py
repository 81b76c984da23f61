"""The probe boundary: whatever a probe raises becomes its own error status, and the rest stay."""

from __future__ import annotations

import sys

import pytest
from test_probe_frameworks import TORCH_VERSION_PY, dist, real_build_info, tensorflow

from hwcheck.probes import ERROR, OK, ProbeResult, frameworks
from hwcheck.probes.literals import module_constants
from hwcheck.probes.runner import collect


def _raises(error: BaseException):
    def probe() -> ProbeResult:
        raise error

    return probe


def _quick() -> ProbeResult:
    return ProbeResult(OK, {"quick": {"answered": True}})


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("this error cannot be written")


@pytest.mark.parametrize(
    "error",
    [
        MemoryError(),
        RecursionError("maximum recursion depth exceeded"),
        OverflowError("int too large to convert to float"),
        SystemExit(3),  # a library that calls sys.exit() inside a probe
        ValueError("x" * 5_000_000),  # a 5 MB message
        ValueError("line one\n\x1b[31mline two\x07"),
        _UnprintableError(),
    ],
    ids=["memory", "recursion", "overflow", "exit", "huge", "control", "unprintable"],
)
def test_any_exception_in_a_probe_is_its_error_and_the_others_stay(error):
    collected = collect(probes={"bad": _raises(error), "first": _quick, "second": _quick}, timeout=30.0)
    bad = collected.results["bad"]
    assert bad.status == ERROR, bad
    assert bad.reason.startswith(f"probe failed: {type(error).__name__}")
    assert len(bad.reason) <= 400  # one line a person reads, not the 5 MB the error held
    assert bad.reason.isprintable()
    assert collected.results["first"].status == collected.results["second"].status == OK
    assert collected.facts["quick"] == {"answered": True}


def test_a_probe_that_returns_no_probe_result_is_an_error():
    collected = collect(probes={"odd": lambda: {"gpus": []}, "first": _quick}, timeout=30.0)
    assert collected.results["odd"].status == ERROR
    assert "not a ProbeResult" in collected.results["odd"].reason
    assert collected.facts["quick"] == {"answered": True}


# Expressions nested past what CPython's parser takes: compiling a file holding one fails
# as a whole, with MemoryError or RecursionError, not SyntaxError.
DEEP_EXPRESSIONS = {
    "signs": "-" * 300_000 + "1",
    "sums": "1+" * 120_000 + "1",
    "nots": "not " * 60_000 + "1",
    "continued": "(" + "1+\n" * 60_000 + "1)",
}


@pytest.mark.parametrize("expression", DEEP_EXPRESSIONS.values(), ids=DEEP_EXPRESSIONS.keys())
def test_torch_stays_in_the_facts_beside_a_deep_expression_in_its_version_py(tmp_path, expression):
    dist(tmp_path, "torch", "2.5.1")
    (tmp_path / "torch").mkdir()
    source = TORCH_VERSION_PY.format(version="2.5.1", cuda="12.4") + f"deep = {expression}\n"
    (tmp_path / "torch" / "version.py").write_text(source)
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.status == OK
    torch = result.facts["frameworks"]["torch"]
    assert (torch["version"], torch["cuda"]) == ("2.5.1", "12.4")


@pytest.mark.parametrize("expression", DEEP_EXPRESSIONS.values(), ids=DEEP_EXPRESSIONS.keys())
def test_tensorflow_stays_in_the_facts_beside_a_deep_expression_in_its_build_info(tmp_path, expression):
    source = real_build_info("tensorflow-2.21.0") + f"\ndeep = {expression}\n"
    tensorflow(tmp_path, "tensorflow", "2.21.0", source)
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.status == OK
    facts = result.facts["frameworks"]["tensorflow"]
    read = (facts["version"], facts["cuda_build"], facts["cuda"], facts["cudnn"])
    assert read == ("2.21.0", True, "12.5.1", "9")


def test_a_file_of_nothing_but_a_deep_expression_is_a_value_error(tmp_path):
    path = tmp_path / "version.py"
    path.write_text("x = " + DEEP_EXPRESSIONS["signs"] + "\n")
    with pytest.raises(ValueError, match="nested too deeply"):
        module_constants(path)
    assert sys.getrecursionlimit() >= 1000  # the parser's failure left the interpreter as it was
