"""The DeepSpeed JSON config hwcheck writes beside its DeepSpeed script (issue 22).

Checked twice: against a schema of the keys DeepSpeed documents (tests/schemas/, its source
in the file), everywhere; and by DeepSpeed's own config classes where DeepSpeed is
installed (it is in the dev extra; the test says why it skips otherwise).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

import jsonschema_rs
import pytest

from hwcheck.emit import ScriptSpec
from hwcheck.emit.trainer_files import deepspeed_config

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "deepspeed-config.schema.json").read_text())
CASES = [
    (policy, stage, offload)
    for policy, stage, offload in itertools.product(
        ("float32", "mixed_bfloat16", "mixed_float16"), (0, 1, 2, 3), (False, True)
    )
    if not (offload and stage == 0)  # ZeRO-Offload needs a stage of 1 or more
]


def config_for(policy: str, stage: int, offload: bool) -> dict:
    return deepspeed_config(ScriptSpec("deepspeed", policy, zero_stage=stage, offload=offload))


@pytest.mark.parametrize(("policy", "stage", "offload"), CASES)
def test_the_config_holds_only_documented_keys(policy, stage, offload):
    config = config_for(policy, stage, offload)
    jsonschema_rs.validator_for(SCHEMA).validate(config)
    assert config["bf16"]["enabled"] is (policy == "mixed_bfloat16")
    assert config["fp16"]["enabled"] is (policy == "mixed_float16")
    assert config["zero_optimization"]["stage"] == stage
    assert ("offload_optimizer" in config["zero_optimization"]) is offload


def test_the_schema_refuses_a_misspelt_key():
    config = config_for("mixed_float16", 2, False)
    config["fp16"]["initial_scale_pow"] = 16
    assert not jsonschema_rs.validator_for(SCHEMA).is_valid(config)


def test_float16_carries_deepspeeds_documented_dynamic_loss_scale():
    fp16 = config_for("mixed_float16", 0, False)["fp16"]
    assert fp16 == {
        "enabled": True,
        "loss_scale": 0,
        "initial_scale_power": 16,
        "loss_scale_window": 1000,
        "hysteresis": 2,
        "min_loss_scale": 1,
    }


needs_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="DeepSpeed is not installed (pip install deepspeed): its own config classes cannot check the file",
)


@needs_deepspeed
@pytest.mark.parametrize(("policy", "stage", "offload"), CASES)
def test_deepspeeds_own_config_classes_read_the_config_as_meant(policy, stage, offload):
    from deepspeed.runtime.config import DeepSpeedConfig

    parsed = DeepSpeedConfig(config_for(policy, stage, offload))
    assert parsed.bfloat16_config.enabled is (policy == "mixed_bfloat16")
    assert parsed.float16_config.enabled is (policy == "mixed_float16")
    assert parsed.zero_optimization_stage == stage
    assert parsed.zero_enabled is (stage > 0)
    assert parsed.train_micro_batch_size_per_gpu == 64 and parsed.gradient_accumulation_steps == 1
    if policy == "mixed_float16":
        scale = parsed.float16_config
        assert scale.loss_scale == 0  # dynamic
        assert (
            scale.initial_scale_power,
            scale.loss_scale_window,
            scale.hysteresis,
            scale.min_loss_scale,
        ) == (
            16,
            1000,
            2,
            1,
        )
    offloaded = parsed.zero_config.offload_optimizer
    device = getattr(offloaded, "device", None)
    assert (str(getattr(device, "value", device)) == "cpu") is offload
