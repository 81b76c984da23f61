"""The text `hwcheck fit` prints: the plan, each part per GPU, the host's share, the verdict,
what would make it fit, and a measurement beside the estimate."""

from __future__ import annotations

from typing import Any

from hwcheck.recommendation.memory_plan import STATES

GIB = 2**30
COLUMNS = 80  # fit's text is for a terminal: every line within 80 columns


# The runtime's context by the runtime that drives the GPUs (Device.runtime): its label and what
# it is. hwcheck has a published size for CUDA's alone (memory.toml); it counts that in place of
# another runtime's and says so.
CONTEXTS = {
    "cuda": ("CUDA context", "the CUDA runtime's own memory on each GPU"),
    "rocm": ("ROCm context", "the ROCm (HIP) runtime's own memory on each GPU"),
    "xpu": ("XPU context", "the XPU runtime's (SYCL, Level Zero) own memory on each GPU"),
    "mps": ("Metal context", "the Metal runtime's own memory, under MPS"),
    "tpu": ("TPU runtime", "the TPU runtime's (libtpu's) own memory on each chip"),
}


# What each part is, as the text output names it.
LABELS = {
    "weights": "weights",
    "frozen_weights": "frozen base",
    "working_copy": "16-bit working copy",
    "dequantized": "dequantized layer",
    "gathered": "gathered by FSDP",
    "gradients": "gradients",
    "float32_gradients": "float32 gradients",
    "optimizer": "optimizer states",
    "master_weights": "master weights",
    "activations": "activations",
    "loss_gradients": "loss gradients",
    "optimizer_step": "optimizer step",
    "cuda_context": CONTEXTS["cuda"][0],
    "communication_buckets": "communication buckets",
    "fragmentation": "fragmentation headroom",
    "total": "total",
}


# What each part is and when it is there, one line each under the figures.
MEANINGS = {
    "weights": "the parameters, held all through training",
    "frozen_weights": "the base model's weights, which do not train",
    "working_copy": "autocast's 16-bit copy of the matmul weights, each step",
    "dequantized": "one quantized layer's weight in 16 bits, for its matmul",
    "gathered": "the units FSDP all-gathers whole for their forward and backward",
    "gradients": "one per parameter, from the backward pass until the step",
    "float32_gradients": "DeepSpeed's float32 copy of its gradients, for the step",
    "optimizer": "the optimizer's state per parameter (AdamW: two moments)",
    "master_weights": "the float32 copy that 16-bit training under ZeRO updates",
    "activations": "what the forward pass saves for the backward, for this batch",
    "loss_gradients": "the float32 gradients of the logits as the backward starts",
    "optimizer_step": "the step's temporaries beyond the activations freed before it",
    "cuda_context": CONTEXTS["cuda"][1],
    "communication_buckets": "all-reduce buckets of the gradients, with 2+ GPUs",
    "fragmentation": "kept for the allocator's fragmentation (memory.toml)",
}


# The same parts with LoRA, where only the adapters train.
ADAPTER_MEANINGS = {
    "weights": "LoRA's A and B matrices, the only weights that train",
    "gradients": "one per adapter parameter, from the backward pass until the step",
    "optimizer": "the optimizer's state per adapter parameter",
}


def context_words(context: dict[str, Any] | None) -> tuple[str, str, str | None]:
    """The context's label, what it is, and a note where its figure is not the runtime's own."""
    from hwcheck.base.safe import terminal_text

    if context is None or context.get("runtime") is None:
        label, meaning = CONTEXTS["cuda"]
        note = None if context is None else "which runtime drives the GPUs is not known: CUDA's is assumed"
        return label, meaning, note
    runtime = context["runtime"]
    name = terminal_text(str(runtime))
    label, meaning = CONTEXTS.get(
        name, ("runtime context", f"the {name} runtime's own memory on each device")
    )
    note = None
    if not context["published"]:
        figure = context["bytes"] / 1e9
        note = f"no published figure for it: hwcheck counts CUDA's, {figure:g} GB"
    return label, meaning, note


def _gib(value: int | None) -> str:
    return "unknown" if value is None else f"{value / GIB:.2f} GiB"


