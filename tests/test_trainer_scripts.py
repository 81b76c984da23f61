"""The trainer scripts (issue 22): Lightning, the Hugging Face Trainer, Accelerate and DeepSpeed,
each run for real on the CPU in float32 and mixed_bfloat16, and through make_step.

One process per trainer (started in the background, two at a time, when the first test
needs one) runs the float32 and the mixed_bfloat16 script as `python NAME.py` would, then
builds a step per policy through make_step as `hwcheck bench --script` does. Accelerate also
runs under `accelerate launch --config_file NAME.accelerate.yaml`. What cannot run here
(float16 needs a GPU with the Trainer) is compiled and validated by the library itself.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.emit import ScriptSpec, emit_script
from hwcheck.emit.trainer_files import config_files

STEPS = 40
TRAINER_NEEDS = {
    "lightning": ("lightning",),
    "hf-trainer": ("transformers", "accelerate"),
    "accelerate": ("accelerate",),
    "deepspeed": ("deepspeed",),
}
# Runs each [path] as `python path --steps N`, then make_step per policy from the first script.
DRIVER = """
import json, runpy, sys
runs, steps, policies = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
for path in runs:
    print(f"=== {path}", flush=True)
    sys.argv = [path, "--steps", steps]
    runpy.run_path(path, run_name="__main__")
print("=== make_step", flush=True)
module = runpy.run_path(runs[0], run_name="emitted_script")
for policy, loss_scaling in policies:
    step = module["make_step"](policy, loss_scaling=loss_scaling)
    losses = [float(step()) for _ in range(3)]
    print(f"make_step policy={policy} loss_scaling={int(loss_scaling)} "
          f"losses={','.join(f'{loss:.6g}' for loss in losses)}", flush=True)
"""
# make_step's policies per trainer: float16 runs on the CPU under Accelerate (autocast float16)
# and Lightning (which says so and trains in bf16-mixed); the Trainer refuses it without a GPU.
MAKE_STEP = {
    "lightning": [
        ("float32", True),
        ("mixed_bfloat16", True),
        ("mixed_float16", True),
        ("mixed_float16", False),
    ],
    "hf-trainer": [("float32", True), ("mixed_bfloat16", True)],
    "accelerate": [
        ("float32", True),
        ("mixed_bfloat16", True),
        ("mixed_float16", True),
        ("mixed_float16", False),
    ],
    "deepspeed": [("float32", True), ("mixed_bfloat16", True)],
}
ENVIRONMENT = {"CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class Run:
    """What one process printed."""

    returncode: int
    stdout: str
    stderr: str

    def sections(self) -> dict[str, list[dict[str, str]]]:
        """The key=value lines of each section (a script's policy, or make_step)."""
        found: dict[str, list[dict[str, str]]] = {}
        for chunk in self.stdout.split("=== ")[1:]:
            head, _, body = chunk.partition("\n")
            name = "make_step" if head == "make_step" else Path(head).stem.rpartition("-")[2]
            found[name] = records(body)
        return found


def records(text: str) -> list[dict[str, str]]:
    """The key=value fields of each start, step, done and make_step line, with its kind."""
    found = []
    for line in text.splitlines():
        kind = line.split(" ")[0].split("=")[0]
        if kind in ("start", "step", "done", "make_step"):
            found.append(dict(token.split("=", 1) for token in line.split() if "=" in token) | {"kind": kind})
    return found


def missing(trainer: str) -> list[str]:
    return [name for name in TRAINER_NEEDS[trainer] if importlib.util.find_spec(name) is None]


def deepspeed_cannot_run() -> str | None:
    """Why DeepSpeed cannot train here, or None (on a CPU it compiles its shared-memory op with C++)."""
    if missing("deepspeed"):
        return "DeepSpeed is not installed"
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return "no C++ compiler: DeepSpeed builds its CPU communication op at first use"
    return None


def emit(spec: ScriptSpec, path: Path) -> Path:
    """Write the script for `spec` at `path` with its config files beside it."""
    path.write_text(emit_script(spec))
    for name, text in config_files(spec, path.stem).items():
        (path.parent / name).write_text(text)
    return path


def execute(trainer: str, directory: Path) -> Run:
    folder = directory / trainer
    folder.mkdir()
    scripts = [
        str(emit(ScriptSpec(trainer, policy, device="cpu", steps=STEPS), folder / f"train-{policy}.py"))
        for policy in ("float32", "mixed_bfloat16")
    ]
    command = [sys.executable, "-c", DRIVER, json.dumps(scripts), str(STEPS), json.dumps(MAKE_STEP[trainer])]
    return _run(command, folder)


def launch_accelerate(directory: Path) -> Run:
    folder = directory / "accelerate-launch"
    folder.mkdir()
    script = emit(ScriptSpec("accelerate", "mixed_bfloat16", device="cpu", steps=STEPS), folder / "train.py")
    launcher = [sys.executable, "-m", "accelerate.commands.launch"]
    return _run([*launcher, "--config_file", str(folder / "train.accelerate.yaml"), str(script)], folder)


def _run(command: list[str], folder: Path) -> Run:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, **ENVIRONMENT},
        cwd=folder,
        timeout=600,
        check=False,
    )
    return Run(result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Future[Run]]:
    """Every trainer's run, started in the background two at a time."""
    directory = tmp_path_factory.mktemp("trainers")
    pool = ThreadPoolExecutor(max_workers=2)
    futures = {}
    for trainer in ("deepspeed", "hf-trainer", "lightning", "accelerate"):
        if not missing(trainer) and (trainer != "deepspeed" or deepspeed_cannot_run() is None):
            futures[trainer] = pool.submit(execute, trainer, directory)
    if not missing("accelerate"):
        futures["accelerate-launch"] = pool.submit(launch_accelerate, directory)
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def finished(runs: dict[str, Future[Run]], name: str) -> Run:
    if name not in runs:
        trainer = name.removesuffix("-launch")
        pytest.skip(
            deepspeed_cannot_run() if trainer == "deepspeed" else f"not installed: {missing(trainer)}"
        )
    run = runs[name].result()
    assert run.returncode == 0, f"{name} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run


