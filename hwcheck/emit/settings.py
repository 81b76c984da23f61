"""The settings file written beside an emitted script: each choice it makes, with the reason."""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge
from hwcheck.base import __version__
from hwcheck.emit.spec import TRAINERS, ScriptSpec
from hwcheck.recommendation import Recommendation

GUIDE = "TensorFlow mixed precision guide, https://www.tensorflow.org/guide/mixed_precision"
_TENSOR_CORES = (
    "NVIDIA Deep Learning Performance guide, Matrix Multiplication Background, "
    "https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html"
)
# Frameworks whose scripts are TensorFlow (keras is too unless KERAS_BACKEND says otherwise).
_TENSORFLOW = ("keras", "keras-custom")
# Scripts whose runtime is PyTorch: its TF32 switch, no XLA, no oneDNN variable.
_TORCH = ("torch", *TRAINERS)


def _table() -> dict[str, Any]:
    return knowledge.load("training")


def _measured() -> dict[str, Any]:
    return _table()["measured_cpu"]


def settings_for(
    spec: ScriptSpec,
    recommendation: Recommendation | None = None,
    *,
    policy_from_user: bool = False,
    script_name: str | None = None,
    switched_because: str = "",
) -> dict[str, Any]:
    """The settings document for `spec`: every setting as {"value", "reason", ...}; `switched_because`
    says why the policy written is not the one recommended or asked for."""
    document: dict[str, Any] = {
        "generated_by": f"hwcheck {__version__}",
        "script": script_name,
        "framework": spec.framework,
    }
    if spec.framework in _TENSORFLOW:
        document["keras_version"] = spec.keras_major
    document.update(
        {
            "policy": _policy(spec, recommendation, policy_from_user, switched_because),
            "device": _device(spec),
            "loss_scaling": _loss_scaling(spec),
            "precision_guard": _guard(spec),
            "batch_size": _batch_size(spec),
            "xla": _xla(spec),
            "tf32": _tf32(spec),
            "onednn": _onednn(spec),
            "findings": [f.to_dict() for f in recommendation.findings] if recommendation else [],
        }
    )
    if spec.trainer:
        document["trainer"] = _trainer(spec)
    if spec.fp8:
        document["fp8"] = _fp8(spec, recommendation)
    if spec.peft:
        document["peft"] = _peft(spec)
    return document


def _peft(spec: ScriptSpec) -> dict[str, Any]:
    table = _table()["peft"]
    dtype = table["compute_dtype"][spec.policy]
    quantized = spec.peft == "qlora"
    result: dict[str, Any] = {
        "value": spec.peft,
        "lora": {
            "r": table["lora_r"],
            "lora_alpha": table["lora_alpha"],
            "lora_dropout": table["lora_dropout"],
            "target_modules": table["target_modules"],
            "task_type": table["task_type"],
        },
        "compute_dtype": dtype,
        "adapter_dtype": "float32",
        "optimizer": table["qlora_optimizer" if quantized else "lora_optimizer"],
        "reason": (
            f"{spec.policy}: the frozen base computes in {dtype}"
            + (" (bnb_4bit_compute_dtype: each 4-bit weight is dequantized to it)" if quantized else "")
            + "; the adapters stay float32 (PEFT's autocast_adapter_dtype)"
            + (", which the GradScaler needs to unscale their gradients" if spec.float16 else "")
            + "; "
            + (
                "paged 8-bit AdamW keeps the adapters' optimizer state small and lets it move to "
                "host memory under pressure."
                if quantized
                else "AdamW holds state for the adapters only."
            )
        ),
        "source": "; ".join(table["sources"]),
    }
    if quantized:
        result["quantization"] = {
            "load_in_4bit": True,
            "bnb_4bit_quant_type": table["quant_type"],
            "bnb_4bit_use_double_quant": table["double_quant"],
            "bnb_4bit_compute_dtype": dtype,
        }
    return result


def _fp8(spec: ScriptSpec, recommendation: Recommendation | None) -> dict[str, Any]:
    table = _table()["fp8"]
    available = recommendation.fp8.get("reason", "") if recommendation else ""
    return {
        "value": spec.fp8,
        "reason": (
            f"FP8 runs here: {available}. Linear layers whose two dimensions are multiples of "
            f"{table['multiple_of']} compute in FP8; the rest in mixed_bfloat16."
        ),
        "source": "; ".join(table["sources"]),
    }


