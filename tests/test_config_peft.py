"""config --lora / --qlora: PEFT fine-tuning scripts for PyTorch, the HF Trainer, Accelerate
and Lightning, with the compute dtype of the GPU they were written for.

The recorded T4 (compute capability 7.5: float16), A100 (8.0) and RTX 4090 (8.9: bfloat16)
get a QLoRA script each; the quantization config each script would use is read by importing
the emitted script and calling its own quantization_config(), not from a table here. Each
framework's script then fine-tunes for real on the CPU: bitsandbytes 0.50 quantizes to NF4
and runs its 8-bit optimizer there (its paged optimizers fall back to unpaged on a CPU).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_trainer_scripts import ENVIRONMENT, Run, _run, records

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.commands.config_peft import refuse_qlora_without_bitsandbytes
from hwcheck.emit import ScriptSpec, emit_script

FACTS = FIXTURES / "facts"
# The recorded GPUs and the compute dtype QLoRA must use on each (bnb_4bit_compute_dtype).
RECORDED = {
    "t4": (FACTS / "t4-torch201-trainers.json", "float16"),
    "a100": (FACTS / "a100-sxm4x2-driver555-torch231.json", "bfloat16"),
    "rtx4090": (FACTS / "rtx4090x2-driver525-torch201.json", "bfloat16"),
}
FRAMEWORKS = ("torch", "hf-trainer", "accelerate", "lightning")
NEEDS = ("torch", "transformers", "peft", "bitsandbytes", "accelerate", "lightning")
STEPS = 2
# Imports each emitted script (importing runs nothing) and prints what its own code would use.
READ_CONFIG = """
import json, runpy, sys
for path in json.loads(sys.argv[1]):
    module = runpy.run_path(path, run_name="emitted_script")
    config = module["quantization_config"](module["POLICY"])
    lora = module["lora_config"]()
    print(json.dumps({
        "path": path,
        "policy": module["POLICY"],
        "load_in_4bit": config.load_in_4bit,
        "quant_type": config.bnb_4bit_quant_type,
        "double_quant": config.bnb_4bit_use_double_quant,
        "compute_dtype": str(config.bnb_4bit_compute_dtype).removeprefix("torch."),
        "r": lora.r,
        "target_modules": sorted(lora.target_modules),
        "optimizer": module.get("OPTIMIZER"),
    }), flush=True)
"""
# Runs each script as `python NAME.py --steps N`, then two steps through make_step(POLICY): one
# process for several scripts, since importing torch, transformers, PEFT and bitsandbytes is
# most of a run's time.
DRIVER = """
import json, runpy, sys
paths, steps = json.loads(sys.argv[1]), sys.argv[2]
for path in paths:
    print(f"=== script {path}", flush=True)
    sys.argv = [path, "--steps", steps]
    runpy.run_path(path, run_name="__main__")
    print(f"=== make_step {path}", flush=True)
    module = runpy.run_path(path, run_name="emitted_script")
    step = module["make_step"](module["POLICY"])
    losses = ",".join(f"{float(step()):.6g}" for _ in range(2))
    print(f"make_step policy={module['POLICY']} losses={losses}", flush=True)
    print(f"=== stderr-mark {path}", file=sys.stderr, flush=True)
"""
# One real run per framework, written for a recorded GPU (each falls back to the CPU here and
# says so where it has to), plus plain LoRA on this machine's own advice.
RUNS = {
    "torch-t4-qlora": ("torch", "t4", "--qlora"),
    "hf-trainer-a100-qlora": ("hf-trainer", "a100", "--qlora"),
    "accelerate-rtx4090-qlora": ("accelerate", "rtx4090", "--qlora"),
    "lightning-t4-qlora": ("lightning", "t4", "--qlora"),
    "torch-a100-lora": ("torch", "a100", "--lora"),
}
# The runs each process makes.
PROCESSES = (
    ("torch-t4-qlora", "torch-a100-lora", "accelerate-rtx4090-qlora"),
    ("hf-trainer-a100-qlora", "lightning-t4-qlora"),
)


def missing() -> list[str]:
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


def write(directory: Path, framework: str, machine: str, method: str) -> Path:
    """`hwcheck config` for the recorded machine, as a user runs it; the script's path."""
    path = directory / f"train_{framework.replace('-', '_')}_{machine}_{method.strip('-')}.py"
    result = run_hwcheck(
        "config", "--framework", framework, method, "--facts", str(RECORDED[machine][0]), "-o", str(path)
    )
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """The QLoRA script of every framework for every recorded GPU."""
    directory = tmp_path_factory.mktemp("peft")
    return {
        (framework, machine): write(directory, framework, machine, "--qlora")
        for framework, machine in itertools.product(FRAMEWORKS, RECORDED)
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Future[Run], Path]]:
    """Every real run, its process started in the background (two at a time), and its script."""
    if missing():
        pytest.skip(f"not installed: {missing()}")
    directory = tmp_path_factory.mktemp("peft-runs")
    pool = ThreadPoolExecutor(max_workers=2)
    found = {}
    for names in PROCESSES:
        scripts = {name: write(directory, *RUNS[name]) for name in names}
        command = [
            sys.executable,
            "-c",
            DRIVER,
            json.dumps([str(path) for path in scripts.values()]),
            str(STEPS),
        ]
        future = pool.submit(_run, command, directory)
        found.update({name: (future, path) for name, path in scripts.items()})
    yield found
    pool.shutdown(wait=True, cancel_futures=True)


