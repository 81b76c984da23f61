"""Every emitted script run for real on the CPU, in subprocesses: TensorFlow (Keras 3 and
tf_keras), the backend-neutral Keras 3 script under KERAS_BACKEND=tensorflow, jax and torch,
PyTorch and JAX.

The runs start together in the background (two at a time) when the first test needs one;
each test then reads the output of its run. A backend case runs its three scripts (one per
policy) as plain scripts in one process through runpy, then calls make_step like
`hwcheck bench --script` does, so each framework is imported once.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import run_hwcheck
from hwcheck.emit import ScriptSpec, emit_script
from hwcheck.recommendation import POLICIES

SAPPHIRE_RAPIDS = str(Path(__file__).parent / "emitted/facts/sapphire-rapids-vm-cpu-only.json")
OVERFLOW_FROM = 30  # --inject-overflow: the float16 loss overflows from this step on


@dataclass(frozen=True)
class Case:
    """One emitted script and how to run it."""

    spec: ScriptSpec | None  # None: emitted through `hwcheck config` (cli_args)
    needs: tuple[str, ...]
    script_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cli_args: tuple[str, ...] = ()
    # For a backend case: the framework whose three policy scripts run in one process.
    framework: str | None = None


TF = ("tensorflow", "keras")
POLICY_STEPS = 40  # each policy of a backend case
# Runs each script given as [path, *args] in this process as `python path args` would, then
# builds each policy's step through the first script's make_step and runs it three times.
DRIVER = """
import json, runpy, sys
runs = json.loads(sys.argv[1])
for path, *args in runs:
    print(f"=== {path}", flush=True)
    sys.argv = [path, *args]
    runpy.run_path(path, run_name="__main__")
print("=== make_step", flush=True)
module = runpy.run_path(runs[0][0], run_name="emitted_script")
for policy, loss_scaling in (
    ("float32", True), ("mixed_bfloat16", True), ("mixed_float16", True), ("mixed_float16", False)
):
    step = module["make_step"](policy, loss_scaling=loss_scaling)
    losses = [float(step()) for _ in range(3)]
    print(f"make_step policy={policy} loss_scaling={int(loss_scaling)} "
          f"losses={','.join(f'{loss:.6g}' for loss in losses)}", flush=True)