def falls(values: list[float]) -> bool:
    """Whether the last ten losses average clearly below the first ten."""
    return sum(values[-10:]) / 10 < sum(values[:10]) / 10 - 0.03


def check_trains(lines: list[dict[str, str]], policy: str) -> None:
    steps = [line for line in lines if line["kind"] == "step"]
    assert [int(step["step"]) for step in steps] == list(range(1, STEPS + 1)), policy
    assert {step["policy"] for step in steps} == {policy}
    values = [float(step["loss"]) for step in steps]
    assert all(math.isfinite(value) for value in values) and falls(values), (policy, values)
    assert [line for line in lines if line["kind"] == "done"] == [
        {"kind": "done", "steps": str(STEPS), "policy": policy}
    ]


@pytest.mark.parametrize("trainer", list(TRAINER_NEEDS))
def test_the_trainer_script_trains_on_the_cpu_in_float32_and_bfloat16(runs, trainer):
    sections = finished(runs, trainer).sections()
    for policy in ("float32", "mixed_bfloat16"):
        check_trains(sections[policy], policy)
    made = [(line["policy"], line["loss_scaling"]) for line in sections["make_step"]]
    assert made == [(policy, str(int(scaling))) for policy, scaling in MAKE_STEP[trainer]]
    for line in sections["make_step"]:
        values = [float(value) for value in line["losses"].split(",")]
        assert len(values) == 3 and all(math.isfinite(value) for value in values), line


def test_each_trainer_says_the_precision_in_its_own_words(runs):
    starts = {}
    for trainer in TRAINER_NEEDS:
        if trainer in runs:
            sections = finished(runs, trainer).sections()
            starts[trainer] = {policy: sections[policy][0] for policy in ("float32", "mixed_bfloat16")}
    if "lightning" in starts:
        assert starts["lightning"]["mixed_bfloat16"]["precision"] == "bf16-mixed"
        assert starts["lightning"]["float32"]["precision"] == "32-true"
    if "hf-trainer" in starts:
        assert starts["hf-trainer"]["mixed_bfloat16"]["bf16"] == "True"
        assert starts["hf-trainer"]["float32"]["bf16"] == starts["hf-trainer"]["float32"]["fp16"] == "False"
    if "accelerate" in starts:
        assert starts["accelerate"]["mixed_bfloat16"]["mixed_precision"] == "bf16"
        assert starts["accelerate"]["float32"]["mixed_precision"] == "no"
    if "deepspeed" in starts:
        assert starts["deepspeed"]["mixed_bfloat16"]["zero_stage"] == "0"
    if not starts:
        pytest.skip("no trainer is installed")


