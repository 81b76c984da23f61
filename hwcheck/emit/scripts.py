"""What each framework's template is rendered with: the spec, the figures, the prose."""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge
from hwcheck.base import __version__
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import Prose, Word, render

TEMPLATE_FOR = {
    "keras": "keras.py.jinja",
    "keras-custom": "keras_custom.py.jinja",
    "torch": "torch.py.jinja",
    "jax": "jax.py.jinja",
    "lightning": "lightning.py.jinja",
    "hf-trainer": "hf_trainer.py.jinja",
    "accelerate": "accelerate.py.jinja",
    "deepspeed": "deepspeed.py.jinja",
}
# The PEFT (--lora / --qlora) script of each framework that has one.
PEFT_TEMPLATE_FOR = {
    "torch": "peft_torch.py.jinja",
    "hf-trainer": "peft_hf_trainer.py.jinja",
    "accelerate": "peft_accelerate.py.jinja",
    "lightning": "peft_lightning.py.jinja",
}
# What a training step returns in each framework: the annotation of make_step's function.
LOSS_TYPE = {"keras": "float", "keras-custom": "tf.Tensor", "jax": "jax.Array"}
# Whose loss scaler each script uses: the trainers on PyTorch use torch.amp.GradScaler's.
SCALER_OF = {"keras-custom": "keras", "lightning": "torch", "hf-trainer": "torch", "accelerate": "torch"}
_SAMPLE_LOSS = "1.83107"
# The advised device (gpu, cpu, tpu, mps, xpu) as PyTorch and JAX name it.
TORCH_DEVICES = {"gpu": "cuda", "cpu": "cpu", "tpu": "cpu", "mps": "mps", "xpu": "xpu"}
JAX_PLATFORMS = {"gpu": "gpu", "cpu": "cpu", "tpu": "tpu", "mps": "METAL", "xpu": "cpu"}


def script_text(spec: ScriptSpec) -> str:
    """The rendered training script for `spec`."""
    if spec.peft:
        return render(PEFT_TEMPLATE_FOR[spec.framework], **context(spec), **peft_context(spec))
    return render(TEMPLATE_FOR[spec.framework], **context(spec))


def context(spec: ScriptSpec) -> dict[str, Any]:
    """Every name the templates use, with text values marked as Word or Prose where bare."""
    values = knowledge.load("training")
    if spec.has_bfloat16:
        why = "mixed_bfloat16: the target hardware runs bfloat16 fast, with float32's range."
    else:
        why = "float32: the target hardware has no fast bfloat16."
    return {
        "version": Word(__version__),
        "policy": spec.policy,
        # The advised device in each framework's words (the TPU script sets up no XLA device).
        "torch_device": TORCH_DEVICES[spec.device],
        "target_device": spec.device,
        "jax_platform": JAX_PLATFORMS[spec.device],
        "keras_major": spec.keras_major,
        "float16": spec.float16,
        "bfloat16": spec.policy == "mixed_bfloat16",
        "uses_guard": spec.uses_guard,
        "has_tf32": spec.has_tf32,
        "device": spec.device,
        "runtime": spec.runtime,
        "steps": spec.steps,
        "batch_size": spec.batch_size,
        "fallback_policy": spec.fallback_policy,
        "why_fallback": Prose(why),
        "guard": values["guard"],
        "loss_scale": values["loss_scale"].get(scaler_of(spec.framework), {}),
        "loss_type": Word(LOSS_TYPE.get(spec.framework, "torch.Tensor")),
        "words": _words(values["trainer"].get(spec.framework, {})),
        "fp8": spec.fp8,
        "fp8_label": Prose(
            {"torchao": "torchao's float8 training", "transformer-engine": "Transformer Engine"}.get(
                spec.fp8 or "", ""
            )
        ),
        "fp8_multiple": values["fp8"]["multiple_of"],
        "guard_help": Prose(" and the precision guard" if spec.uses_guard else ""),
        "title": Prose(_title(spec)),
        "output_lines": Prose(_output_lines(spec)),
    }


# Why the compute dtype is what it is, per policy: said in the script beside COMPUTE_DTYPE.
DTYPE_REASONS = {
    "mixed_bfloat16": "bfloat16 here: the target runs it fast (GPUs of compute capability 8.0 "
    "or higher, TPUs, CPUs with AMX), with float32's range, so no loss scaling.",
    "mixed_float16": "float16 here: the GPU has no fast bfloat16 (compute capability below "
    "8.0: Volta, Turing), so the loss is scaled and the adapters stay float32.",
    "float32": "float32 here: the target has no fast 16-bit compute.",
}
ADAPTER_REASONS = {
    "mixed_float16": "GradScaler unscales float32 gradients only, and float16 updates of "
    "small adapters round away.",
    "mixed_bfloat16": "bfloat16's 8-bit mantissa would round away the adapters' small updates.",
    "float32": "the whole run is float32.",
}


def _comment(text: str, indent: str = "") -> Prose:
    """`text` as comment lines of at most 92 columns (the first line's # is the template's)."""
    import textwrap

    lines = textwrap.wrap(text, width=90 - len(indent))
    return Prose(f"\n{indent}# ".join(lines))


