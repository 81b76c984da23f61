"""Numerics in bench, doctor --measure and doctor --verify: a precision whose numbers fail is never advised.

The judgement at each bound (the loss's departure from float32's, the gradients that underflow,
GradScaler's scale and skipped steps) is tested on summaries; the observer on real PyTorch steps
on this CPU (float16 autocast runs on the CPU in torch 2.13); and `hwcheck bench --script` end
to end with a healthy model, one whose float16 activations overflow (past 65504) and one whose
float16 gradients do.
"""

from __future__ import annotations

import copy
import functools
import json
import textwrap

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.engine.verdict import judge
from hwcheck.facts import schema_problem
from hwcheck.measure.numerics_verdict import DEPARTURE_LIMIT, UNDERFLOW_LIMIT, judge_one, judged

# --- the judgement, at each bound and just over it ------------------------------------------


def summary(
    losses, *, zero=0.0, steps=None, scaler=False, skipped=None, scale=None, bad_gradients=0, heads=None
):
    steps = len(losses) if steps is None else steps
    return {
        "steps": steps,
        "nonfinite_losses": sum(1 for v in losses if v is None),
        "first_nonfinite_loss_step": next((i + 1 for i, v in enumerate(losses) if v is None), None),
        "gradient_steps": steps,
        "nonfinite_gradient_steps": bad_gradients,
        "zero_gradient_fraction": zero,
        "scaler": scaler,
        "scaler_skipped_steps": skipped,
        "final_scale": scale,
        "loss_heads": heads if heads is not None else [losses],
    }


def entry(variant):
    return {
        "variant": variant,
        "policy": "float32" if variant.startswith("float32") else variant.removesuffix("-noscale"),
        "tf32": variant == "float32+tf32",
        "status": "ok",
        "reason": None,
        "speedup": 1.0,
        "ms_per_step": {"median": 1.0},
    }


def judge_pair(observed, reference=None, variant="mixed_bfloat16"):
    raws = {"float32": {"numerics": reference or summary([2.0, 1.0])}, variant: {"numerics": observed}}
    entries, findings = judged([entry("float32"), entry(variant)], raws, "model.py", "torch", "cpu")
    return entries[1], findings


def test_a_loss_departing_from_float32s_at_the_limit_holds_and_just_over_fails():
    assert DEPARTURE_LIMIT == 0.50
    at, findings = judge_pair(summary([2.0, 2.0]))  # 1.0 off float32's 1.0, over its largest loss 2.0
    assert at["numerics"]["departure"] == 0.5 and at["status"] == "ok" and not findings
    over, findings = judge_pair(summary([2.0, 2.000004]))
    assert over["status"] == "failed" and over["reason"].startswith("numerics: its loss departed 50%")
    (finding,) = findings
    assert (
        finding["id"] == "bench-numerics"
        and "bfloat16 autocast failed its numerics check" in finding["message"]
    )
    assert finding["remedy"] == "Train this model in float32 instead: its numbers held here."


def test_gradients_underflowing_at_the_limit_hold_and_just_over_fail():
    assert UNDERFLOW_LIMIT == 0.05
    reference = summary([2.0, 1.0], zero=0.10)
    at, _ = judge_pair(summary([2.0, 1.0], zero=0.15), reference, "mixed_float16")
    assert at["numerics"]["underflow_fraction"] == 0.05 and at["status"] == "ok"
    over, _ = judge_pair(summary([2.0, 1.0], zero=0.150002), reference, "mixed_float16")
    assert (
        over["status"] == "failed"
        and "were exactly zero than in float32 (they underflowed)" in over["reason"]
    )


def test_a_gradscaler_at_scale_one_holds_and_below_it_fails():
    at, _ = judge_pair(summary([2.0, 1.0], scaler=True, skipped=1, scale=1.0), variant="mixed_float16")
    assert at["status"] == "ok"
    below, findings = judge_pair(
        summary([2.0, 1.0], scaler=True, skipped=1, scale=0.5), variant="mixed_float16"
    )
    assert below["reason"] == (
        "numerics: GradScaler skipped 1 of 2 steps (gradients overflowed) and its scale fell to 0.5"
    )
    assert "float16 autocast with GradScaler failed" in findings[0]["message"]
    assert "bfloat16" not in findings[0]["remedy"]  # not measured here: float32 is what held


