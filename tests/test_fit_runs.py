"""fit's verdict against published runs that trained or ran out of memory (tests/fixtures/fit_runs.toml):
a run that trained is never called "no", one that ran out of memory never "yes"; "tight" is
within the estimate's stated error either way."""

from __future__ import annotations

import json
import tomllib

import pytest

from conftest import FIXTURES, run_hwcheck

RUNS = tomllib.loads((FIXTURES / "fit_runs.toml").read_text())["run"]
FACTS = FIXTURES / "facts" / "h100-anchor-torch211.json"


def test_every_run_names_its_source_and_what_it_says():
    for run in RUNS:
        assert run["source"].startswith("https://") and run["says"] and run["settings"]
        assert run["outcome"] in ("trained", "oom")


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run["name"])
def test_fit_never_calls_a_published_run_wrongly(run):
    memory = str(run["gpu_memory_gib"])
    arguments = ("--model", str(FIXTURES / "models" / run["model"]), "--facts", str(FACTS))
    result = run_hwcheck("fit", *arguments, "--gpu-memory", memory, *run["args"], "--json")
    verdict = json.loads(result.stdout)["verdict"]
    wrong = "no" if run["outcome"] == "trained" else "yes"
    assert verdict != wrong, (run["name"], verdict)
