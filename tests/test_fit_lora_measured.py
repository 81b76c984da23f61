"""fit's LoRA estimate on the CPU against torch's own allocations, recorded with
`hwcheck fit --lora ... --measure --json` on a 2-core Xeon VM (docs/measurements/cpu-2026-12-08/):
PEFT's adapters on GPT-2 and a small Llama-shaped model, bfloat16 autocast on a bfloat16 base and
float32, 2 x 128 tokens. Each recorded estimate is recomputed with this hwcheck and held within
10 % of the peak torch allocated (its profiler's allocation and free events)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from hwcheck.recommendation.fit import FineTune, Plan, estimate
from hwcheck.recommendation.model_shape import from_config_file

RECORDED = sorted((ROOT / "docs" / "measurements" / "cpu-2026-12-08").glob("fit-lora-*.json"))
MODELS = {"gpt2": ROOT / "tests" / "fixtures" / "models" / "gpt2.json"}


def _document(path):
    return json.loads(path.read_text())


def test_lora_was_measured_in_both_precisions():
    documents = [_document(path) for path in RECORDED]
    assert len(documents) >= 3
    assert {d["plan"]["policy"] for d in documents} == {"float32", "mixed_bfloat16"}
    assert all(d["measured"]["status"] == "measured" for d in documents)


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: path.stem)
def test_the_lora_estimate_is_within_ten_percent_of_torchs_counted_allocations(path):
    document = _document(path)
    plan_said, measured = document["plan"], document["measured"]
    model = path.stem.split("-")[2]
    config = MODELS.get(model) or path.parent / "llama-shaped-small.json"
    shape = from_config_file(config)
    lora = plan_said["lora"]
    plan = Plan(
        policy=plan_said["policy"],
        batch=plan_said["batch"],
        seq_len=plan_said["seq_len"],
        finetune=FineTune(
            lora_rank=lora["rank"],
            lora_targets=tuple(lora["targets"]),
            quantize=(plan_said.get("quantize") or {}).get("bits"),
        ),
        on_gpu=False,
        runtime="cpu",
    )
    parts = estimate(shape, plan, None)["per_device"]
    figure = parts["total"] - parts["fragmentation"]
    counted = measured["counted_peak_bytes"]
    assert abs(figure - counted) <= 0.10 * counted, (figure, counted)
    # The parts the framework tells: the adapters exactly, the frozen base within 2 % (a
    # quantized base's constants are counted per tensor by bitsandbytes).
    assert parts["weights"] == measured["parts"]["weights"]
    frozen = measured["parts"]["frozen_weights"]
    assert abs(parts["frozen_weights"] - frozen) <= 0.02 * frozen
