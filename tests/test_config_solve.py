"""`hwcheck config --solve batch`: the batch written is `hwcheck fit --solve batch`'s for the same
model, precision, GPUs and ZeRO stage, on replayed machines (tests/fixtures/facts/)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, run_hwcheck

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"  # the recorded H100 (80 GB)
A100X4 = FIXTURES / "facts" / "a100-sxm4x4-tf216.json"  # four A100-SXM4-80GB
GPT2 = FIXTURES / "models" / "gpt2.json"  # openai-community/gpt2 config.json
BERT = FIXTURES / "models" / "bert-base.json"


def _fit_batch(model, facts, policy, zero):
    extra = ("--zero", str(zero)) if zero is not None else ()
    result = run_hwcheck(
        "fit",
        "--model",
        str(model),
        "--facts",
        str(facts),
        "--policy",
        policy,
        "--solve",
        "batch",
        "--json",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["plan"]["batch"]


def _config_solving(framework, script, facts=H100, *size):
    """`hwcheck config` writing `script` for `framework` in mixed_bfloat16 with --solve batch."""
    return run_hwcheck(
        "config", "--framework", framework, *size, "--facts", str(facts),
        "--policy", "mixed_bfloat16", "--solve", "batch", "-o", str(script),
    )  # fmt: skip


@pytest.mark.parametrize(("model", "facts"), [(GPT2, H100), (BERT, A100X4)])
def test_the_deepspeed_config_gets_fits_largest_micro_batch(tmp_path, model, facts):
    script = tmp_path / "train.py"
    result = _config_solving("deepspeed", script, facts, "--model", str(model))
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "train.deepspeed.json").read_text())
    stage = config["zero_optimization"]["stage"]
    batch = config["train_micro_batch_size_per_gpu"]
    assert batch == _fit_batch(model, facts, "mixed_bfloat16", stage) > 1
    said = re.search(r"hwcheck: batch size (\d+) per GPU", result.stderr)
    assert said and int(said.group(1)) == batch
    settings = json.loads((tmp_path / "train.settings.json").read_text())
    assert settings["batch_size"]["value"] == batch
    assert settings["batch_size"]["solved"].startswith(f"batch size {batch} per GPU: the largest")


def test_a_torch_script_gets_the_batch_of_plain_data_parallel(tmp_path):
    script = tmp_path / "train.py"
    result = _config_solving("torch", script, H100, "--model", str(GPT2))
    assert result.returncode == 0, result.stderr
    batch = _fit_batch(GPT2, H100, "mixed_bfloat16", None)
    assert re.search(rf"^BATCH_SIZE = {batch}$", script.read_text(), re.MULTILINE), script.read_text()[:2000]


def test_solve_without_a_model_is_one_line_and_exit_2(tmp_path):
    result = _config_solving("deepspeed", tmp_path / "t.py", H100, "--params", "7e9")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--solve" in result.stderr and "--model" in result.stderr
    assert not list(tmp_path.iterdir())