def _trainer(spec: ScriptSpec) -> dict[str, Any]:
    words = _table()["trainer"][spec.framework]
    result: dict[str, Any] = {
        "value": words[spec.policy],
        "reason": f"How {words['label']} says {spec.policy}.",
        "source": words["source"],
    }
    if spec.framework == "deepspeed":
        result["zero_stage"] = spec.zero_stage
        result["offload_optimizer"] = spec.offload
        result["zero_reason"] = (
            "Set with --zero and --offload, or with --params/--model as the cheapest stage (then "
            "offload) under which `hwcheck fit` finds the model fits the GPUs the process sees; "
            "stage 0 keeps every model state whole on each GPU."
        )
    return result


def _policy(
    spec: ScriptSpec, recommendation: Recommendation | None, from_user: bool, switched_because: str = ""
) -> dict[str, Any]:
    if switched_because:
        return {"value": spec.policy, "chosen_with": "switched", "reason": switched_because}
    if recommendation is None:
        reason = "Chosen by the caller; no recommendation was made."
    else:
        advice = " ".join(reason.message for reason in recommendation.reasons)
        if not from_user:
            reason = advice
        elif spec.policy == recommendation.policy:
            reason = f"Chosen with --policy; hwcheck recommends it too. {advice}"
        else:
            reason = f"Chosen with --policy. hwcheck recommends {recommendation.policy} here: {advice}"
            why_not = " ".join(recommendation.why_not(spec.policy))
            if why_not:
                reason += f" Why not {spec.policy}: {why_not}"
    if spec.float16 and spec.device == "cpu":
        reason += " Note: mixed_float16 is never advised on a CPU; it runs slower than float32 there."
    chosen_with = "--policy" if from_user else "recommendation"
    return {"value": spec.policy, "chosen_with": chosen_with, "reason": reason}


def _device(spec: ScriptSpec) -> dict[str, Any]:
    reason = (
        "The device the advice targets. The PyTorch script trains there (cuda, mps or xpu) "
        "when PyTorch sees it and otherwise on the CPU, saying so on standard error; Keras 3 and "
        "JAX place the model on their accelerator by themselves, and the scripts warn when it "
        "lands on the CPU instead."
    )
    if spec.runtime == "rocm":
        reason += (
            " The GPU is AMD's, under ROCm: PyTorch on ROCm calls it 'cuda' "
            "(torch.cuda.is_available() is True and torch.version.hip is set), JAX's platform is 'rocm'."
        )
    if spec.device == "mps":
        reason += " mps is the Apple GPU (Metal Performance Shaders)."
    elif spec.device == "xpu":
        reason += " xpu is the Intel GPU (PyTorch's XPU build, or intel-extension-for-pytorch)."
    if spec.device == "tpu":
        reason += (
            " The script does not set up a TPU: build the model and optimizer inside "
            "tf.distribute.TPUStrategy(...).scope() on a TPU VM."
        )
    return {"value": spec.device, "reason": reason}


def _loss_scaling(spec: ScriptSpec) -> dict[str, Any]:
    if not spec.float16:
        range_reason = (
            "bfloat16 has float32's 8-bit exponent, so its gradients do not underflow"
            if spec.policy == "mixed_bfloat16"
            else "float32 gradients do not underflow in practice"
        )
        return {"value": "none", "reason": f"{range_reason}: no loss scaling.", "source": GUIDE}
    reason = (
        "float16 overflows above 65504 and flushes gradients below about 6e-8 to zero. Dynamic "
        "loss scaling multiplies the loss by the scale before the backward pass and divides "
        "the gradients by it; a step whose gradients hold inf or NaN is skipped and the scale "
        "is cut, and after a run of finite steps the scale grows again."
    )
    from hwcheck.emit.scripts import scaler_of

    framework = scaler_of(spec.framework)
    scale = _table()["loss_scale"][framework]
    implementation = scale["implementation"]
    if spec.framework == "keras":
        implementation += " (added by compile() for mixed_float16)"
    defaults = {"torch": "GradScaler's defaults", "deepspeed": "DeepSpeed's defaults"}.get(
        framework, "the Keras defaults"
    )
    result = {
        "value": "dynamic",
        "implementation": implementation,
        "initial_scale": scale["initial_scale"],
        "growth_factor": scale["growth_factor"],
        "backoff_factor": scale["backoff_factor"],
        {"torch": "growth_interval", "deepspeed": "loss_scale_window"}.get(framework, "growth_steps"): scale[
            "growth_steps"
        ],
        "reason": f"{reason} These are {defaults}.",
        "source": scale["source"] if framework != "keras" else f"{GUIDE}; {scale['source']}",
    }
    return result


