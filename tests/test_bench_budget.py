"""A --budget is kept, the frameworks' imports counted: doctor --measure and bench end on time.

The measuring children run a make_step script whose import sleeps, as a framework's import
takes seconds on a loaded machine (TensorFlow's took most of doctor's 60 s on a 2-core VM), and
whose step sleeps: sleeping costs no CPU, so the bounds hold however busy the machine is. The
framework named is JAX, whose child imports nothing for float32 and bfloat16 on a CPU until the
script does, so only the script's sleeps take time.
"""

from __future__ import annotations

import json
import time

from conftest import FIXTURES
from hwcheck.measure.session import bench

FACTS = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())
# Python start-up of the children, the grace for handing over a result, killing them: generous.
MARGIN = 6.0
SCRIPT = """
import os
import time

time.sleep(float(os.environ["SLOW_IMPORT_SECONDS"]))  # a framework's import


def make_step(policy, *, loss_scaling=True):
    state = {"w": 1.0}

    def step():
        time.sleep(float(os.environ["STEP_SECONDS"]))
        state["w"] *= 0.9
        return state["w"]

    return step
"""


def _bench(tmp_path, monkeypatch, *, import_seconds: float, step_seconds: float, budget: float, **options):
    script = tmp_path / "slow_model.py"
    script.write_text(SCRIPT)
    monkeypatch.setenv("SLOW_IMPORT_SECONDS", str(import_seconds))
    monkeypatch.setenv("STEP_SECONDS", str(step_seconds))
    started = time.monotonic()
    block = bench(
        script=str(script),
        framework="jax",
        policies="float32,mixed_bfloat16",
        device="cpu",
        facts=FACTS,
        budget=budget,
        **options,
    )
    return block, time.monotonic() - started


def test_an_import_longer_than_the_budget_ends_at_the_budget(tmp_path, monkeypatch):
    block, elapsed = _bench(tmp_path, monkeypatch, import_seconds=20, step_seconds=0.001, budget=3)
    assert elapsed < 3 + MARGIN, elapsed  # without the budget counting the import: 20 s and more
    for result in block["results"]:
        assert result["status"] == "failed"
        assert result["reason"].startswith("the --budget ran out while loading"), result["reason"]
    assert block["verdict"] == "unknown"


def test_a_slow_import_leaves_the_rounds_their_time_in_one_process_each(tmp_path, monkeypatch):
    # Loading takes most of what a second process per precision would need: one each, and the
    # rest of the budget goes to rounds, enough of them to compare round by round.
    block, elapsed = _bench(
        tmp_path,
        monkeypatch,
        import_seconds=4,
        step_seconds=0.002,
        budget=12,
        quick=True,
        rounds=9,
        replicas=2,
    )
    assert elapsed < 12 + MARGIN, elapsed
    assert all(result["status"] == "ok" for result in block["results"]), block["results"]
    assert block["rounds"] >= 3
    assert "bench-few-rounds" not in {finding["id"] for finding in block["findings"]}
    # The same steps in both precisions: within the noise of each other.
    assert block["verdict"] in ("tie", "too noisy")


def test_a_budget_that_fits_too_few_rounds_says_so(tmp_path, monkeypatch):
    # Half-second steps: the warm-up leaves time for a round or two, fewer than a verdict pairs.
    block, elapsed = _bench(tmp_path, monkeypatch, import_seconds=0, step_seconds=0.5, budget=5, quick=True)
    assert elapsed < 5 + MARGIN, elapsed
    assert all(result["status"] == "ok" for result in block["results"]), block["results"]
    assert block["rounds"] < 3
    (finding,) = [f for f in block["findings"] if f["id"] == "bench-few-rounds"]
    assert f"allowed {block['rounds']} round" in finding["message"] and "--budget" in finding["remedy"]
