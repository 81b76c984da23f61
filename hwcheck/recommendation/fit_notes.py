"""The words and dtypes `hwcheck fit` gives each plan: the dtype each part is held in, and a
sentence for each fine-tuning, sharding and optimizer choice on what it means for memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwcheck import knowledge
from hwcheck.recommendation.finetune import targeted, trainable
from hwcheck.recommendation.memory_plan import STATES

if TYPE_CHECKING:
    from hwcheck.recommendation.memory_plan import Plan
    from hwcheck.recommendation.model_layout import ModelShape

# The dtype each part is held in, by how the weights are held (None: the part is empty there).
DTYPES = {
    "float32": {
        "weights": "float32",
        "gradients": "float32",
        "optimizer": "float32",
        "activations": "float32",
    },
    "autocast": {
        "weights": "float32",
        "working_copy": "16-bit",
        "gradients": "float32",
        "optimizer": "float32",
        "activations": "16-bit",
    },
    "pure16": {
        "weights": "16-bit",
        "gradients": "16-bit",
        "optimizer": "16-bit",
        "activations": "16-bit",
    },
    "master": {
        "weights": "16-bit",
        "gradients": "16-bit",
        "float32_gradients": "float32",
        "optimizer": "float32",
        "master_weights": "float32",
        "activations": "16-bit",
    },
}


def notes(shape: ModelShape, plan: Plan) -> list[str]:
    """Sentences on what the plan's fine-tuning, sharding and optimizer choices mean for memory."""
    said: list[str] = []
    finetune = plan.finetune
    if finetune.lora_rank is not None:
        modules = targeted(shape, finetune)
        names = ", ".join(dict.fromkeys(m.name for m in modules))
        trained = trainable(shape, plan).parameters
        said.append(
            f"LoRA rank {finetune.lora_rank} on {names}: {trained / 1e6:,.1f} M adapter parameters "
            f"train ({trained / max(shape.parameters, 1):.2%} of the model); gradients, optimizer "
            "states and master copies are the adapters' only, the base is frozen and saves less "
            "for the backward pass"
        )
    if finetune.quantize == "4bit":
        double = "with" if finetune.double_quant else "without"
        said.append(
            f"4-bit {finetune.quant_type.upper()} base {double} double quantization (bitsandbytes): "
            "each layer's weight is dequantized to 16 bits for its matmul, one at a time; the "
            "embeddings, norms and output layer stay unquantized, in float32 once "
            "prepare_model_for_kbit_training casts them"
        )
    elif finetune.quantize == "8bit":
        said.append(
            "LLM.int8 base (bitsandbytes): int8 weights with a float32 scale per row, dequantized "
            "one layer at a time for the backward pass; the rest in float32 once "
            "prepare_model_for_kbit_training casts it"
        )
    if plan.fsdp is not None:
        words = {
            "full_shard": f"parameters, gradients and optimizer states sharded over {plan.shards} GPUs",
            "shard_grad_op": f"gradients and optimizer states sharded over {plan.shards} GPUs, the "
            "parameters gathered from the forward pass to the backward",
            "hybrid_shard": f"every state sharded over the {plan.shards} GPUs of a node, replicated "
            "across nodes",
            "no_shard": "nothing sharded (DistributedDataParallel)",
        }
        offload = "; parameters, gradients and the optimizer step on the CPU" if plan.fsdp_offload else ""
        said.append(f"FSDP {plan.fsdp}: {words[plan.fsdp]}{offload}")
    if plan.holding == "pure16":
        said.append(knowledge.memory_holding("pure16")["caveat"])
    if knowledge.optimizer_state(plan.optimizer).get("paged"):
        said.append(
            "paged optimizer: its state lives in CUDA unified memory, which the driver moves to "
            "host memory when the GPU runs short: a run over the GPU's memory by the optimizer's "
            "share slows down instead of failing"
        )
    if plan.step_in_backward:
        said.append(
            "optimizer step in the backward pass: each parameter steps and frees its gradient as "
            "soon as it is computed, so one gradient is alive at a time"
        )
    if plan.grad_accum > 1:
        said.append(
            f"gradient accumulation over {plan.grad_accum} micro-batches changes nothing in memory: "
            "the micro-batch sets the activations, and the gradients are held anyway"
        )
    return said


def dtypes(plan: Plan) -> dict[str, str | None]:
    """The dtype each part is held in (None: the part is empty in this plan)."""
    held = {key: DTYPES[plan.holding].get(key) for key in (*STATES, "activations")}
    finetune = plan.finetune
    sixteen = "float32" if plan.policy == "float32" else "16-bit"
    if finetune.lora and finetune.adapters_16bit:
        held.update(weights="16-bit", gradients="16-bit", working_copy=None)
    if finetune.lora:
        quantized = {"4bit": f"4-bit {finetune.quant_type.upper()}", "8bit": "int8"}
        held["frozen_weights"] = quantized.get(finetune.quantize or "", sixteen)
        held["dequantized"] = sixteen if finetune.quantize else None
        if finetune.quantize and plan.holding == "autocast":
            held["working_copy"] = "16-bit"
    if plan.fsdp not in (None, "no_shard"):
        held["gathered"] = sixteen
        held["working_copy"] = None
    state = knowledge.optimizer_state(plan.optimizer)
    if held.get("optimizer") and "min_8bit_size" in state:
        held["optimizer"] = "8-bit"
    elif plan.holding == "pure16" and not state.get("state_follows_parameters"):
        held["optimizer"] = "float32"
    return {**held, "loss_gradients": "float32", "optimizer_step": "float32"}