def test_accelerate_launch_reads_the_config_file_beside_the_script(runs):
    run = finished(runs, "accelerate-launch")
    lines = records(run.stdout)
    # The launcher passes the file's mixed_precision on; the script does not override it.
    assert lines[0]["mixed_precision"] == "bf16" and lines[0]["processes"] == "1"
    check_trains(lines, "mixed_bfloat16")


@pytest.mark.parametrize("trainer", list(TRAINER_NEEDS))
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16", "mixed_float16"])
def test_every_trainer_script_compiles_in_every_policy(trainer, policy):
    # float16 cannot run on this CPU under every trainer: the script must still be valid Python.
    for tf32 in (False, True):
        text = emit_script(ScriptSpec(trainer, policy, has_tf32=tf32))
        compile(text, f"{trainer}-{policy}.py", "exec")
        assert "def make_step(policy: str, *, loss_scaling: bool = True)" in text


@pytest.mark.parametrize(
    ("typed", "framework"),
    [
        ("pytorch-lightning", "lightning"),
        ("pl", "lightning"),
        ("hf", "hf-trainer"),
        ("transformers", "hf-trainer"),
        ("ds", "deepspeed"),
        ("accelerate", "accelerate"),
    ],
)
def test_config_takes_the_words_users_type_for_the_trainers(tmp_path, typed, framework):
    result = run_hwcheck("config", "--framework", typed, "--policy", "bf16", "-o", str(tmp_path / "t.py"))
    assert result.returncode == 0, result.stderr
    settings = json.loads((tmp_path / "t.settings.json").read_text())
    assert settings["framework"] == framework
    assert (tmp_path / "t.py").read_text().startswith('"""Train with ')
    beside = {"deepspeed": "t.deepspeed.json", "accelerate": "t.accelerate.yaml"}.get(framework)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        filter(None, ["t.py", "t.settings.json", beside])
    )


def test_an_existing_config_file_beside_the_script_is_kept_without_force(tmp_path):
    (tmp_path / "t.deepspeed.json").write_text("{}")
    result = run_hwcheck("config", "--framework", "deepspeed", "-o", str(tmp_path / "t.py"))
    assert result.returncode == 2 and "t.deepspeed.json: already exists" in result.stderr
    assert (tmp_path / "t.deepspeed.json").read_text() == "{}" and not (tmp_path / "t.py").exists()


def test_zero_and_offload_reach_the_deepspeed_config(tmp_path):
    result = run_hwcheck(
        "config", "--framework", "ds", "--zero", "2", "--offload", "-o", str(tmp_path / "t.py")
    )
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "t.deepspeed.json").read_text())
    assert config["zero_optimization"] == {
        "stage": 2,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
    }
    # ZeRO-Offload steps the optimizer on the CPU with DeepSpeed's CPU Adam, not torch's.
    assert "torch_adam" not in config["optimizer"]["params"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--framework", "torch", "--zero", "2"), "--zero"),
        (("--framework", "deepspeed", "--offload"), "--offload"),
        (("--framework", "deepspeed", "--zero", "7"), "--zero"),
    ],
)
def test_a_zero_option_that_cannot_apply_is_one_line_naming_it(tmp_path, args, named):
    result = run_hwcheck("config", *args, "-o", str(tmp_path / "t.py"))
    assert result.returncode == 2 and named in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "t.py").exists()


def test_the_deepspeed_config_takes_the_zero_stage_fit_finds_cheapest(tmp_path):
    llama = FIXTURES / "models" / "llama-2-7b.json"
    h100 = FIXTURES / "facts" / "h100-anchor-torch211.json"  # one H100 80GB visible
    args = ("config", "--framework", "ds", "--policy", "bf16", "--facts", str(h100))
    result = run_hwcheck(*args, "--model", str(llama), "-o", str(tmp_path / "big.py"))
    assert result.returncode == 0, result.stderr
    # 16 bytes a parameter is 108 GB: on one GPU only ZeRO-Offload leaves the 16-bit weights alone.
    config = json.loads((tmp_path / "big.deepspeed.json").read_text())
    assert config["zero_optimization"] == {
        "stage": 1,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
    }
    result = run_hwcheck(*args, "--params", "350M", "-o", str(tmp_path / "small.py"))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "small.deepspeed.json").read_text())["zero_optimization"] == {"stage": 0}