"""
CASES = {
    "keras-backend-tensorflow": Case(None, TF, env={"KERAS_BACKEND": "tensorflow"}, framework="keras"),
    "keras-backend-jax": Case(None, ("jax", "keras"), env={"KERAS_BACKEND": "jax"}, framework="keras"),
    "keras-backend-torch": Case(None, ("torch", "keras"), env={"KERAS_BACKEND": "torch"}, framework="keras"),
    "jax-policies": Case(None, ("jax", "optax"), framework="jax"),
    "keras2-float16": Case(
        ScriptSpec("keras", "mixed_float16", keras_major=2, steps=60),
        ("tensorflow", "tf_keras"),
        env={"TF_USE_LEGACY_KERAS": "1"},
    ),
    "custom-float32": Case(ScriptSpec("keras-custom", "float32", steps=60), TF),
    "custom-bfloat16": Case(ScriptSpec("keras-custom", "mixed_bfloat16", steps=60), TF),
    "custom-float16": Case(ScriptSpec("keras-custom", "mixed_float16", steps=60), TF),
    "custom-float16-overflow": Case(
        ScriptSpec("keras-custom", "mixed_float16", has_bfloat16=True, steps=100),
        TF,
        script_args=("--inject-overflow", str(OVERFLOW_FROM)),
    ),
    "custom-keras2-float16-overflow": Case(
        ScriptSpec("keras-custom", "mixed_float16", keras_major=2, steps=100),
        ("tensorflow", "tf_keras"),
        script_args=("--inject-overflow", str(OVERFLOW_FROM)),
        env={"TF_USE_LEGACY_KERAS": "1"},
    ),
    "torch-float32": Case(ScriptSpec("torch", "float32", steps=60), ("torch",)),
    "torch-bfloat16": Case(ScriptSpec("torch", "mixed_bfloat16", steps=60), ("torch",)),
    "torch-float16-overflow": Case(
        ScriptSpec("torch", "mixed_float16", has_bfloat16=True, steps=100),
        ("torch",),
        script_args=("--inject-overflow", str(OVERFLOW_FROM)),
    ),
    "jax-float16-overflow": Case(
        ScriptSpec("jax", "mixed_float16", steps=100),
        ("jax", "optax"),
        script_args=("--inject-overflow", str(OVERFLOW_FROM)),
    ),
    # Scripts written for an Apple (mps) or Intel (xpu) GPU, run here where neither exists:
    # each says it falls back to the CPU and trains there.
    "torch-mps-float32": Case(ScriptSpec("torch", "float32", device="mps", steps=60), ("torch",)),
    "torch-xpu-bfloat16": Case(ScriptSpec("torch", "mixed_bfloat16", device="xpu", steps=60), ("torch",)),
    "keras-torch-mps-float32": Case(
        ScriptSpec("keras", "float32", device="mps", steps=60),
        ("torch", "keras"),
        env={"KERAS_BACKEND": "torch"},
    ),
    "keras-torch-xpu-bfloat16": Case(
        ScriptSpec("keras", "mixed_bfloat16", device="xpu", steps=60),
        ("torch", "keras"),
        env={"KERAS_BACKEND": "torch"},
    ),
    "jax-mps-float32": Case(ScriptSpec("jax", "float32", device="mps", steps=60), ("jax", "optax")),
    "torch-cpu-float32": Case(ScriptSpec("torch", "float32", device="cpu", steps=60), ("torch",)),
    "cli-keras-custom": Case(
        None,
        TF,
        cli_args=("--framework", "keras-custom", "--facts", SAPPHIRE_RAPIDS, "--steps", "60"),
    ),
}
FLOAT16_OVERFLOW = {
    "custom-float16-overflow": "mixed_bfloat16",
    "custom-keras2-float16-overflow": "float32",
    "torch-float16-overflow": "mixed_bfloat16",
    "jax-float16-overflow": "float32",
}
INITIAL_SCALE = {"keras": 2.0**15, "keras-custom": 2.0**15, "torch": 2.0**16, "jax": 2.0**15}
# Run the slowest first: the backend cases, float16 under XLA and the long overflow runs.
ORDER = sorted(
    CASES,
    key=lambda name: (CASES[name].framework is None, "overflow" not in name, "float16" not in name),
)


@dataclass
class Run:
    """What one script printed, parsed."""

    returncode: int
    stdout: str
    stderr: str

    def records(self, kind: str) -> list[dict[str, str]]:
        """The key=value fields of each line of `kind` (start, step, switch, rebuilt, done)."""
        found = []
        for line in self.stdout.splitlines():
            head = line.split(" because: ")[0]
            tokens = head.split()
            if not tokens:
                continue
            line_kind = tokens[0].split("=")[0]
            if line_kind == kind:
                found.append(dict(token.split("=", 1) for token in tokens if "=" in token))
        return found

    @property
    def steps(self) -> list[dict[str, str]]:
        return self.records("step")

    def sections(self) -> dict[str, Run]:
        """A backend case's output per script (keyed by the script's POLICY) and make_step."""
        found: dict[str, Run] = {}
        for chunk in self.stdout.split("=== ")[1:]:
            head, _, body = chunk.partition("\n")
            name = "make_step" if head == "make_step" else Path(head).stem
            found[name] = Run(self.returncode, body, self.stderr)
        return found


def missing(modules: tuple[str, ...]) -> list[str]:
    return [name for name in modules if importlib.util.find_spec(name) is None]


def execute(name: str, case: Case, directory: Path) -> Run:
    """Emit the script for `case` into `directory` and run it to the end."""
    script = directory / f"train_{name.replace('-', '_')}.py"
    command = [sys.executable, str(script), *case.script_args]
    if case.framework is not None:
        runs = []
        for policy in POLICIES:
            (directory / name).mkdir(exist_ok=True)
            path = directory / name / f"{policy}.py"
            path.write_text(emit_script(ScriptSpec(case.framework, policy, steps=POLICY_STEPS)))
            runs.append([str(path)])
        command = [sys.executable, "-c", DRIVER, json.dumps(runs)]
    elif case.spec is not None:
        script.write_text(emit_script(case.spec))
    else:
        emitted = run_hwcheck("config", "-o", str(script), *case.cli_args)
        assert emitted.returncode == 0, emitted.stderr
    environment = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",  # the CPU path, as on CI machines
        "TF_CPP_MIN_LOG_LEVEL": "2",
        **case.env,
    }
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=environment,
        cwd=directory,
        timeout=300,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> dict[str, Future[Run]]:
    """The selected cases' runs, started in the background two at a time."""
    wanted = {
        item.callspec.params["case"]
        for item in request.session.items
        if hasattr(item, "callspec") and "case" in item.callspec.params and item.module is request.module
    }
    directory = tmp_path_factory.mktemp("emitted")
    pool = ThreadPoolExecutor(max_workers=2)
    futures = {
        name: pool.submit(execute, name, CASES[name], directory)
        for name in ORDER
        if name in wanted and not missing(CASES[name].needs)
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def finished(runs: dict[str, Future[Run]], case: str) -> Run:
    if case not in runs:
        pytest.skip(f"not installed: {', '.join(missing(CASES[case].needs))}")
    run = runs[case].result()
    assert run.returncode == 0, f"{case} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run


def losses(steps: list[dict[str, str]]) -> list[float]:
    return [float(step["loss"]) for step in steps]


def falls(values: list[float], *, by: float = 0.03) -> bool:
    """Whether the last ten values average clearly below the first ten."""
    return statistics.fmean(values[-10:]) < statistics.fmean(values[:10]) - by


BACKEND_CASES = [name for name, case in CASES.items() if case.framework is not None]


@pytest.mark.parametrize("case", BACKEND_CASES)
def test_every_policy_trains_on_every_backend(runs, case):
    sections = finished(runs, case).sections()
    assert set(sections) == {"float32", "mixed_bfloat16", "mixed_float16", "make_step"}
    for policy in POLICIES:
        run = sections[policy]
        steps = run.steps
        assert [int(step["step"]) for step in steps] == list(range(1, POLICY_STEPS + 1)), policy
        assert {step["policy"] for step in steps} == {policy}
        values = losses(steps)
        assert all(math.isfinite(value) for value in values), policy
        assert falls(values), (policy, values)
        if policy == "mixed_float16":
            scale = INITIAL_SCALE[CASES[case].framework]
            assert float(steps[0]["loss_scale"]) == scale
    # No CPU computes float16 fast: the float16 script says so.
    assert "mixed_float16 runs on the CPU" in sections["mixed_float16"].stderr
    # The make_step contract: every policy, and float16 without loss scaling, gives finite losses.
    made = sections["make_step"].records("make_step")
    assert [(m["policy"], m["loss_scaling"]) for m in made] == [
        ("float32", "1"),
        ("mixed_bfloat16", "1"),
        ("mixed_float16", "1"),
        ("mixed_float16", "0"),
    ]
    for record in made:
        values = [float(value) for value in record["losses"].split(",")]
        assert len(values) == 3 and all(math.isfinite(value) for value in values), record


@pytest.mark.parametrize("case", [name for name in CASES if name not in BACKEND_CASES])
def test_script_trains_with_a_finite_falling_loss(runs, case):
    run = finished(runs, case)
    steps = run.steps
    expected = CASES[case].spec.steps if CASES[case].spec else 60
    assert [int(step["step"]) for step in steps] == list(range(1, expected + 1))
    assert all(math.isfinite(value) for value in losses(steps))
    assert run.records("done") == [{"steps": str(expected), "policy": steps[-1]["policy"]}]
    # Under the first policy (for the overflow runs: until the overflow starts).
    trained = [
        step
        for step in steps
        if step["policy"] == steps[0]["policy"]
        and (case not in FLOAT16_OVERFLOW or int(step["step"]) < OVERFLOW_FROM)
    ]
    assert falls(losses(trained)), losses(trained)


@pytest.mark.parametrize("case", ["keras2-float16", "custom-float16", *FLOAT16_OVERFLOW])
def test_float16_prints_the_live_loss_scale_each_step(runs, case):
    run = finished(runs, case)
    float16 = [step for step in run.steps if step["policy"] == "mixed_float16"]
    assert float16 and all("loss_scale" in step for step in float16)
    assert float(float16[0]["loss_scale"]) == INITIAL_SCALE[CASES[case].spec.framework]
    # No CPU computes float16 fast: the script says so.
    assert "warning: no" in run.stderr and "mixed_float16 runs on the CPU" in run.stderr


@pytest.mark.parametrize("case", ["custom-float16"])
def test_float16_without_overflow_keeps_float16(runs, case):
    run = finished(runs, case)
    assert run.records("switch") == []
    assert {step["policy"] for step in run.steps} == {"mixed_float16"}
    assert sum(step["skipped"] == "1" for step in run.steps) <= 3  # calibration at most


@pytest.mark.parametrize("case", list(FLOAT16_OVERFLOW))
def test_injected_overflow_makes_the_guard_fall_back_and_training_go_on(runs, case):
    run = finished(runs, case)
    steps = run.steps
    spec = CASES[case].spec
    overflowed = [
        step for step in steps if step["policy"] == "mixed_float16" and int(step["step"]) >= OVERFLOW_FROM
    ]
    # Every overflowing step is skipped and halves the scale (tf_keras never goes below 1).
    assert overflowed and all(step["skipped"] == "1" for step in overflowed)
    scales = [INITIAL_SCALE[spec.framework]] + [float(step["loss_scale"]) for step in overflowed]
    floor = 1.0 if spec.keras_major == 2 and spec.framework == "keras-custom" else 0.0
    assert scales[1:] == [max(old / 2, floor) for old in scales[:-1]]
    (switch,) = run.records("switch")
    fallback = FLOAT16_OVERFLOW[case]
    assert switch == {"step": overflowed[-1]["step"], "from": "mixed_float16", "to": fallback}
    after = [step for step in steps if int(step["step"]) > int(switch["step"])]
    assert after and {step["policy"] for step in after} == {fallback}
    assert all(math.isfinite(value) for value in losses(after))
    # Training goes on from where float16 stopped: below the loss the frozen weights gave.
    assert statistics.fmean(losses(after)[-10:]) < statistics.fmean(losses(overflowed)) - 0.03
    if spec.framework == "keras-custom":
        # The rebuilt optimizer carries the old one's state: its step count goes on from the
        # float16 steps (Keras 3 counts the applied ones; tf_keras counts skipped ones too).
        float16 = [step for step in steps if step["policy"] == "mixed_float16"]
        applied = sum(step["skipped"] == "0" for step in float16)
        expected = applied if spec.keras_major == 3 else len(float16)
        assert run.records("rebuilt") == [{"policy": fallback, "optimizer_iterations": str(expected)}]


@pytest.mark.parametrize("case", ["cli-keras-custom"])
def test_cli_emitted_script_runs_as_emitted(runs, case):
    run = finished(runs, case)
    # On the AMX CPU of the facts file hwcheck advises mixed_bfloat16.
    assert run.records("start")[0]["policy"] == "mixed_bfloat16"


# The fallback warning each framework's script prints when the advised device is absent.
FALLBACK = {
    "torch-mps-float32": "written for the mps device, but this PyTorch",
    "torch-xpu-bfloat16": "written for the xpu device, but this PyTorch",
    "keras-torch-mps-float32": "written for the mps device, but Keras on torch sees no accelerator",
    "keras-torch-xpu-bfloat16": "written for the xpu device, but Keras on torch sees no accelerator",
    "jax-mps-float32": "written for JAX's METAL platform, but JAX",
}


@pytest.mark.parametrize("case", list(FALLBACK))
def test_script_for_an_absent_device_says_it_falls_back_to_the_cpu(runs, case):
    run = finished(runs, case)
    assert FALLBACK[case] in run.stderr and "trains on the CPU" in run.stderr
    assert "hwcheck doctor --framework" in run.stderr
    assert run.steps[0]["policy"] == CASES[case].spec.policy
    (start,) = run.records("start")
    # torch and JAX name the device they train on; Keras says whether it found an accelerator.
    assert start.get("device", "cpu") == "cpu" and start.get("gpu", "0") == "0"


@pytest.mark.parametrize("case", ["torch-cpu-float32", "torch-float32"])
def test_script_warns_of_a_fallback_only_when_written_for_an_accelerator(runs, case):
    run = finished(runs, case)
    # Written for the CPU: nothing to warn of. Written for a CUDA GPU (the default): none here.
    warned = "written for the cuda device" in run.stderr and "trains on the CPU" in run.stderr
    assert warned == (CASES[case].spec.device == "gpu")