def fit_text(document: dict[str, Any]) -> str:
    """The whole report, lines within 80 columns where the figures allow."""
    from hwcheck.base.safe import terminal_text

    plan = document["plan"]
    zero = "no ZeRO" if plan["zero"] is None else f"ZeRO-{plan['zero']}"
    held = {
        "float32": "float32 weights and compute",
        "pure16": "16-bit weights, gradients and optimizer states",
        "autocast": "float32 weights, 16-bit compute",
        "master": "16-bit weights, float32 master copy",
    }
    if plan.get("fsdp") is not None:
        zero = f"FSDP {plan['fsdp']}" + (", CPU offload" if plan.get("fsdp_offload") else "")
    moved = [name for name, key in (("optimizer", "offload"), ("parameters", "offload_params")) if plan[key]]
    offload = f", {' and '.join(moved)} offloaded to the CPU" if moved else ""
    active = document.get("active_parameters")
    experts = (
        f" ({active / 1e9:.2f} B active per token)" if active and active != document["parameters"] else ""
    )
    holding = held[plan["weights_held"]]
    if plan.get("lora"):
        frozen = document["dtypes"].get("frozen_weights") or "16-bit"
        holding = f"{frozen} frozen base, {plan['lora'].get('dtype', 'float32')} adapters"
    lines = [
        f"model: {document['parameters'] / 1e9:.2f} B parameters{experts}, optimizer {plan['optimizer']}",
        f"precision: {plan['policy']} ({holding})",
        f"GPUs: {plan['gpus']} ({plan['gpus_per_node']} per node), {zero}{offload}",
        f"batch {plan['batch']} x {plan['seq_len']} tokens per GPU"
        + (", activation checkpointing" if plan["checkpointing"] else ""),
    ]
    if plan.get("lora"):
        lora = plan["lora"]
        quantized = plan.get("quantize")
        base = f", {quantized['bits']} base" if quantized else ""
        lines.append(
            f"fine-tuning: {'QLoRA' if quantized and quantized['bits'] == '4bit' else 'LoRA'} rank "
            f"{lora['rank']} on {terminal_text(','.join(lora['targets']))}{base}"
        )
    if plan["accounting"] == "deepspeed":
        lines.append("model states and host memory as DeepSpeed 0.19's estimators count them")
    lines.append("per GPU:")
    dtypes = document["dtypes"]
    shown: list[str] = []
    context_label = context_words(document.get("context"))[0]
    adapters = bool(plan.get("lora"))
    for key, value in document["per_device"].items():
        label = context_label if key == "cuda_context" else LABELS.get(key, key.replace("_", " "))
        if key in ("weights", "gradients", "optimizer") and adapters:
            label = "adapter " + label
        if key == "cuda_context" and document.get("context", True) is None:
            continue  # not on a GPU: no runtime context
        if key in ("loss_gradients", "optimizer_step") and not value:
            continue  # unknown with the activations, or nothing beyond them
        if key == "activations" and value is None:
            lines.append(f"  {label:<24} unknown: --model sizes them")
            shown.append(key)
            continue
        if key in NEW_PARTS and not value:
            continue  # not part of this plan (no LoRA, no quantized base, no FSDP)
        if not value and key in dtypes and dtypes.get(key) is None:
            continue  # not held in this plan (a working copy without autocast, master weights without ZeRO)
        dtype = dtypes.get(key) or ""
        if not value and document["host"]["per_node"] and (document["host"]["per_node"].get(key) or 0) > 0:
            dtype = "offloaded to the host"
        lines.append(f"  {label:<24} {value / GIB:9.2f} GiB  {dtype}".rstrip())
        shown.append(key)
    lines.extend(_meanings(document, shown))
    lines.extend(_per_parameter(document))
    for note in document.get("notes") or []:
        lines.append("note: " + terminal_text(note))
    memory = document["device_memory"]
    device = terminal_text(document["device"])
    if memory is None:
        lines.append(f"GPU memory: unknown ({device}); --gpu-memory GIB plans for a GPU of that size")
    else:
        lines.append(f"GPU memory: {memory / GIB:.2f} GiB per GPU ({device})")
    lines.extend(_host_lines(document["host"]))
    lines.append("fits: " + _verdict(document))
    if document["fits"] is True and document.get("margin"):
        lines.append("margin: " + margin_text(document["margin"]))
    if document["suggestions"]:
        lines.append("what would make it fit, cheapest first:")
        for s in document["suggestions"]:
            host = s.get("host_per_node")
            extra = f", {host / GIB:.2f} GiB host per node" if host else ""
            lines.append(f"  {s['change']:<24} {s['total'] / GIB:9.2f} GiB per GPU{extra}")
    elif document["fits"] is False and document["device_fits"] is False:
        lines.append("no single change makes it fit: combine --zero 3, --offload, --checkpointing, more GPUs")
    solved = document.get("solved")
    if solved:
        what = "micro-batch" if solved["what"] == "batch" else "sequence length"
        if solved["value"] is None:
            lines.append(f"largest {what} that fits: none, not even 1")
        else:
            lines.append(f"largest {what} that fits: {solved['value']} (the figures above are for it)")
    if document.get("measured"):
        lines.extend(measured_lines(document))
    if document.get("accounting_note"):
        lines.append("how hwcheck's default differs: " + document["accounting_note"])
    return "\n".join(within_columns(lines)) + "\n"