def test_a_gradscaler_that_skipped_every_step_fails_and_one_that_applied_one_holds():
    losses, reference = [2.0] * 10, summary([2.0] * 10)
    every, _ = judge_pair(summary(losses, scaler=True, skipped=10, scale=64.0, bad_gradients=10), reference,
                          "mixed_float16")  # fmt: skip
    assert every["status"] == "failed" and "skipped 10 of 10 steps" in every["reason"]
    nine, _ = judge_pair(summary(losses, scaler=True, skipped=9, scale=128.0, bad_gradients=9), reference,
                         "mixed_float16")  # fmt: skip
    assert nine["status"] == "ok"


def test_non_finite_gradients_fail_without_loss_scaling_only():
    unscaled, _ = judge_pair(summary([2.0, 1.0], bad_gradients=1))
    assert "gradients were NaN or inf in 1 of the 2 steps read, with no loss scaling" in unscaled["reason"]
    scaled, _ = judge_pair(summary([2.0, 1.0], scaler=True, skipped=1, scale=32768.0, bad_gradients=1),
                           variant="mixed_float16")  # fmt: skip
    assert scaled["status"] == "ok"  # GradScaler skipped that step: what it is for


def test_a_non_finite_loss_fails_and_names_its_step():
    failed, _ = judge_pair(summary([2.0, None, None]))
    assert failed["reason"] == "numerics: the loss was not finite (NaN or inf) at step 2"


def test_no_trajectory_is_compared_when_float32s_own_processes_disagree():
    reference = summary([2.0, 1.0], heads=[[2.0, 1.0], [2.0, 1.5]])  # a step that is not deterministic
    found, findings = judge_pair(summary([2.0, 2.9]), reference)
    assert found["numerics"]["departure"] is None and found["status"] == "ok" and not findings


def test_float16_without_scaling_is_observed_but_never_failed_for_pricing():
    found, findings = judge_pair(summary([2.0, 2.9]), variant="mixed_float16-noscale")
    assert found["numerics"]["failed"] and found["status"] == "ok" and not findings


def test_every_precision_failing_says_the_model_diverges():
    raws = {
        "float32": {"numerics": summary([2.0, None])},
        "mixed_bfloat16": {"numerics": summary([2.0, None])},
    }
    entries = [entry("float32"), entry("mixed_bfloat16")]
    _, findings = judged(entries, raws, "model.py", "torch", "cpu")
    assert len(findings) == 2 and all("the model itself diverges" in f["remedy"] for f in findings)


def test_the_verdict_never_picks_a_precision_whose_numbers_failed_and_says_it_once():
    raws = {
        "float32": {"numerics": summary([2.0, 1.0])},
        "mixed_bfloat16": {"numerics": summary([2.0, None])},
    }
    entries = [entry("float32"), entry("mixed_bfloat16")]
    entries[1]["ms_per_step"] = {"median": 0.5}  # the faster one
    entries, findings = judged(entries, raws, "model.py", "torch", "cpu")
    verdict = judge(entries, "mixed_bfloat16", "model.py")
    assert verdict["best"]["variant"] == "float32" and verdict["agreement"] == "disagrees"
    assert not verdict["findings"]  # bench-numerics (above) says what happened and what to use
    assert [f["id"] for f in findings] == ["bench-numerics"]


def test_one_verified_step_is_compared_with_float32s_loss_alone():
    assert judge_one(summary([1.0]), summary([1.0]), "mixed_bfloat16")["failed"] is None
    assert judge_one(summary([1.0]), summary([1.0]), "mixed_bfloat16")["departure"] == 0.0
    far = judge_one(summary([1.9]), summary([1.0]), "mixed_bfloat16")
    assert far["departure"] == 0.9 and far["failed"] is None  # one step's rounding is no trajectory
    # GradScaler's first scale (65536) is often too large: one skipped step is no failure.
    one = judge_one(summary([1.0], scaler=True, skipped=1, scale=32768.0, bad_gradients=1), summary([1.0]),
                    "mixed_float16")  # fmt: skip
    assert one["failed"] is None


# --- the observer on real PyTorch steps --------------------------------------------------------

torch = pytest.importorskip("torch")