def peft_context(spec: ScriptSpec) -> dict[str, Any]:
    """The names the PEFT templates use beside context()'s: the adapters and the quantization."""
    table = knowledge.load("training")["peft"]
    quantize = spec.peft == "qlora"
    if quantize:
        optimizer = "bitsandbytes' paged 8-bit AdamW over the adapters: QLoRA's optimizer."
    else:
        optimizer = "AdamW over the adapters only: the frozen base has no optimizer state."
    return {
        "method": spec.peft or "lora",
        "method_word": Word(spec.peft or "lora"),
        "quantize": quantize,
        "target_modules": [str(name) for name in table["target_modules"]],
        "task_type": table["task_type"],
        "quant_type": table["quant_type"],
        "double_quant": bool(table["double_quant"]),
        "lora_r": int(table["lora_r"]),
        "lora_alpha": int(table["lora_alpha"]),
        "lora_dropout": float(table["lora_dropout"]),
        "optimizer_word": table["qlora_optimizer" if quantize else "lora_optimizer"],
        "optimizer_doc": Prose(optimizer),
        "dtype_reason": _comment(DTYPE_REASONS[spec.policy]),
        "adapter_reason": _comment(ADAPTER_REASONS[spec.policy], "    "),
    }


def scaler_of(framework: str) -> str:
    """The key of rules/knowledge/training.toml [loss_scale] whose scaler `framework`'s script uses."""
    return SCALER_OF.get(framework, framework)


def _words(table: dict[str, Any]) -> dict[str, str]:
    return {
        key: value for key, value in table.items() if key in ("float32", "mixed_bfloat16", "mixed_float16")
    }


TRAINER_TITLES = {
    "lightning": "Train with PyTorch Lightning in {policy}: Trainer(precision={word!r}).",
    "hf-trainer": "Train with the Hugging Face Trainer in {policy}: TrainingArguments({word}).",
    "accelerate": "Train with Accelerate in {policy}: Accelerator(mixed_precision={word!r}).",
    "deepspeed": "Train with DeepSpeed in {policy} (ZeRO stage {stage}), from its JSON config.",
}


PEFT_LABELS = {
    "torch": "PyTorch",
    "hf-trainer": "the Hugging Face Trainer",
    "accelerate": "Accelerate",
    "lightning": "PyTorch Lightning",
}


def _title(spec: ScriptSpec) -> str:
    policy = spec.policy
    if spec.peft:
        dtype = knowledge.load("training")["peft"]["compute_dtype"][policy]
        what = "QLoRA (4-bit NF4 base)" if spec.peft == "qlora" else "LoRA"
        return f"Fine-tune with {what} and {PEFT_LABELS[spec.framework]}, computing in {dtype}."
    if spec.trainer:
        words = knowledge.load("training")["trainer"][spec.framework]
        if spec.fp8:
            policy = f"FP8 ({spec.fp8}) and mixed_bfloat16"
        word = words["fp8"] if spec.fp8 else words[spec.policy]
        return TRAINER_TITLES[spec.framework].format(policy=policy, word=word, stage=spec.zero_stage)
    if spec.framework == "keras":
        backends = "any backend" if spec.keras_major == 3 else "tf_keras"
        return f"Train a Keras {spec.keras_major} model in {policy} ({backends})."
    if spec.framework == "keras-custom":
        if spec.float16:
            return "Train a Keras model in mixed_float16 with a custom loop and dynamic loss scaling."
        return f"Train a Keras model in {policy} with a custom tf.GradientTape loop."
    if spec.framework == "torch":
        if spec.float16:
            return "Train a PyTorch model in mixed_float16: autocast float16 with a GradScaler."
        if spec.fp8:
            return f"Train a PyTorch model in FP8 ({spec.fp8}) with mixed_bfloat16 for the rest."
        if policy == "mixed_bfloat16":
            return "Train a PyTorch model in mixed_bfloat16: autocast bfloat16, no loss scaling."
        return "Train a PyTorch model in float32."
    if spec.float16:
        return "Train a JAX model in mixed_float16: float16 compute with a dynamic loss scale."
    if policy == "mixed_bfloat16":
        return "Train a JAX model in mixed_bfloat16: bfloat16 compute, float32 parameters."
    return "Train a JAX model in float32."


def _output_lines(spec: ScriptSpec) -> str:
    line = f"step=12 policy={spec.policy} loss={_SAMPLE_LOSS}"
    if spec.peft:
        return (
            "It prints what it trains, then one line of key=value pairs per step:\n"
            f"    start policy={spec.policy} method={spec.peft} quantized={spec.peft == 'qlora'} "
            "trainable=... adapter_dtype=float32 ...\n"
            f"    {line}"
        )
    if spec.fp8:
        return f"Each step prints one line of key=value pairs:\n    {line}"
    if spec.float16:
        if not spec.trainer:
            scales = knowledge.load("training")["loss_scale"]
            initial = scales[scaler_of(spec.framework)]["initial_scale"]
            line += f" loss_scale={initial:g}"
            if spec.framework != "keras":
                line += " skipped=0"
    text = f"Each step prints one line of key=value pairs:\n    {line}"
    if spec.uses_guard:
        text += (
            "\nand when the precision guard gives up on float16 it prints\n"
            "    switch step=N from=mixed_float16 to=POLICY because: REASON\n"
        )
        if spec.framework == "keras-custom":
            text += "then rebuilds the model in POLICY and carries on with the same weights."
        else:
            text += "and carries on in POLICY with the same parameters and optimizer state."
    return text
