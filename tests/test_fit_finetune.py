"""fit for how people fine-tune: LoRA and QLoRA (PEFT, bitsandbytes), FSDP, pure 16-bit training,
paged and fused optimizer steps. The adapters are counted against PEFT's own on tiny models, the
QLoRA paper's headline run fits where its 16-bit LoRA does not, and every method solves."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.recommendation.fit import FineTune, HostMemory, Plan, estimate, model_states, solve
from hwcheck.recommendation.model_shape import from_config, from_config_file

GIB = 2**30
MODELS = FIXTURES / "models"
TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "tie_word_embeddings": False,
}
# The QLoRA paper's 65B run (arXiv 2305.14314; artidoro/qlora scripts/finetune_guanaco_65b.sh):
# LLaMA 65B, NF4 with double quantization, r 64 on every linear layer, adapters in bfloat16,
# lora_dropout 0.05, batch 4 of at most 16 + 512 tokens, checkpointing, paged AdamW (32-bit),
# on one 48 GB GPU (an RTX A6000: 49,140 MiB).
QLORA_65B = FineTune(
    lora_rank=64, lora_targets=("all-linear",), lora_dropout=True, quantize="4bit", adapters_16bit=True
)
A6000 = 49_140 * 2**20

needs_peft = pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="PEFT is not installed")


@needs_peft
@pytest.mark.parametrize(
    ("targets", "peft_targets"),
    [
        (("attention",), ["q_proj", "k_proj", "v_proj", "o_proj"]),
        (("all-linear",), "all-linear"),
        (("q_proj", "v_proj"), ["q_proj", "v_proj"]),
    ],
)
def test_the_adapters_are_those_peft_makes(targets, peft_targets):
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    config = transformers.LlamaConfig(**{k: v for k, v in TINY_LLAMA.items() if k != "model_type"})
    with torch.device("meta"):
        model = get_peft_model(
            transformers.AutoModelForCausalLM.from_config(config),
            LoraConfig(r=8, target_modules=peft_targets),
        )
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    shape = from_config(TINY_LLAMA)
    plan = Plan(finetune=FineTune(lora_rank=8, lora_targets=targets), seq_len=64)
    assert estimate(shape, plan, None)["trainable_parameters"] == trained


def test_the_qlora_papers_65b_run_fits_one_48_gb_gpu_and_its_16_bit_lora_does_not():
    shape = from_config_file(MODELS / "llama-65b.json")
    plan = Plan(finetune=QLORA_65B, optimizer="paged-adamw", checkpointing=True, batch=4, seq_len=528)
    qlora = estimate(shape, plan, A6000)
    assert qlora["fits"] is True and qlora["verdict"] in ("yes", "tight")
    # About 0.52 bytes a weight: 4 bits, the double-quantized constants, float32 embeddings.
    frozen = qlora["per_device"]["frozen_weights"]
    assert 0.50 * shape.parameters < frozen < 0.56 * shape.parameters
    assert qlora["dtypes"]["frozen_weights"] == "4-bit NF4"
    sixteen = estimate(shape, replace(plan, finetune=replace(QLORA_65B, quantize=None)), A6000)
    assert sixteen["verdict"] == "no" and sixteen["fits"] is False
    assert sixteen["per_device"]["frozen_weights"] == 2 * shape.parameters


def test_only_the_adapters_have_gradients_optimizer_states_and_master_copies():
    shape = from_config_file(MODELS / "llama-2-7b.json")
    lora = FineTune(lora_rank=16)
    plan = Plan(finetune=lora, zero=0)
    states = model_states(shape, plan)
    trained = estimate(shape, plan, None)["trainable_parameters"]
    assert states["gradients"] == 2 * trained and states["master_weights"] == 4 * trained
    assert states["frozen_weights"] == 2 * shape.parameters
    # ZeRO-3 partitions the frozen base too; so does FSDP's full_shard.
    three = model_states(shape, replace(plan, zero=3, gpus=8))
    assert (
        three["frozen_weights"] < states["frozen_weights"] / 6
    )  # an eighth, and the largest tensor gathered
    fsdp = model_states(shape, Plan(finetune=lora, fsdp="full_shard", gpus=8))
    assert fsdp["frozen_weights"] == -(-2 * shape.parameters // 8)


def test_a_quantized_base_holds_bitsandbytes_bytes_and_one_dequantized_layer():
    shape = from_config_file(MODELS / "llama-2-7b.json")
    base = FineTune(lora_rank=16, quantize="4bit")
    four = model_states(shape, Plan(finetune=base))
    plain = model_states(shape, Plan(finetune=replace(base, double_quant=False)))
    eight = model_states(shape, Plan(finetune=replace(base, quantize="8bit")))
    linear = sum(m.out * m.into * m.count for m in shape.linears if m.reads != "head")
    # 4 bits plus a float32 constant per 64 weights (0.0625 bytes), or 8-bit ones per 64 and a
    # float32 per 256 blocks after double quantization (about 0.0159 bytes).
    assert plain["frozen_weights"] - four["frozen_weights"] == pytest.approx(
        linear * (0.0625 - 0.0159), rel=0.01
    )
    assert eight["frozen_weights"] - four["frozen_weights"] == pytest.approx(linear * (1 - 0.5159), rel=0.01)
    largest = max(m.out * m.into for m in shape.linears if m.reads != "head")
    assert four["dequantized"] == 2 * largest


def test_fsdp_shards_by_its_strategy_and_offload_moves_the_shards_to_the_host():
    shape = from_config_file(MODELS / "llama-2-7b.json")
    full = model_states(shape, Plan(fsdp="full_shard", gpus=8))
    grad_op = model_states(shape, Plan(fsdp="shard_grad_op", gpus=8))
    hybrid = model_states(shape, Plan(fsdp="hybrid_shard", gpus=16, gpus_per_node=8))
    none = model_states(shape, Plan(fsdp="no_shard", gpus=8))
    # Sharded float32 parameters with 16-bit compute (FSDP's MixedPrecision).
    assert full["weights"] == -(-4 * shape.parameters // 8) and full["optimizer"] < none["optimizer"] / 7
    assert hybrid["weights"] == full["weights"]  # sharded within the node of 8
    assert none["weights"] == 4 * shape.parameters and none["gathered"] == 0
    # One layer and the root unit gathered, against every unit under shard_grad_op.
    assert 0 < full["gathered"] < grad_op["gathered"] / 5
    assert grad_op["gathered"] == 2 * shape.parameters
    offloaded = estimate(shape, Plan(fsdp="full_shard", gpus=8, fsdp_offload=True), 80 * GIB)
    assert offloaded["per_device"]["weights"] == 0 and offloaded["per_device"]["optimizer"] == 0
    assert offloaded["host"]["per_node"]["optimizer"] > 0


def test_pure_bf16_the_fused_step_paged_state_and_accumulation():
    shape = from_config_file(MODELS / "llama-2-7b.json")
    pure = model_states(shape, Plan(pure_16bit=True))
    # Weights, gradients and torch's AdamW states all bfloat16: 8 bytes a parameter.
    assert pure["weights"] == pure["gradients"] == 2 * shape.parameters
    assert 4 * shape.parameters <= pure["optimizer"] <= 4 * shape.parameters + 4 * 1000
    assert "round" in " ".join(estimate(shape, Plan(pure_16bit=True), None)["notes"])
    fused = model_states(shape, Plan(step_in_backward=True))
    assert fused["gradients"] == 4 * (shape.largest_tensor or 0)
    plan = Plan(seq_len=1024)
    accumulated = estimate(shape, replace(plan, grad_accum=8), None)
    assert accumulated["per_device"] == estimate(shape, plan, None)["per_device"]
    assert any("changes nothing" in note for note in accumulated["notes"])
    paged = Plan(finetune=FineTune(lora_rank=16), optimizer="paged-adamw-8bit")
    assert any("host memory" in note for note in estimate(shape, paged, None)["notes"])


@pytest.mark.parametrize(
    "plan",
    [
        Plan(finetune=FineTune(lora_rank=16)),
        Plan(finetune=FineTune(lora_rank=16, quantize="4bit"), checkpointing=True),
        Plan(finetune=FineTune(lora_rank=16, quantize="8bit")),
        Plan(fsdp="full_shard", gpus=8),
        Plan(fsdp="shard_grad_op", gpus=8),
        Plan(fsdp="hybrid_shard", gpus=16, gpus_per_node=8),
        Plan(fsdp="full_shard", gpus=8, fsdp_offload=True),
        Plan(pure_16bit=True, optimizer="paged-adamw-8bit"),
        Plan(step_in_backward=True, pure_16bit=True),
    ],
)
@pytest.mark.parametrize("what", ["batch", "seq-len"])
def test_solve_finds_the_largest_that_fits_for_every_method(plan, what):
    shape = from_config_file(MODELS / "llama-2-7b.json")
    memory, host = 80 * GIB, HostMemory(2**40, 2**40, "a 1 TiB node")
    found = solve(shape, plan, memory, what, host)
    assert found is not None and found >= 1

    def verdict(value: int) -> str:
        changed = replace(plan, batch=value) if what == "batch" else replace(plan, seq_len=value)
        return estimate(shape, changed, memory, host)["verdict"]

    assert verdict(found) == "yes" and verdict(found + 1) != "yes"


def test_the_cli_shows_each_part_and_refuses_what_cannot_go_together():
    model = str(MODELS / "llama-2-7b.json")
    common = ("--model", model, "--gpu-memory", "24", "--policy", "bf16", "--seq-len", "512")
    text = run_hwcheck("fit", *common, "--lora", "16", "--quantize", "4bit", "--checkpointing").stdout
    for said in (
        "fine-tuning: QLoRA rank 16",
        "frozen base",
        "4-bit NF4",
        "dequantized layer",
        "adapter weights",
    ):
        assert said in text, said
    assert all(len(line) <= 80 for line in text.splitlines())
    document = json.loads(
        run_hwcheck("fit", *common, "--lora", "8", "--fsdp", "fully_shard", "--gpus", "4", "--json").stdout
    )
    assert document["plan"]["fsdp"] == "full_shard" and document["plan"]["lora"]["rank"] == 8
    assert document["per_device"]["gathered"] > 0 and document["dtypes"]["gathered"] == "16-bit"
    for bad, option in (
        (("--quantize", "4bit"), "--quantize"),
        (("--lora", "8", "--lora-targets", "nonesuch"), "--lora-targets"),
        (("--fsdp", "full_shard", "--zero", "3"), "--fsdp"),
        (("--fsdp-offload",), "--fsdp-offload"),
        (("--step-in-backward", "--grad-accum", "4"), "--step-in-backward"),
    ):
        result = run_hwcheck("fit", *common, *bad)
        assert result.returncode == 2 and option in result.stderr and "Traceback" not in result.stderr
