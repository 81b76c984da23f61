"""`hwcheck fit --measure` and `--solve`: the measured peak of real steps beside the estimate,
agreeing with an independent measurement of the same steps (benchmarks/fit_measured.py's), and
the largest batch whose estimate fits."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.recommendation.fit import Plan, estimate, solve
from hwcheck.recommendation.model_shape import from_config

MODELS = FIXTURES / "models"
REPO = FIXTURES.parent.parent
GIB = 2**30


def test_solve_batch_returns_a_batch_that_fits_and_whose_next_does_not():
    shape = from_config(json.loads((MODELS / "llama-2-7b.json").read_text()))
    plan = Plan(policy="mixed_bfloat16", gpus=8, zero=3, seq_len=1024)
    memory = 80 * GIB
    batch = solve(shape, plan, memory, "batch")
    assert batch and batch > 1
    assert estimate(shape, replace(plan, batch=batch), memory)["verdict"] == "yes"
    assert estimate(shape, replace(plan, batch=batch + 1), memory)["verdict"] != "yes"
    length = solve(shape, replace(plan, batch=1), memory, "seq-len")
    assert estimate(shape, replace(plan, seq_len=length), memory)["verdict"] == "yes"
    assert estimate(shape, replace(plan, seq_len=length + 1), memory)["verdict"] != "yes"


def test_solve_is_none_when_not_even_one_fits():
    shape = from_config(json.loads((MODELS / "llama-2-7b.json").read_text()))
    assert solve(shape, Plan(), 8 * GIB, "batch") is None


def test_solving_a_70b_config_takes_well_under_a_second():
    config = {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
              "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
              "vocab_size": 128256}  # Llama 3 70B's shape  # fmt: skip
    shape = from_config(config)
    plan = Plan(gpus=64, zero=3, seq_len=8192, checkpointing=True)
    started = time.perf_counter()
    batch = solve(shape, plan, 80 * GIB, "batch")
    seconds = time.perf_counter() - started
    assert batch and batch >= 1
    assert seconds < 1.0  # about 0.02 s idle here: ten times that is well inside


def test_the_cli_writes_the_solved_batch_and_refuses_without_a_model():
    result = run_hwcheck("fit", "--model", str(MODELS / "llama-2-7b.json"), "--gpu-memory", "80",
                         "--gpus", "8", "--zero", "3", "--policy", "bf16", "--solve", "batch",
                         "--json")  # fmt: skip
    document = json.loads(result.stdout)
    assert document["solved"]["what"] == "batch"
    assert document["plan"]["batch"] == document["solved"]["value"] > 1
    assert document["fits"] is True
    refused = run_hwcheck("fit", "--params", "7e9", "--gpu-memory", "80", "--solve", "batch")
    assert refused.returncode == 2 and "--solve" in refused.stderr
    refused = run_hwcheck("fit", "--params", "7e9", "--measure")
    assert refused.returncode == 2 and "--measure" in refused.stderr


transformers = pytest.importorskip("transformers", reason="the models are built with transformers")
torch = pytest.importorskip("torch")


def independent_run(name: str, precision: str, batch: int, tokens: int, steps: int) -> dict:
    """benchmarks/fit_measured.py's own child: the same steps, measured its own way, and counted."""
    import subprocess

    code = (
        "import json, sys; sys.path.insert(0, 'benchmarks'); import fit_measured; "
        f"fit_measured.SIZES['cpu'][{name!r}] = ({batch}, {tokens}); "
        f"print(json.dumps(fit_measured.train({name!r}, 'cpu', {precision!r}, {steps}, count=True)))"
    )
    child = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                           timeout=600, check=True)  # fmt: skip
    return json.loads(child.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["gpt2", "bert-base", "t5-small"])
def test_measure_prints_both_figures_and_agrees_with_an_independent_measurement(name, tmp_path):
    config = MODELS / f"{name}.json"
    result = run_hwcheck("fit", "--model", str(config), "--batch", "1", "--seq-len", "64",
                         "--policy", "float32", "--measure", "--no-cache", "--json", timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    measured = document["measured"]
    assert measured["status"] == "measured" and measured["device"] == "cpu"
    assert measured["parts"]["weights"] == document["per_device"]["weights"]
    other = independent_run(name, "float32", 1, 64, 3)
    assert abs(measured["peak_bytes"] - other["measured"]) <= 0.10 * other["measured"], (measured, other)
    # torch's own allocations, counted around the benchmark's steps and around fit's: one figure.
    counted = measured["counted_peak_bytes"]
    assert abs(counted - other["counted"]) <= 0.10 * other["counted"], (counted, other["counted"])
    text = run_hwcheck("fit", "--model", str(config), "--batch", "1", "--seq-len", "64",
                       "--policy", "float32", "--measure", timeout=600)  # fmt: skip
    assert "reused from the cache" in text.stdout  # the second run reuses the first
    assert "estimate" in text.stdout and "measured" in text.stdout
    assert all(len(line) <= 80 for line in text.stdout.splitlines() if "measured" in line)


def test_the_verdict_is_tight_above_the_studys_80_percent_and_headroom_overrides_it():
    shape = from_config(json.loads((MODELS / "llama-2-7b.json").read_text()))
    plan = Plan(policy="mixed_bfloat16", gpus=8, zero=3, seq_len=1024)
    parts = estimate(shape, plan, 80 * GIB)["per_device"]
    allocated = parts["total"] - parts["fragmentation"]
    assert estimate(shape, plan, parts["total"])["verdict"] == "tight"  # about 91 %: fits, tight
    assert estimate(shape, plan, int(allocated / 0.79))["verdict"] == "yes"
    # Beyond the total, "no" only where the estimate less its largest measured over-estimate
    # (10.5 %) is beyond the memory too; tight between.
    assert estimate(shape, plan, parts["total"] - 1)["verdict"] == "tight"
    assert estimate(shape, plan, int(allocated / 1.105) + 2**20)["verdict"] == "tight"
    assert estimate(shape, plan, int(allocated / 1.105) - 2**20)["verdict"] == "no"
    chosen = replace(plan, headroom=0.10)  # --headroom given: the headroom alone decides
    assert estimate(shape, chosen, parts["total"])["verdict"] == "yes"