def _guard(spec: ScriptSpec) -> dict[str, Any]:
    if not spec.float16:
        return {
            "value": "off",
            "reason": f"Only float16 overflows; {spec.policy} has float32's range.",
        }
    if spec.trainer:
        return {
            "value": "off",
            "reason": "The trainer owns the training loop and its loss scaler skips overflowing steps; "
            "hwcheck config --framework torch emits a loop with the guard.",
        }
    if spec.framework == "keras":
        return {
            "value": "off",
            "reason": "model.fit cannot rebuild the model in another precision mid-run; "
            "hwcheck config --framework keras-custom emits a loop with the guard.",
        }
    if not spec.guard:
        return {"value": "off", "reason": "Turned off with --no-fallback."}
    if spec.framework in ("torch", "jax"):
        how = (
            "computes in the fallback's dtype and drops the loss scaling; the parameters stay "
            "float32 and the optimizer state is untouched, so nothing is rebuilt"
        )
    else:
        how = (
            "rebuilds the model under the fallback policy (layers take their policy when they "
            "are built, so setting a new global policy alone would change nothing), copies "
            "the float32 weights and the optimizer state across and carries on"
        )
    target = (
        "mixed_bfloat16, which the target hardware runs fast with float32's range"
        if spec.has_bfloat16
        else "float32, as the target hardware has no fast bfloat16"
    )
    guard = _table()["guard"]
    return {
        "value": "on",
        "fallback_policy": spec.fallback_policy,
        "min_loss_scale": guard["min_loss_scale"],
        "max_skipped_steps": guard["max_skipped"],
        "window_steps": guard["window"],
        "reason": (
            "Gives up on float16 when gradients overflow even at a loss scale of "
            f"{guard['min_loss_scale']:g} or when more than {guard['max_skipped']} "
            f"of the last {guard['window']} steps overflowed, falls back to {target}, "
            f"and {how}. Test it with --inject-overflow STEP."
        ),
    }


def _batch_size(spec: ScriptSpec) -> dict[str, Any]:
    from hwcheck.engine.native import layer_words

    # The same claim as doctor's gpu-tensor-core-shapes finding (rules/policy/nvidia.toml).
    words = layer_words("tensorflow" if spec.framework == "keras-custom" else spec.framework)
    return {
        "value": spec.batch_size,
        "advice": "multiples of 8",
        "reason": (
            "Tensor Cores run matrices of any shape from cuBLAS 11 and cuDNN 7.6.3 on (before, "
            f"only multiples of 8), but dimensions that are multiples of 8 run fastest: {words}, "
            "and the batch size. With 16-bit activations the batch size can often be doubled."
        ),
        "source": f"{_TENSOR_CORES} (Tensor Core Requirements); {GUIDE} (GPU performance tips)",
    }


def _xla(spec: ScriptSpec) -> dict[str, Any]:
    if spec.framework in _TORCH:
        return {
            "value": "not used",
            "reason": "The PyTorch script runs eagerly; torch.compile is optional and was "
            "not measured by hwcheck.",
        }
    if spec.framework == "jax":
        return {"value": "on", "reason": "JAX compiles every train step with XLA (jax.jit)."}
    cpu = _measured()
    if spec.float16:
        on_gpu = (
            "it is on too (Keras 3 'auto' means XLA there; under the JAX backend always, under torch never)"
            if spec.framework == "keras" and spec.keras_major == 3
            else "it is on too (try jit_compile=False and compare)"
        )
        return {
            "value": "on" if spec.framework == "keras" else "on without a GPU",
            "reason": (
                f"mixed_float16 on a CPU with the defaults took about "
                f"{cpu['float16_default_ms'] / 1000:g} s per step ({cpu['float16_slowdown']}x "
                "float32): oneDNN's fused float16 MatMul+BiasAdd is pathological. Under "
                f"jit_compile=True it took {cpu['float16_jit_ms']:g} ms (custom loop; model.fit "
                f"{cpu['float16_fit_jit_ms']:g} ms), so the script compiles its float16 step "
                f"with XLA on TensorFlow. On a GPU {on_gpu}."
            ),
            "source": cpu["setup"],
        }
    if spec.device == "cpu" and spec.policy == "mixed_bfloat16":
        reason = (
            f"bfloat16 on a CPU is fastest through oneDNN without XLA: {cpu['bfloat16_ms']:g} "
            f"ms/step, against {cpu['bfloat16_jit_ms']:g} ms under jit_compile=True (float32 "
            f"under jit: {cpu['float32_jit_ms']:g} ms)."
        )
        source: str | None = cpu["setup"]
    elif spec.device == "gpu":
        reason = "XLA can speed up training on GPUs further; try jit_compile=True and compare."
        source = f"{GUIDE} (XLA)"
    else:
        reason = "Left at TensorFlow's default."
        source = None
    value = "auto" if spec.framework == "keras" and spec.keras_major == 3 else "off"
    if value == "auto":
        reason += (
            " Keras 3's compile() default ('auto') turns XLA on under TensorFlow only when a GPU "
            "is visible, always under JAX, never under torch."
        )
    result = {"value": value, "reason": reason}
    if source:
        result["source"] = source
    return result


