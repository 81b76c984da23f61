"""The advice in each PyTorch trainer's own words: doctor, the API, and the one-line helpers.

Every value hwcheck gives a trainer is checked by the installed trainer itself (its precision
connector, TrainingArguments, PrecisionType and launch parser, DeepSpeed's config classes);
the helpers run a real training step of each trainer on the CPU. The T4 and V100 facts
files (tests/fixtures/facts/README.md) replay recorded GPUs.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
import typing

import pytest

import hwcheck
from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.engine.trainers import native_value
from hwcheck.recommendation import POLICIES, TRAINERS, recommend

A100 = json.loads((FIXTURES / "facts" / "a100-sxm4x4-tf216.json").read_text())
T4 = json.loads((FIXTURES / "facts" / "t4-torch201-trainers.json").read_text())
V100 = json.loads((FIXTURES / "facts" / "v100-torch241-trainers.json").read_text())
# What each trainer says for the A100's advice (bfloat16, TF32), in the doctor report.
A100_WORDS = {
    "lightning": 'L.Trainer(precision="bf16-mixed")',
    "hf-trainer": "TrainingArguments(output_dir=..., bf16=True, fp16=False, tf32=True)",
    "accelerate": "accelerate launch --mixed_precision bf16 train.py",
    "deepspeed": '"bf16": {"enabled": true},',
}
NEEDS = {
    "lightning": "lightning",
    "hf-trainer": "transformers",
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
}


def needs(trainer: str) -> pytest.MarkDecorator:
    package = NEEDS[trainer]
    return pytest.mark.skipif(
        importlib.util.find_spec(package) is None,
        reason=f"{package} is not installed (pip install {package})",
    )


def with_trainers(facts: dict, **versions: str) -> dict:
    """`facts` with these trainer packages installed (facts keys as the frameworks probe writes them)."""
    facts = copy.deepcopy(facts)
    facts["frameworks"]["torch"] = {"version": "2.5.1+cu124", "cuda": "12.4"}
    for package, version in versions.items():
        facts["frameworks"][package] = {"version": version, "package": package}
    return facts


CURRENT = {"lightning": "2.6.6", "transformers": "5.23.0", "accelerate": "1.15.0", "deepspeed": "0.19.8"}


# ---------------------------------------------------------------- doctor


@pytest.mark.parametrize(
    ("typed", "trainer"),
    [("lightning", "lightning"), ("hf", "hf-trainer"), ("accelerate", "accelerate"), ("ds", "deepspeed")],
)
def test_doctor_advises_each_trainer_in_its_own_words(tmp_path, typed, trainer):
    facts = tmp_path / "a100.json"
    facts.write_text(json.dumps(with_trainers(A100, **CURRENT)))
    result = run_hwcheck("doctor", "--framework", typed, "--facts", str(facts))
    assert result.returncode == 0, result.stderr
    assert A100_WORDS[trainer] in result.stdout
    assert (
        "trainers: Lightning 2.6.6, Transformers 5.23.0, Accelerate 1.15.0, DeepSpeed 0.19.8" in result.stdout
    )


def test_a_trainer_exits_1_on_an_error_finding_as_torch_does(tmp_path):
    # The V100's torch 2.4.1+cu124 under the CUDA 11.0 GA driver: it cannot run, whoever trains.
    facts = copy.deepcopy(V100)
    facts["nvidia_driver"] = {"version": "450.80.02", "cuda": "11.0"}
    path = tmp_path / "v100-old-driver.json"
    path.write_text(json.dumps(facts))
    for name in ("torch", "lightning"):
        result = run_hwcheck("doctor", "--framework", name, "--facts", str(path))
        assert result.returncode == 1 and "[driver-too-old-for-framework]" in result.stdout, name


def test_the_json_report_carries_the_trainers_native_value_and_lines(tmp_path):
    facts = tmp_path / "t4.json"
    facts.write_text(json.dumps(T4))
    result = run_hwcheck("doctor", "--json", "--framework", "deepspeed", "--facts", str(facts))
    assert result.returncode == 0, result.stderr
    advice = json.loads(result.stdout)["recommendation"]
    assert (advice["framework"], advice["backend"], advice["policy"]) == (
        "deepspeed",
        "torch",
        "mixed_float16",
    )
    assert advice["native"]["fp16"] == {
        "enabled": True,
        "loss_scale": 0,
        "initial_scale_power": 16,
        "loss_scale_window": 1000,
        "hysteresis": 2,
        "min_loss_scale": 1,
    }
    assert advice["native"]["bf16"] == {"enabled": False}
    assert any(line.startswith('"fp16": {"enabled": true, "loss_scale": 0') for line in advice["apply"])


def test_recommend_policy_takes_a_trainer():
    advice = hwcheck.recommend_policy(with_trainers(A100, **CURRENT), framework="pytorch-lightning")
    assert (advice.framework, advice.native, str(advice)) == ("lightning", "bf16-mixed", "mixed_bfloat16")
    assert advice.to_dict()["native"] == "bf16-mixed"
    assert "native" not in hwcheck.recommend_policy(A100, framework="torch").to_dict()


@pytest.mark.parametrize(
    ("trainer", "versions", "named"),
    [
        ("lightning", {"lightning": "1.9.5"}, 'Trainer(precision="bf16-mixed") needs Lightning 2.0'),
        ("hf-trainer", {"transformers": "4.12.5"}, "TrainingArguments(bf16=True) needs Transformers 4.13"),
        ("accelerate", {"accelerate": "0.5.1"}, "needs Accelerate 0.6"),
        (
            "deepspeed",
            {"deepspeed": "0.5.10"},
            'the "bf16" block of the DeepSpeed config needs DeepSpeed 0.6',
        ),
    ],
)
def test_a_word_the_installed_trainer_lacks_is_a_finding(trainer, versions, named):
    old = recommend(with_trainers(A100, **versions), framework=trainer)
    found = [f for f in old.findings if f.id == "framework-api-too-old"]
    assert found and named in found[0].message, [f.message for f in old.findings]
    current = recommend(with_trainers(A100, **CURRENT), framework=trainer)
    assert not [f for f in current.findings if f.id == "framework-api-too-old"]


def test_a_trainer_that_is_not_installed_is_said_and_its_install_named():
    advice = recommend(A100, framework="accelerate")  # the A100 file has TensorFlow only
    found = {f.id: f for f in advice.findings}["trainer-not-installed"]
    assert "Accelerate" in found.message and "PyTorch" in found.message
    assert found.remedy.endswith("pip install accelerate")


# ---------------------------------------------------------------- each value, checked by the trainer itself

ADVISED = [  # (policy, tf32, device) the rules give somewhere
    ("mixed_bfloat16", True, "gpu"),
    ("mixed_bfloat16", False, "gpu"),
    ("mixed_float16", False, "gpu"),
    ("float32", True, "gpu"),
    ("float32", False, "gpu"),
    ("mixed_bfloat16", False, "cpu"),
    ("float32", False, "cpu"),
]


@needs("lightning")
def test_lightnings_precision_connector_accepts_every_word():
    from lightning.fabric.plugins.precision.precision import _PRECISION_INPUT_STR

    accepted = typing.get_args(_PRECISION_INPUT_STR)
    words = {native_value("lightning", policy) for policy in POLICIES}
    assert words == {"bf16-mixed", "16-mixed", "32-true"} and words <= set(accepted)
    assert native_value("lightning", "mixed_bfloat16", fp8=True) in accepted


@needs("lightning")
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "float32"])
def test_lightnings_trainer_takes_the_cpu_words(policy):
    import lightning as L

    word = native_value("lightning", policy, device="cpu")
    trainer = L.Trainer(
        precision=word,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    assert trainer.precision == word


@needs("hf-trainer")
@pytest.mark.parametrize(("policy", "tf32", "device"), ADVISED)
def test_training_arguments_has_every_keyword(policy, tf32, device):
    from transformers import TrainingArguments

    arguments = native_value("hf-trainer", policy, tf32=tf32, device=device)
    assert set(arguments) <= {field.name for field in dataclasses.fields(TrainingArguments)}
    if device == "cpu":  # the CPU's advice is built here as the Trainer builds it
        built = TrainingArguments(output_dir="unused", **arguments)
        assert (built.bf16, built.fp16, built.use_cpu) == (policy == "mixed_bfloat16", False, True)


@needs("accelerate")
@pytest.mark.parametrize("policy", POLICIES)
def test_accelerate_takes_the_word_in_the_constructor_and_at_launch(policy):
    from accelerate.commands.launch import launch_command_parser
    from accelerate.utils import PrecisionType

    word = native_value("accelerate", policy)
    assert PrecisionType(word).value == word
    assert launch_command_parser().parse_args(["--mixed_precision", word, "train.py"]).mixed_precision == word


def test_accelerate_is_advised_for_the_constructor_and_the_launcher():
    lines = recommend(T4, framework="accelerate").apply
    assert lines[:2] == (
        'accelerator = Accelerator(mixed_precision="fp16")',
        "# or from the shell: accelerate launch --mixed_precision fp16 train.py",
    )


@needs("deepspeed")
@pytest.mark.parametrize("policy", POLICIES)
def test_deepspeeds_config_classes_read_the_blocks(policy):
    from deepspeed.runtime.config import DeepSpeedConfig

    parsed = DeepSpeedConfig({"train_micro_batch_size_per_gpu": 1, **native_value("deepspeed", policy)})
    assert parsed.bfloat16_config.enabled is (policy == "mixed_bfloat16")
    assert parsed.float16_config.enabled is (policy == "mixed_float16")


# ---------------------------------------------------------------- the one-line helpers


@pytest.mark.parametrize("facts", [T4, V100], ids=["t4", "v100"])
def test_where_the_popular_auto_says_bf16_hwcheck_says_fp16(facts):
    torch = pytest.importorskip("torch")
    # axolotl's `bf16: auto` and litgpt ask torch.cuda.is_bf16_supported(), which counts emulated
    # bfloat16 by default: true on a T4 or V100, whose Tensor Cores have no bfloat16.
    default = inspect.signature(torch.cuda.is_bf16_supported).parameters["including_emulation"].default
    assert default is True
    assert hwcheck.precision("lightning", facts) == "16-mixed"
    assert hwcheck.training_arguments(facts) == {"bf16": False, "fp16": True}
    assert hwcheck.accelerate_mixed_precision(facts) == "fp16"
    assert hwcheck.deepspeed_config(facts)["fp16"]["enabled"] is True
    assert hwcheck.deepspeed_config(facts)["bf16"]["enabled"] is False


def test_precision_speaks_each_frameworks_word_and_refuses_the_many_setting_trainers():
    assert hwcheck.precision("lightning", A100) == "bf16-mixed"
    assert hwcheck.precision("accelerate", A100) == "bf16"
    assert hwcheck.precision("keras", A100) == "mixed_bfloat16"
    assert hwcheck.precision("torch", T4) == "float16"
    with pytest.raises(ValueError, match="training_arguments"):
        hwcheck.precision("hf-trainer", A100)


def test_the_helpers_import_no_framework_and_reuse_the_decision(tmp_path):
    script = textwrap.dedent(
        """
        import json, sys, time
        import hwcheck
        first = hwcheck.precision("lightning")
        start = time.perf_counter()
        again = [hwcheck.precision("lightning"), hwcheck.training_arguments(),
                 hwcheck.accelerate_mixed_precision(), hwcheck.deepspeed_config()]
        seconds = time.perf_counter() - start
        loaded = [m for m in ("torch", "lightning", "transformers", "accelerate", "deepspeed",
                              "tensorflow", "jax") if m in sys.modules]
        print(json.dumps({"first": first, "again": again[0], "seconds": seconds, "loaded": loaded}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HWCHECK_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["loaded"] == [] and answer["first"] == answer["again"]
    # Four calls from the cache: ~0.15 s idle on the 2-core VM; ten times that as the bound.
    assert answer["seconds"] < 1.5


STEP = {
    "lightning": """
        import lightning as L, torch, hwcheck
        class Model(L.LightningModule):
            def __init__(self):
                super().__init__(); self.layer = torch.nn.Linear(8, 2)
            def training_step(self, batch, index):
                x, y = batch
                return torch.nn.functional.cross_entropy(self.layer(x), y)
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)
        data = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,)))
        trainer = L.Trainer(precision=hwcheck.precision("lightning"), accelerator="cpu", max_steps=2,
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False)
        trainer.fit(Model(), torch.utils.data.DataLoader(data, batch_size=8))
        print("trained", trainer.precision, trainer.global_step)
    """,
    "hf-trainer": """
        import tempfile, torch, hwcheck
        from transformers import Trainer, TrainingArguments
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__(); self.layer = torch.nn.Linear(8, 2)
            def forward(self, features, labels=None):
                return {"loss": torch.nn.functional.cross_entropy(self.layer(features), labels)}
        class Data(torch.utils.data.Dataset):
            def __len__(self): return 16
            def __getitem__(self, i): return {"features": torch.randn(8), "labels": torch.tensor(i % 2)}
        arguments = hwcheck.training_arguments()
        args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=2, per_device_train_batch_size=8,
                                 report_to=[], save_strategy="no", **arguments)
        trainer = Trainer(model=Model(), args=args, train_dataset=Data())
        trainer.train()
        print("trained", arguments, trainer.state.global_step)
    """,
    "accelerate": """
        import torch, hwcheck
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision=hwcheck.accelerate_mixed_precision(), cpu=True)
        model = torch.nn.Linear(8, 2)
        model, optimizer = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
        for _ in range(2):
            loss = torch.nn.functional.cross_entropy(model(torch.randn(8, 8)), torch.randint(0, 2, (8,)))
            accelerator.backward(loss); optimizer.step(); optimizer.zero_grad()
        print("trained", accelerator.mixed_precision, float(loss))
    """,
    "deepspeed": """
        import os, torch, hwcheck, deepspeed
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
        os.environ["MASTER_PORT"] = "29533"
        deepspeed.init_distributed(dist_backend="gloo")
        config = {"train_micro_batch_size_per_gpu": 8, "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
                  **hwcheck.deepspeed_config()}
        model = torch.nn.Linear(8, 2)
        engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
        dtype = next(engine.module.parameters()).dtype
        for _ in range(2):
            x = torch.randn(8, 8).to(dtype)
            loss = torch.nn.functional.cross_entropy(engine(x).float(), torch.randint(0, 2, (8,)))
            engine.backward(loss); engine.step()
        print("trained", config["bf16"]["enabled"], float(loss))
    """,
}


def deepspeed_cannot_run() -> str | None:
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return "no C++ compiler: DeepSpeed builds its CPU communication op at first use"
    return None


@pytest.mark.parametrize("trainer", TRAINERS)
def test_each_helper_runs_a_real_training_step_of_its_trainer_on_the_cpu(tmp_path, trainer):
    if importlib.util.find_spec(NEEDS[trainer]) is None:
        pytest.skip(f"{NEEDS[trainer]} is not installed")
    if trainer == "deepspeed" and deepspeed_cannot_run():
        pytest.skip(deepspeed_cannot_run())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(STEP[trainer])],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "trained" in result.stdout