def _model_step(policy, *, louder=1.0, expose=False):
    from hwcheck.measure.numerics import seed_everything

    seed_everything()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(16, 8), torch.randn(16, 1)
    dtype = torch.float16 if policy == "mixed_float16" else None
    scaler = torch.amp.GradScaler("cpu", enabled=dtype is not None)

    class Louder(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * louder / louder  # in float16, past 65504 and back: inf

    def train(state):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            hidden = Louder.apply(model[0](inputs))
            loss = torch.nn.functional.mse_loss(model[2](model[1](hidden)).float(), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    if expose:  # holds nothing in a closure: says what it trains with attributes
        step = functools.partial(train, None)
        step.model, step.scaler = model, scaler
        return step

    def step():
        return train(None)

    return step


def _observe(step, steps=6):
    from hwcheck.measure.numerics import Observer

    observer = Observer(step, "torch")
    for _ in range(steps):
        observer.observe(float(step()))
    return observer.summary()


def test_the_observer_finds_the_model_and_scaler_a_step_holds_and_sees_gradscaler_skip_every_step():
    healthy = _observe(_model_step("mixed_float16"))
    assert healthy["gradient_steps"] == 6 and healthy["nonfinite_gradient_steps"] == 0
    assert healthy["scaler"] and healthy["scaler_skipped_steps"] == 0 and healthy["final_scale"] == 65536.0
    overflowing = _observe(_model_step("mixed_float16", louder=1e6))
    assert overflowing["nonfinite_gradient_steps"] == 6 and overflowing["scaler_skipped_steps"] == 6
    assert overflowing["final_scale"] == 65536.0 / 2**6


def test_a_step_that_holds_nothing_is_read_through_its_attributes():
    exposed = _observe(_model_step("mixed_float16", louder=1e6, expose=True))
    assert exposed["scaler_skipped_steps"] == 6 and exposed["gradient_steps"] == 6
    hidden = functools.partial(lambda: 1.0)
    assert _observe(hidden)["gradient_steps"] == 0 and _observe(hidden)["scaler_skipped_steps"] is None


# --- hwcheck bench --script end to end -----------------------------------------------------

SCRIPT = """
import torch

SCALE = {scale}  # activations times this: past float16's largest value (65504) when large


def make_step(policy, loss_scaling=True):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 32), torch.randn(64, 1)
    dtype = {{"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}}.get(policy)
    scaler = torch.amp.GradScaler("cpu", enabled=dtype is torch.float16 and loss_scaling)

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.mse_loss((model(inputs) * SCALE).float() / SCALE, targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    return step
"""


def _bench(tmp_path, scale):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent(SCRIPT.format(scale=scale)))
    result = run_hwcheck(
        "bench", "--script", str(script), "--policies", "float32,mixed_bfloat16,mixed_float16",
        "--steps", "10", "--warmup", "1", "--rounds", "2", "--device", "cpu", "--json", timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    block = json.loads(result.stdout)
    assert schema_problem(block, "bench") is None
    return block


def test_bench_script_whose_float16_activations_overflow_reports_it_and_advises_bfloat16_or_float32(tmp_path):
    block = _bench(tmp_path, "1e6")
    results = {r["variant"]: r for r in block["results"]}
    assert results["mixed_float16"]["status"] == "failed"
    assert results["mixed_float16"]["numerics"]["nonfinite_losses"] == 1
    assert results["float32"]["numerics"]["failed"] is None
    assert results["mixed_bfloat16"]["numerics"]["failed"] is None
    (finding,) = [f for f in block["findings"] if f["id"] == "bench-numerics"]
    assert "float16 autocast with GradScaler failed its numerics check" in finding["message"]
    assert "the loss was not finite (NaN or inf) at step 1" in finding["message"]
    assert "bfloat16 autocast" in finding["remedy"] or "float32" in finding["remedy"]
    assert block["best"]["variant"] in ("float32", "mixed_bfloat16")


def test_bench_script_that_is_healthy_gets_no_numerics_finding(tmp_path):
    block = _bench(tmp_path, "1.0")
    assert not [f for f in block["findings"] if f["id"] == "bench-numerics"]
    for result in block["results"]:
        assert result["status"] == "ok" and result["numerics"]["failed"] is None
        assert result["numerics"]["gradient_steps"] > 0  # the closure's model was found
    bf16 = next(r for r in block["results"] if r["variant"] == "mixed_bfloat16")
    assert bf16["numerics"]["departure"] < DEPARTURE_LIMIT and bf16["numerics"]["compared_steps"] == 11


# --- doctor --measure and doctor --verify -----------------------------------------------------

CPU = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())
TORCH_BLOCK = json.loads((FIXTURES / "bench" / "cpu-amx-torch-float32-bf16.json").read_text())


def test_doctor_measure_never_follows_a_precision_whose_numbers_failed(tmp_path, capsys, monkeypatch):
    from hwcheck.cli import main
    from hwcheck.engine.measured import MEASURED_FOR

    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(tmp_path / "cache"))
    block = copy.deepcopy(TORCH_BLOCK)
    for result in block["results"]:
        if result["variant"] == "mixed_bfloat16":
            result.update(status="failed", reason="numerics: the loss was not finite (NaN or inf) at step 3")
            result["numerics"] = {"failed": "the loss was not finite (NaN or inf) at step 3"}
    block["verdict"], block["best"], block["comparisons"] = "unknown", None, []
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({**CPU, "measurements": {"bench": [{**block, "measured_for": MEASURED_FOR}]}}))
    assert main(["doctor", "--json", "--facts", str(path), "--framework", "torch"]) == 0
    recommendation = json.loads(capsys.readouterr().out)["recommendation"]
    assert recommendation["policy"] == "float32"
    assert recommendation["reasons"][0]["id"] == "measured-cpu-float32"
    assert "bfloat16 autocast failed its numerics check" in recommendation["reasons"][0]["message"]