def _tf32(spec: ScriptSpec) -> dict[str, Any]:
    if not (spec.device == "gpu" and spec.has_tf32):
        return {
            "value": "n/a",
            "reason": "TF32 needs NVIDIA GPUs of compute capability 8.0 or newer; "
            f"the target ({spec.device}) has none.",
        }
    if spec.framework == "jax":
        return {
            "value": "default",
            "reason": "JAX's default matmul precision leans toward speed: TF32 for float32 dot "
            "products on recent GPUs; jax.default_matmul_precision('float32') gives full float32.",
            "source": "JAX docs, Matmul precision: https://docs.jax.dev/en/latest/201/precision.html",
        }
    if spec.framework in _TORCH:
        return {
            "value": "on",
            "reason": (
                "PyTorch leaves TF32 off for float32 matmuls by default "
                "(torch.backends.cuda.matmul.allow_tf32 is False since 1.12; cuDNN convolutions "
                "use it). The script calls torch.set_float32_matmul_precision('high') on CUDA "
                "to use it; remove that call for full float32 precision."
            ),
            "source": "PyTorch docs: torch.set_float32_matmul_precision, CUDA semantics (TF32)",
        }
    return {
        "value": "on",
        "reason": (
            "TensorFlow runs float32 matmuls and convolutions in TF32 (10-bit mantissa) by "
            "default on compute capability 8.0+; for full float32 call "
            "tf.config.experimental.enable_tensor_float_32_execution(False)."
        ),
        "source": "tf.config.experimental.enable_tensor_float_32_execution API docs",
    }


def _onednn(spec: ScriptSpec) -> dict[str, Any]:
    if spec.framework in (*_TORCH, "jax"):
        return {"value": "n/a", "reason": "Nothing to set: TensorFlow's TF_ENABLE_ONEDNN_OPTS only."}
    if spec.device != "cpu":
        return {"value": "n/a", "reason": "oneDNN speeds up CPU ops only."}
    cpu = _measured()
    if spec.policy == "mixed_bfloat16":
        return {
            "value": "on",
            "reason": f"bfloat16 on AMX needs oneDNN: {cpu['bfloat16_ms']:g} ms/step with it, "
            f"{cpu['bfloat16_onednn_off_ms']:g} ms with TF_ENABLE_ONEDNN_OPTS=0. Leave "
            "TF_ENABLE_ONEDNN_OPTS unset or 1.",
            "source": cpu["setup"],
        }
    if spec.float16:
        return {
            "value": "on",
            "reason": (
                "Left on. Its pathological fused float16 kernels are avoided by compiling the "
                f"float16 step with XLA ({cpu['float16_jit_ms']:g} ms/step) rather than by "
                f"TF_ENABLE_ONEDNN_OPTS=0 ({cpu['float16_onednn_off_ms']:g} ms), which "
                "TensorFlow reads once at import and would also slow a fallback to bfloat16."
            ),
            "source": cpu["setup"],
        }
    return {
        "value": "on",
        "reason": "TensorFlow's default on Linux x86 since 2.9; nothing to change for float32.",
        "source": "TensorFlow 2.9 release notes (oneDNN on by default on Linux x86)",
    }