def within_columns(lines: list[str]) -> list[str]:
    """Each line longer than COLUMNS wrapped, its continuations two further in than its indent."""
    from hwcheck.base.wrap import cells, wrap_text

    fitted: list[str] = []
    for line in lines:
        if cells(line) <= COLUMNS:
            fitted.append(line)
            continue
        text = line.lstrip(" ")
        indent = line[: len(line) - len(text)]
        fitted.extend(wrap_text(text, COLUMNS, indent + "  ", indent))
    return fitted


# The model states' parts: recommendation.memory_plan.STATES, the one list of them.
STATE_PARTS = STATES
# The parts only LoRA, a quantized base or FSDP hold: shown only where they hold something.
NEW_PARTS = ("frozen_weights", "dequantized", "gathered")


def _meanings(document: dict[str, Any], shown: list[str]) -> list[str]:
    """What each part shown is and when it applies, and why the optimizer step is not shown."""
    lines = ["what the parts are:"]
    for key in shown:
        if key == "cuda_context":
            label, meaning, note = context_words(document.get("context"))
            lines.append(f"  {label}: {meaning}")
            lines += [f"    {note}"] if note else []
        elif key in MEANINGS:
            label = LABELS[key]
            meaning = MEANINGS[key]
            if key in ("weights", "gradients", "optimizer") and document["plan"].get("lora"):
                label = "adapter " + label
                meaning = ADAPTER_MEANINGS[key]
            lines.append(f"  {label}: {meaning}")
    per_device, plan = document["per_device"], document["plan"]
    if "optimizer_step" not in shown and per_device.get("activations") is not None:
        if plan.get("fsdp_offload"):
            why = "it runs on the CPU, with FSDP's offloaded shards"
        elif plan["zero"] is not None or plan["offload"]:
            why = "DeepSpeed steps its partitions in place"
        else:
            why = "its temporaries fit where the activations were freed"
        lines.append(f"  {LABELS['optimizer_step']}: none: {why}")
    return lines


def _per_parameter(document: dict[str, Any]) -> list[str]:
    """One line relating the model states per GPU to the familiar 16 bytes per parameter."""
    parameters = document.get("parameters") or 0
    if not parameters:
        return []
    states = sum(document["per_device"].get(key) or 0 for key in STATE_PARTS)
    return [
        f"model states: {states / parameters:.1f} bytes per parameter per GPU (the familiar",
        "  16 is ZeRO's mixed precision with Adam, unpartitioned: 16-bit weights and",
        "  gradients, a float32 master copy and two moments; autocast keeps float32",
        "  weights and gradients and a 16-bit copy instead)",
    ]


def _host_lines(host: dict[str, Any]) -> list[str]:
    from hwcheck.base.safe import terminal_text

    source = terminal_text(host["source"])
    if host["total_bytes"] is None:
        there = f"host memory: unknown ({source})"
    else:
        free, total = _gib(host["available_bytes"]), _gib(host["total_bytes"])
        there = f"host memory: {free} available of {total} ({source})"
    needed = host["per_node"]
    if needed is None:
        return [there + "; nothing is offloaded"]
    lines = [f"per node, offloaded to host memory ({host['gpus_per_node']} GPU(s), pinned):"]
    for key, value in needed.items():
        if value or key == "total":
            lines.append(f"  {LABELS.get(key, key):<24} {value / GIB:9.2f} GiB")
    lines.append(there)
    return lines


def _verdict(document: dict[str, Any]) -> str:
    host = document["host"]
    if document["fits"] is True:
        estimate = document["per_device"]["total"] - document["per_device"]["fragmentation"]
        share = estimate / document["device_memory"] if document["device_memory"] else 0
        if document.get("verdict") == "tight":
            if document["device_fits"] is False:
                return (
                    f"tight: the estimate without its headroom is {share:.0%} of the GPU's memory; "
                    "within the estimate's measured error it may still run: plan a smaller batch "
                    "(--solve batch)"
                )
            return (
                f"tight: the estimate without its headroom is {share:.0%} of the GPU's memory, "
                "above the margin: plan a smaller batch (--solve batch)"
            )
        return f"yes (the estimate without its headroom is {share:.0%} of the GPU's memory)"
    memory = document["device_memory"]
    lowest = document.get("lowest_peak")
    margin_kept = document.get("margin") is not None and lowest is not None
    if document["device_fits"] is False and (not margin_kept or lowest > memory):
        said = ""
        if margin_kept:
            said = f" (even the estimate less its measured error is {lowest / memory:.0%} of it)"
        if document["model_states_fit"] is False:
            return "no: the model states alone exceed the GPU memory" + said
        return "no: the GPU memory is exceeded" + said
    if host["fits"] is False:
        return "no: the offloaded states exceed the host memory"
    if document["device_memory"] is None:
        return "unknown: the GPU memory is unknown"
    if host["per_node"] is not None and host["fits"] is None:
        return "unknown: the host memory is unknown, the offloaded states need " + _gib(
            host["per_node"]["total"]
        )
    if not document["activations_known"]:
        return "model states fit; activations unknown (give --model to size them)"
    return "unknown"