def test_doctor_verify_records_the_steps_numerics_beside_float32s():
    from hwcheck.measure.verify import verify

    seen = verify("torch", "torch", "cpu", "mixed_float16", timeout=300)
    assert seen["outcome"] == "ok", seen.get("error")
    numerics = seen["numerics"]
    assert numerics["failed"] is None and numerics["compared_steps"] == 1
    assert numerics["scaler_skipped_steps"] in (0, 1) and numerics["nonfinite_losses"] == 0
    assert 0 <= numerics["departure"] < DEPARTURE_LIMIT


def test_the_observer_keeps_64_losses_and_reads_64_steps_gradients_and_no_more():
    from hwcheck.measure.numerics import GRADIENT_STEPS, LOSS_HEAD, Observer

    weight = torch.zeros(3, requires_grad=True)
    weight.grad = torch.tensor([0.0, 1.0, 2.0])
    for steps, kept in ((LOSS_HEAD, LOSS_HEAD), (LOSS_HEAD + 1, LOSS_HEAD)):
        observer = Observer(None, "torch", parameters=[weight])
        for _ in range(steps):
            observer.observe(1.0)
        found = observer.summary()
        assert found["steps"] == steps and len(found["loss_heads"][0]) == kept
        assert found["gradient_steps"] == min(steps, GRADIENT_STEPS)
        assert found["zero_gradient_fraction"] == round(1 / 3, 6)


def test_doctor_verify_records_a_jax_steps_numerics_beside_float32s():
    pytest.importorskip("jax")
    from hwcheck.measure.verify import verify

    seen = verify("jax", "jax", "cpu", "mixed_bfloat16", timeout=300)
    assert seen["outcome"] == "ok", seen.get("error")
    numerics = seen["numerics"]
    assert numerics["failed"] is None and numerics["compared_steps"] == 1
    assert numerics["nonfinite_gradient_steps"] == 0 and numerics["underflow_fraction"] is not None
    assert 0 <= numerics["departure"] < DEPARTURE_LIMIT


KERAS_STEP = """
import json, sys
import keras, numpy as np
from hwcheck.measure.numerics import Observer


def make_step(target):  # as hwcheck bench's make_step returns it: a closure holding the model
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy("mixed_float16")
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, dtype="float32")(hidden))
    model.compile(optimizer=keras.optimizers.SGD(1e-3), loss="mse")
    data = np.random.default_rng(0).standard_normal((16, 8)).astype("float32")
    # Targets this large make the scaled gradient (scale 32768) overflow float16 in the Dense
    # layer below the float32 output, while the loss, computed in float32, stays finite.
    targets = np.full((16, 1), target, "float32")

    def step():
        return model.train_on_batch(data, targets)

    return step


step = make_step(float(sys.argv[1]))
observer = Observer(step, keras.config.backend())
for _ in range(6):
    loss = step()
    observer.observe(float(loss[0] if isinstance(loss, list) else loss))
print(json.dumps(observer.summary()))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_the_observer_reads_keras_loss_scale_optimizer_skipping_every_step_on_each_backend(backend):
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("keras") is None or importlib.util.find_spec(backend) is None:
        pytest.skip(f"Keras or its {backend} backend is not installed")

    def observe(target):
        quiet = {"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
        env = {**os.environ, "KERAS_BACKEND": backend, **quiet}
        done = subprocess.run(
            [sys.executable, "-c", KERAS_STEP, target], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    healthy, overflowing = observe("1.0"), observe("1e4")
    assert healthy["scaler"] == "LossScaleOptimizer" and healthy["scaler_skipped_steps"] == 0
    assert overflowing["nonfinite_losses"] == 0 and overflowing["scaler_skipped_steps"] == 6
    assert overflowing["final_scale"] == healthy["final_scale"] / 2**6
    raws = {"mixed_float16": {"numerics": overflowing}}
    (judged_overflow,) = judged([entry("mixed_float16")], raws, "t")[0]
    assert judged_overflow["numerics"]["failed"].startswith("LossScaleOptimizer skipped 6 of 6 steps")
