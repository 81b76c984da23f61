"""hwcheck against the corpus of real machines (tests/corpus): each case must get the right answer.

The cases hwcheck gets wrong today are listed in KNOWN_WRONG and run as strict expected
failures: a case that starts passing fails the suite until it is taken off the list.
"""

from __future__ import annotations

import json

import pytest
from corpus.score import CASES_DIR, advise, judge, load_cases, totals

from hwcheck.facts import load_facts

# Cases hwcheck answers wrongly today, with the class of knowledge it lacks.
KNOWN_WRONG = {
    "tf213-rtx4090-only-cuda124": "TF's CUDA 11 libraries missing while CUDA 12 is installed: only a warning",
    "tf24-v100-container-cuda101": "CUDA 10.1 libraries for a CUDA 11.0 build: only a warning",
    "keras3-tf216-wsl-cuda118-installed": "CUDA 11.8 libraries for a CUDA 12.3 build: not named as the error",
    "tf215-wsl-driver-cuda114": "WSL2: the remedy does not say the driver is updated on Windows",
    "tf23-rtx4090-cuda101-build": "a TF release without kernels for CC 8.9 (built with CUDA 10.1)",
    "tf214-nightly-h100-ptx-jit": "TF without CC 9.0 kernels JIT-compiles PTX for minutes: not reported",
    "tf215rc0-8xh100-ptx-jit": "TF without CC 9.0 kernels JIT-compiles PTX for minutes: not reported",
    "tf211-a10-mixed-bfloat16-slow": "bf16 on GPU is slow in TF 2.11: still recommends mixed_bfloat16",
    "tf211-a100-mixed-bfloat16-slow": "bf16 on GPU is slow in TF 2.11: still recommends mixed_bfloat16",
    "torch271-cu118-tesla-k80": "PyTorch wheel without kernels for an old GPU (sm_37)",
    "torch13-tesla-k40m": "PyTorch wheel without kernels for an old GPU (sm_35)",
    "torch26-cu126-rtx5080-windows": "PyTorch wheel without kernels for a new GPU (sm_120)",
    "torch221-cu121-rtx5080-laptop-windows": "PyTorch wheel without kernels for a new GPU (sm_120)",
    "torch-cu128-kaggle-p100": "PyTorch wheel without kernels for an old GPU (sm_60)",
    "jax049-cuda11-tesla-k80": "JAX minimum compute capability and driver",
    "jax-rtx2070-driver450-nvcc111": "JAX: driver 450 alone says CUDA 11.0, older than the toolkit",
    "jax0432-conda-cpu-jaxlib": "JAX: CPU-only jaxlib on a machine with a working NVIDIA driver",
}

CASES = load_cases()
NAMES = [case.name for case in CASES]


def _param(case):
    marks = ()
    if case.name in KNOWN_WRONG:
        marks = (pytest.mark.xfail(strict=True, reason=KNOWN_WRONG[case.name]),)
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_case_gets_the_right_answer(case, monkeypatch):
    monkeypatch.delenv("HWCHECK_RULES", raising=False)
    verdict = judge(case, advise(case))
    assert verdict.right, f"{case.name} ({case.source}): {'; '.join(verdict.problems)}"


def test_every_case_has_one_facts_file_and_one_answer():
    files = sorted(path.stem for path in CASES_DIR.glob("*.json"))
    assert files == sorted(NAMES)
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_facts_file_is_valid(case):
    # load_facts checks the schema; the raw JSON must say something about the machine.
    assert load_facts(case.facts_path)["schema_version"] == 1
    document = json.loads(case.facts_path.read_text())
    assert set(document) - {"schema_version"}, f"{case.name} has no facts"


def test_known_wrong_names_real_cases():
    assert set(KNOWN_WRONG) <= set(NAMES)


def test_the_corpus_covers_what_the_issue_asks():
    assert len(CASES) >= 30
    assert sum(case.healthy for case in CASES) >= 10
    assert {case.framework for case in CASES} == {"tensorflow", "torch", "jax", "keras"}
    facts = [json.loads(case.facts_path.read_text()) for case in CASES]
    systems = {(doc.get("os") or {}).get("system") for doc in facts}
    assert {"Linux", "Windows"} <= systems
    assert any((doc.get("os") or {}).get("wsl") for doc in facts)


def test_totals_count_false_alarms_and_caught_errors():
    # Score a healthy case and a failing one against made-up answers to see the totals move.
    from hwcheck.recommendation import Finding, Recommendation

    healthy = next(case for case in CASES if case.healthy)
    failing = next(case for case in CASES if case.exit_status == 1)
    alarm = Recommendation("float32", "cpu", False, findings=(Finding("x", "error", "boom"),))
    quiet = Recommendation("float32", "cpu", False)
    result = totals([judge(healthy, alarm), judge(failing, quiet)])
    assert result.false_alarms == 1 and result.healthy == 1
    assert result.errors == 1 and result.errors_caught == 0 and result.right == 0