def finished(runs: dict[str, tuple[Future[Run], Path]], name: str) -> tuple[Run, Path]:
    future, path = runs[name]
    run = future.result()
    assert run.returncode == 0, f"{name} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    return run, path


def sections(runs: dict[str, tuple[Future[Run], Path]], name: str) -> dict[str, list[dict[str, str]]]:
    """The key=value lines of one script's own run and of its make_step."""
    run, path = finished(runs, name)
    found = {}
    for chunk in run.stdout.split("=== ")[1:]:
        head, _, body = chunk.partition("\n")
        kind, _, script = head.partition(" ")
        if script == str(path):
            found[kind] = records(body)
    return found


def stderr_of(runs: dict[str, tuple[Future[Run], Path]], name: str) -> str:
    """What one script wrote to standard error (the driver marks where each one ends)."""
    run, path = finished(runs, name)
    parts = run.stderr.split("=== stderr-mark ")
    for number, part in enumerate(parts[1:], start=1):
        if part.startswith(str(path)):
            return parts[number - 1]
    raise AssertionError(f"no standard error of {name}")


def test_qlora_computes_in_the_dtype_of_each_recorded_gpu(scripts):
    if missing():
        pytest.skip(f"not installed: {missing()}")
    paths = [str(path) for path in scripts.values()]
    result = subprocess.run(
        [sys.executable, "-c", READ_CONFIG, json.dumps(paths)],
        capture_output=True,
        text=True,
        env={**os.environ, **ENVIRONMENT},
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    read = {Path(row["path"]): row for row in map(json.loads, result.stdout.splitlines())}
    for (framework, machine), path in scripts.items():
        row = read[path]
        expected = RECORDED[machine][1]
        assert row["compute_dtype"] == expected, (framework, machine, row)
        assert row["policy"] == {"float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}[expected]
        assert (row["load_in_4bit"], row["quant_type"], row["double_quant"]) == (True, "nf4", True)
        assert row["r"] == 16 and row["target_modules"] == ["k_proj", "o_proj", "q_proj", "v_proj"]
        if framework == "hf-trainer":
            assert row["optimizer"] == "paged_adamw_8bit"
        else:
            assert "bnb.optim.PagedAdamW8bit(" in path.read_text()


def test_the_settings_file_says_the_dtypes_and_the_optimizer(scripts):
    settings = json.loads(scripts[("torch", "t4")].with_suffix(".settings.json").read_text())
    peft = settings["peft"]
    assert (peft["value"], peft["compute_dtype"], peft["adapter_dtype"]) == ("qlora", "float16", "float32")
    assert peft["quantization"]["bnb_4bit_compute_dtype"] == "float16"
    assert peft["optimizer"] == "paged_adamw_8bit" and "GradScaler" in peft["reason"]
    assert "https://huggingface.co/docs/bitsandbytes/" in peft["source"]
    a100 = json.loads(scripts[("accelerate", "a100")].with_suffix(".settings.json").read_text())
    assert a100["peft"]["compute_dtype"] == "bfloat16" and "GradScaler" not in a100["peft"]["reason"]


@pytest.mark.parametrize("name", list(RUNS))
def test_each_script_fine_tunes_the_adapters_on_the_cpu(runs, name):
    framework, machine, method = RUNS[name]
    found = sections(runs, name)
    (start,) = [line for line in found["script"] if line["kind"] == "start"]
    quantized = method == "--qlora"
    assert start["method"] == method.strip("-") and start["quantized"] == str(quantized)
    assert start["compute_dtype"] == RECORDED[machine][1]
    # Only the adapters train, and in float32 whatever the base computes in.
    assert start["adapter_dtype"] == "float32"
    assert 0 < int(start["trainable"]) < int(start["total"]) / 2
    if "optimizer" in start:
        assert start["optimizer"] == ("PagedAdamW8bit" if quantized else "AdamW")
    steps = [line for line in found["script"] if line["kind"] == "step"]
    assert [int(line["step"]) for line in steps] == list(range(1, STEPS + 1))
    assert all(math.isfinite(float(line["loss"])) for line in steps)
    (made,) = found["make_step"]
    assert all(math.isfinite(float(loss)) for loss in made["losses"].split(","))


def test_a_script_for_a_missing_gpu_says_it_trains_on_the_cpu(runs):
    assert "written for the cuda device" in stderr_of(runs, "torch-t4-qlora")
    # Lightning turns 16-mixed into bf16-mixed on a CPU, and the script says so.
    assert "trains in bf16-mixed instead" in stderr_of(runs, "lightning-t4-qlora")


def specs() -> list[ScriptSpec]:
    return [
        ScriptSpec(framework, policy, peft=method, has_tf32=tf32)
        for framework, policy, method, tf32 in itertools.product(
            FRAMEWORKS, ("float32", "mixed_bfloat16", "mixed_float16"), ("lora", "qlora"), (False, True)
        )
    ]


def test_every_peft_script_passes_ruff(tmp_path):
    for number, spec in enumerate(specs()):
        (tmp_path / f"train_{number}.py").write_text(emit_script(spec))
    files = sorted(str(path) for path in tmp_path.glob("*.py"))
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    project = ["--config", str(ROOT / "pyproject.toml"), "--line-length", "100"]
    for command in ([ruff, "check", "--no-cache", *project], [ruff, "check", "--no-cache", "--isolated"]):
        result = subprocess.run([*command, *files], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout[-3000:]


def test_lora_scripts_neither_quantize_nor_page():
    for spec in specs():
        text = emit_script(spec)
        quantized = spec.peft == "qlora"
        assert ("BitsAndBytesConfig(" in text) is quantized
        assert ("prepare_model_for_kbit_training(" in text) is quantized
        assert ("paged_adamw_8bit" in text or "PagedAdamW8bit(" in text) is quantized
        assert "get_peft_model(" in text and "autocast_adapter_dtype=True" in text


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--framework", "keras", "--lora"], "--lora: is written for --framework torch, hf-trainer"),
        (["--framework", "deepspeed", "--qlora"], "--qlora: is written for --framework torch"),
        (["--framework", "torch", "--qlora", "--fp8", "torchao"], "--qlora: carries no FP8 recipe"),
        (["--framework", "torch", "--lora", "--qlora"], "not allowed with argument"),
    ],
)
def test_options_that_cannot_go_with_peft_are_one_line(tmp_path, args, said):
    facts = RECORDED["a100"][0]
    result = run_hwcheck("config", *args, "--facts", str(facts), "-o", str(tmp_path / "train.py"))
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not list(tmp_path.iterdir())


def test_qlora_is_refused_where_bitsandbytes_has_no_build_for_the_gpu(tmp_path):
    # A Tesla K80 (compute capability 3.7, recorded): bitsandbytes' NF4 needs 6.0.
    k80 = ROOT / "tests" / "corpus" / "cases" / "jax049-cuda11-tesla-k80.json"
    result = run_hwcheck("config", "--framework", "torch", "--qlora", "--facts", str(k80), "-o", "-")
    assert result.returncode == 2 and not result.stdout
    (line,) = result.stderr.splitlines()
    assert "needs compute capability 6.0 or higher, and Tesla K80 has 3.7" in line
    assert "use --lora instead" in line
    lora = run_hwcheck("config", "--framework", "torch", "--lora", "--facts", str(k80), "-o", "-")
    assert lora.returncode == 0 and "get_peft_model(" in lora.stdout


def test_qlora_is_refused_on_a_tpu():
    # No recorded machine trains PyTorch on a TPU here: the recommendation is stood in for.
    tpu = SimpleNamespace(device="tpu", runtime="tpu")
    with pytest.raises(InputError, match="no build for the TPU this machine trains on: use --lora"):
        refuse_qlora_without_bitsandbytes({}, tpu, "mixed_bfloat16")
