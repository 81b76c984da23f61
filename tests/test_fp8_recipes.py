"""FP8 recipes in the emitted scripts (issue 22 part 2): written only where recommendation.fp8
says the GPUs the process sees run FP8, refused with the reason everywhere else.

This CPU has no FP8 Tensor Cores: torchao's recipe runs here for real (torchao emulates its
float8 matmuls on the CPU); Transformer Engine's cannot (it needs a CUDA GPU and is not
installable here), so its scripts are compiled, their recipe read from the code, and the
settings checked by Lightning's and Accelerate's own validation.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"  # Hopper, torch on CUDA 13: FP8 available
A10G = ROOT / "tests" / "corpus" / "cases" / "healthy-jax0433-aws-8xa10g.json"  # Ampere: no FP8
CPU_ONLY = ROOT / "tests" / "emitted" / "facts" / "sapphire-rapids-vm-cpu-only.json"
RECIPES = [
    ("torch", "torchao"),
    ("torch", "transformer-engine"),
    ("lightning", "transformer-engine"),
    ("accelerate", "torchao"),
    ("accelerate", "transformer-engine"),
]
ENVIRONMENT = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1"}


def emit(tmp_path: Path, framework: str, recipe: str, *extra: str) -> Path:
    script = tmp_path / f"{framework}_{recipe.replace('-', '_')}.py"
    result = run_hwcheck(
        "config", "--framework", framework, "--fp8", recipe, "--facts", str(H100), "-o", str(script), *extra
    )
    assert result.returncode == 0, result.stderr
    return script


@pytest.mark.parametrize(("framework", "recipe"), RECIPES)
def test_on_hopper_each_recipe_is_written_and_compiles(tmp_path, framework, recipe):
    script = emit(tmp_path, framework, recipe)
    compile(script.read_text(), str(script), "exec")
    settings = json.loads(script.with_name(f"{script.stem}.settings.json").read_text())
    assert settings["policy"]["value"] == "mixed_bfloat16" and settings["fp8"]["value"] == recipe
    assert "compute capability 8.9 or higher" in settings["fp8"]["reason"]


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        (CPU_ONLY, "no NVIDIA GPU is visible to the process"),
        (A10G, "NVIDIA A10G (CC 8.6) has none"),
    ],
)
@pytest.mark.parametrize(("framework", "recipe"), RECIPES)
def test_without_fp8_tensor_cores_the_recipe_is_refused_with_the_reason(
    tmp_path, facts, reason, framework, recipe
):
    script = tmp_path / "t.py"
    result = run_hwcheck(
        "config", "--framework", framework, "--fp8", recipe, "--facts", str(facts), "-o", str(script)
    )
    assert result.returncode == 2 and not script.exists()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("hwcheck: error: --fp8: FP8 training is not available") and reason in line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("--framework", "lightning", "--fp8", "torchao"),
            "torchao is written for --framework torch, accelerate",
        ),
        (("--framework", "hf", "--fp8", "transformer-engine"), "not hf-trainer"),
        (("--framework", "torch", "--fp8", "torchao", "--policy", "fp32"), "use --policy mixed_bfloat16"),
    ],
)
def test_a_recipe_that_does_not_apply_is_refused_naming_fp8(tmp_path, args, said):
    result = run_hwcheck("config", *args, "--facts", str(H100), "-o", str(tmp_path / "t.py"))
    assert result.returncode == 2 and "--fp8" in result.stderr and said in result.stderr


needs_torchao = pytest.mark.skipif(
    importlib.util.find_spec("torchao") is None, reason="torchao is not installed (pip install torchao)"
)


@needs_torchao
def test_the_torchao_recipe_trains_here_with_float8_linear_layers(tmp_path):
    script = emit(tmp_path, "torch", "torchao", "--steps", "12")
    probe = (
        "import runpy, sys\n"
        f"module = runpy.run_path({str(script)!r}, run_name='emitted')\n"
        "trainer = module['Trainer']('mixed_bfloat16')\n"
        "print('layers=' + ','.join(type(m).__name__ for m in trainer.model))\n"
        f"sys.argv = [{str(script)!r}]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=ENVIRONMENT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # torchao's own conversion: the 32->64 and 64->64 layers run in float8, the 64->10 output does not.
    assert "layers=Float8Linear,ReLU,Float8Linear,ReLU,Linear" in result.stdout
    losses = [
        float(line.split("loss=")[1]) for line in result.stdout.splitlines() if line.startswith("step=")
    ]
    assert len(losses) == 12 and all(loss == loss and loss < 10 for loss in losses)
    assert "start policy=mixed_bfloat16 fp8=torchao" in result.stdout
    assert "float8 matmuls are emulated" in result.stderr


def _calls(tree: ast.AST) -> dict[str, ast.Call]:
    return {ast.unparse(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)}


def test_the_transformer_engine_recipe_is_fp8_autocast_with_delayed_scaling(tmp_path):
    calls = _calls(ast.parse(emit(tmp_path, "torch", "transformer-engine").read_text()))
    autocast = calls["te.fp8_autocast"]
    assert {k.arg: ast.unparse(k.value) for k in autocast.keywords} == {
        "enabled": "True",
        "fp8_recipe": "recipe",
    }
    recipe = {k.arg: ast.unparse(k.value) for k in calls["DelayedScaling"].keywords}
    assert recipe == {"fp8_format": "Format.HYBRID", "amax_history_len": "16", "amax_compute_algo": "'max'"}
    assert "te.Linear" in calls


@pytest.mark.parametrize(("framework", "recipe"), [("torch", "transformer-engine"), *RECIPES[2:]])
def test_where_fp8_cannot_run_the_script_stops_with_the_reason(tmp_path, framework, recipe):
    needs = {"lightning": "lightning", "accelerate": "accelerate"}.get(framework)
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    script = emit(tmp_path, framework, recipe, "--steps", "3")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=ENVIRONMENT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1 and "compute capability 8.9 or higher" in result.stderr
    assert "Traceback" not in result.stderr


def test_lightning_accepts_the_transformer_engine_precision():
    lightning = pytest.importorskip("lightning.fabric.connector")
    import typing

    assert "transformer-engine" in typing.get_args(lightning._PRECISION_INPUT_STR)


def test_accelerate_accepts_the_recipes_and_the_fp8_config_file(tmp_path):
    pytest.importorskip("accelerate")
    import typing

    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import AORecipeKwargs, TERecipeKwargs
    from accelerate.utils.dataclasses import AmaxComputeAlgorithm, FP8Format

    AORecipeKwargs()
    # TERecipeKwargs itself wants Transformer Engine installed: its accepted values are checked.
    assert "HYBRID" in typing.get_args(FP8Format) and "max" in typing.get_args(AmaxComputeAlgorithm)
    assert {"fp8_format", "amax_history_len", "amax_compute_algo"} <= set(TERecipeKwargs.__dataclass_fields__)
    script = emit(tmp_path, "accelerate", "torchao")
    config = ClusterConfig.from_yaml_file(str(script.with_name(f"{script.stem}.accelerate.yaml")))
    assert config.mixed_precision == "fp8"