def margin_text(kept: dict[str, Any]) -> str:
    """The safe share the verdict kept and where it came from: the family's measured error or
    the published study (its ceiling)."""
    from hwcheck.base.safe import terminal_text

    share, study, measured = kept["safe_share"], kept["study"], kept["measured"]
    runs = f"a study of {study['runs']} training runs ({study['cited']})"
    family = "the estimate for " + terminal_text(str(kept["family"] or ""))
    family += " with activation checkpointing" if kept["checkpointing"] else ""
    if measured is None:
        text = f"{share:.0%} of the GPU's memory: in {runs} none ran out of memory below it"
        if kept["family"]:
            text += f"; hwcheck has not measured {family}"
        return text
    seen = f"({measured['file']}, {measured['date']})"
    under = -measured["worst_error"]
    if kept["source"] == "measured":
        return (
            f"{share:.0%} of the GPU's memory: {family} was up to {under:.1%} under the "
            f"peak measured {seen}, so the estimate plus that must fit; never above the "
            f"{study['share']:.0%} of {runs}, below which none ran out of memory"
        )
    text = f"{share:.0%} of the GPU's memory: in {runs} none ran out of memory below it; "
    if under <= 0:
        return text + f"{family} was never under the peak measured {seen}"
    return (
        text + f"{family} was at most {under:.1%} under the peak measured {seen}, "
        f"which alone would allow {measured['share']:.0%}"
    )


# The parts a measurement tells, as the framework counts them.
MEASURED_PARTS = ("weights", "frozen_weights", "working_copy", "gradients", "optimizer", "activations")
DEVICE_WORDS = {
    "cpu": "the CPU",
    "cuda": "the CUDA GPU",
    "rocm": "the ROCm GPU",
    "mps": "MPS",
    "xpu": "the XPU",
}


def measured_lines(document: dict[str, Any]) -> list[str]:
    """The measurement beside the estimate, part by part where the framework tells, then the peak."""
    from hwcheck.base.safe import terminal_text

    measured = document["measured"]
    where = DEVICE_WORDS.get(str(measured.get("device")), "the device")
    if measured.get("status") == "failed":
        reason = terminal_text(str(measured.get("error") or "no answer"))[:300]
        return [f"measured: failed on {where} ({reason}); nothing was cached"]
    versions = measured.get("versions") or {}
    named = ", ".join(f"{terminal_text(str(k))} {terminal_text(str(v))}" for k, v in sorted(versions.items()))
    status = measured.get("status") == "reused"
    lines = [
        f"measured: {measured.get('steps')} training steps on {where}"
        + (" (reused from the cache)" if status else ""),
        f"  with {named}"[:80],
        f"  {'part':<24} {'estimate':>12} {'measured':>12}",
    ]
    per_device = document["per_device"]
    parts = measured.get("parts") or {}
    for key in MEASURED_PARTS:
        value = parts.get(key)
        if not isinstance(value, int) or (not value and not per_device.get(key)):
            continue
        estimate = per_device.get(key) or 0
        label = "activations (saved)" if key == "activations" else LABELS.get(key, key)
        lines.append(f"  {label:<24} {_gib(estimate):>12} {_gib(value):>12}")
    allocated = per_device["total"] - per_device["cuda_context"] - per_device["fragmentation"]
    peak = measured["peak_bytes"]
    difference = 100 * (allocated - peak) / peak
    lines.append(f"  {'peak':<24} {_gib(allocated):>12} {_gib(peak):>12}  ({difference:+.1f} %)")
    context = document.get("context")
    less = f"the {context_words(context)[0]} and the headroom" if context else "the headroom"
    lines.append(f"  the estimate less {less}; the peak is")
    lines.append("  " + terminal_text(str(measured.get("how") or ""))[:200])
    counted = measured.get("counted_peak_bytes")
    if isinstance(counted, int) and counted > 0:
        counted_difference = 100 * (allocated - counted) / counted
        lines.append(
            f"  {'torch allocated at most':<24} {'':>12} {_gib(counted):>12}  ({counted_difference:+.1f} %)"
        )
        lines.append("  (the same steps under torch's profiler: the resident set beyond this")
        lines.append("  is the C allocator's slack, memory freed but not given back)")
    return lines
