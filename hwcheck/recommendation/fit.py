"""`hwcheck fit`: the memory one GPU holds to train a model, and the host memory offload needs.

Model states follow the ZeRO paper (rules/knowledge/memory.toml): weights, gradients, optimizer
state and master weights per parameter, partitioned over the GPUs by the ZeRO stage, plus the
float32 gradients DeepSpeed's optimizers step on. Activations follow Korthikanti et al. 2022,
term by term, for the transformer a config describes. The runtime adds its context, the
communication buckets and a headroom for the allocator's fragmentation. ZeRO-Offload's share is
counted on the host, per node. Everything is in bytes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from hwcheck import knowledge
from hwcheck.recommendation.activations import activations, loss_gradients
from hwcheck.recommendation.deepspeed_estimator import estimator_states
from hwcheck.recommendation.finetune import (
    compute_bytes,
    dequantized_bytes,
    float32_frozen_matmul,
    frozen_bytes,
    trainable,
)
from hwcheck.recommendation.fit_notes import dtypes, notes
from hwcheck.recommendation.margin import margin
from hwcheck.recommendation.memory_plan import (
    HOST_PARTS,
    STATES,
    FineTune,
    HostMemory,
    Plan,
    split_share,
)
from hwcheck.recommendation.model_layout import ModelShape
from hwcheck.recommendation.optimizer_memory import optimizer_bytes, optimizer_step
from hwcheck.recommendation.sharding import gathered, partition

# What callers build plans from (config's fine-tuning scripts among them): Plan, FineTune, estimate.
__all__ = [
    "FineTune",
    "HostMemory",
    "Plan",
    "estimate",
    "fit_figures",
    "model_states",
    "optimizer_bytes",
    "optimizer_step",
    "solve",
]

# The per-device parts, in the order they are shown (STATES first); "total" follows them.
RUNTIME = ("cuda_context", "communication_buckets", "fragmentation")
CATEGORIES = (*STATES, "activations", "loss_gradients", "optimizer_step", *RUNTIME)
ACCOUNTINGS = ("hwcheck", "deepspeed")
MAX_GPUS = 100_000


def _runtime() -> dict[str, Any]:
    return dict(knowledge.load("memory")["runtime"])


def _whole_states(shape: ModelShape, plan: Plan) -> dict[str, int]:
    """Every state of the whole model, in bytes, before partitioning: the trained parameters'
    (every one, or LoRA's adapters), the frozen base's, and one dequantized layer's."""
    held = knowledge.memory_holding(plan.holding)
    if plan.finetune.lora and plan.finetune.adapters_16bit:
        # 16-bit adapters: weights and gradients in 16 bits, no autocast copy of them.
        held = {**held, "weights": 2, "gradients": 2, "weight_copies": 0}
    trained = trainable(shape, plan)
    parameters = trained.parameters
    master = plan.holding == "master"
    copies = held["weight_copies"] * (trained.matmul_parameters or parameters)
    copies += 2 * float32_frozen_matmul(shape, plan)
    return {
        "weights": held["weights"] * parameters,
        "frozen_weights": frozen_bytes(shape, plan),
        "working_copy": copies,
        "dequantized": dequantized_bytes(shape, plan),
        "gathered": 0,
        "gradients": held["gradients"] * parameters,
        # DeepSpeed's optimizers (FP16/BF16 and ZeRO 1-3) cast each GPU's gradient partition to
        # float32 for the step: deepspeed runtime/zero/stage_1_and_2.py, stage3.py.
        "float32_gradients": 4 * parameters if master else 0,
        "optimizer": optimizer_bytes(
            trained, plan.optimizer, plan.holding == "pure16" or _adapters_16bit(plan)
        ),
        "master_weights": held["master_weights"] * parameters,
    }


def _adapters_16bit(plan: Plan) -> bool:
    return plan.finetune.lora and plan.finetune.adapters_16bit


def _working_copy(shape: ModelShape, plan: Plan, whole: int) -> int:
    """The 16-bit weight copies alive at the peak: every one the forward saved for the backward;
    with checkpointing only the LM head's and one layer's, since checkpointed layers save only
    their inputs, autocast's cache is cleared as its region ends, and a layer's copies live
    again only while it is recomputed (torch.amp autocast_mode, torch.utils.checkpoint). FSDP's
    sharded strategies gather 16-bit units instead (`gathered`)."""
    model = shape.transformer
    if plan.fsdp not in (None, "no_shard"):
        return 0
    if not plan.checkpointing or model is None or not whole:
        return whole
    if plan.finetune.lora:
        # The adapters' copies spread over the layers; a float32 head's copy stays whole.
        head = 2 * float32_frozen_matmul(shape, plan)
        return head + (whole - head) // max(model.layers, 1)
    head = model.vocab * model.hidden
    layer = max((shape.matmul_parameters or shape.parameters) - head, 0) // max(model.layers, 1)
    return knowledge.memory_holding(plan.holding)["weight_copies"] * (head + layer)


def model_states(shape: ModelShape, plan: Plan) -> dict[str, int]:
    """The model states on one GPU, in bytes: weights, the frozen base, working copies, gathered
    units, gradients, optimizer, master weights."""
    if plan.accounting == "deepspeed":
        return {**dict.fromkeys(STATES, 0), **estimator_states(shape, plan)[0]}
    whole = _whole_states(shape, plan)
    parts = partition(plan)
    offloaded = plan.offload or plan.fsdp_offload
    on_host = plan.offload_params or plan.fsdp_offload
    trained = trainable(shape, plan)
    gradients = split_share(whole["gradients"], parts["gradients"])
    if plan.step_in_backward:
        # Each parameter steps as its gradient is accumulated and frees it: one alive at a time.
        gradients = knowledge.memory_holding(plan.holding)["gradients"] * (trained.largest_tensor or 0)
    share = {
        "weights": 0 if on_host else split_share(whole["weights"], parts["weights"]),
        "frozen_weights": 0 if on_host else split_share(whole["frozen_weights"], parts["weights"]),
        # Autocast caches a 16-bit copy of each weight a matmul reads, for the step (torch.amp).
        "working_copy": _working_copy(shape, plan, whole["working_copy"]),
        "dequantized": whole["dequantized"],
        "gathered": gathered(shape, plan, whole),
        "gradients": 0 if plan.fsdp_offload else gradients,
        "float32_gradients": 0 if offloaded else split_share(whole["float32_gradients"], parts["optimizer"]),
        "optimizer": 0 if offloaded else split_share(whole["optimizer"], parts["optimizer"]),
        "master_weights": 0 if offloaded else split_share(whole["master_weights"], parts["optimizer"]),
    }
    if plan.zero == 3 and plan.gpus > 1 and shape.largest_tensor:
        # ZeRO-3 gathers each tensor whole for its forward and backward: the largest one, with
        # its gradient, is held in full at a time (DeepSpeed's estimator counts the same).
        held = knowledge.memory_holding(plan.holding)
        if plan.finetune.lora:
            share["frozen_weights"] += compute_bytes(plan) * shape.largest_tensor
            share["gradients"] += held["gradients"] * (trained.largest_tensor or 0)
        else:
            share["weights"] += held["weights"] * shape.largest_tensor
            share["gradients"] += held["gradients"] * shape.largest_tensor
    return {key: value for key, value in share.items() if key in _parts_held(plan)}


def _parts_held(plan: Plan) -> tuple[str, ...]:
    """The model states this plan has: the frozen base with LoRA, the dequantized layer with a
    quantized base, the gathered units with FSDP, beside those every plan has."""
    optional = {
        "frozen_weights": plan.finetune.lora,
        "dequantized": plan.finetune.quantize is not None,
        "gathered": plan.fsdp is not None,
    }
    return tuple(key for key in STATES if optional.get(key, True))


def host_states(shape: ModelShape, plan: Plan) -> dict[str, int] | None:
    """What ZeRO-Offload or FSDP's CPU offload holds in one node's memory, in bytes (None:
    nothing is offloaded)."""
    if not (plan.offload or plan.offload_params or plan.fsdp_offload):
        return None
    if plan.accounting == "deepspeed":
        return estimator_states(shape, plan)[1]
    node = plan.per_node
    optional = {"frozen_weights": plan.finetune.lora, "gradients": plan.fsdp_offload}
    host = dict.fromkeys((key for key in HOST_PARTS if optional.get(key, True)), 0)
    if plan.fsdp_offload:
        # Every state's shard on the CPU, where the optimizer steps: a node holds its GPUs' shards.
        whole = _whole_states(shape, plan)
        shards = max(plan.shards, 1)
        for key in ("weights", "frozen_weights", "gradients", "optimizer"):
            host[key] = split_share(whole[key], shards) * min(node, shards)
        return host
    runtime = _runtime()
    trained = trainable(shape, plan)
    per_gpu = -(-trained.parameters // plan.gpus)  # each GPU's partition, every stage with offload
    if plan.offload:
        host["master_weights"] = runtime["offload_master_bytes"] * per_gpu * node
        host["float32_gradients"] = runtime["offload_gradient_bytes"] * per_gpu * node
        host["optimizer"] = split_share(optimizer_bytes(trained, plan.optimizer), plan.gpus) * node
    if plan.offload_params:
        host["weights"] = runtime["offload_parameter_bytes"] * per_gpu * node
        host["frozen_weights"] = split_share(frozen_bytes(shape, plan), plan.gpus) * node
    return host


def runtime_bytes(shape: ModelShape, plan: Plan, counted: int) -> dict[str, int]:
    """The runtime's context, the communication buckets and the fragmentation headroom on one GPU."""
    runtime = _runtime()
    held = knowledge.memory_holding(plan.holding)
    buckets = 0
    trained = trainable(shape, plan).parameters
    if plan.gpus > 1:
        if plan.fsdp not in (None, "no_shard"):
            buckets = 0  # FSDP reduce-scatters each unit's gradient: counted with the gathered unit
        elif plan.zero is None:
            # DistributedDataParallel's buckets hold a copy of every gradient (FSDP's no_shard too).
            buckets = runtime["ddp_buckets_per_gradient"] * held["gradients"] * trained
        elif plan.zero == 3:
            buckets = 2 * min(runtime["prefetch_bucket_elements"], shape.parameters)
            buckets += 2 * min(runtime["reduce_bucket_elements"], trained)
        elif plan.zero >= 1:
            buckets = 2 * min(runtime["reduce_bucket_elements"], trained)
            buckets += 2 * min(runtime["allgather_bucket_elements"], trained)
    context = runtime["cuda_context_bytes"] if plan.on_gpu else 0
    headroom = runtime["headroom"] if plan.headroom is None else plan.headroom
    fragmentation = math.ceil(headroom * (counted + buckets))
    return {"cuda_context": context, "communication_buckets": buckets, "fragmentation": fragmentation}


def runtime_context(plan: Plan) -> dict[str, Any] | None:
    """Whose context is counted on each GPU, and whose figure (None off a GPU): CUDA's is the one
    published figure hwcheck has, counted in place of another runtime's or an unknown one's, and
    `published` says whether the figure is the runtime's own."""
    if not plan.on_gpu:
        return None
    runtime = _runtime()
    return {
        "runtime": plan.runtime,
        "bytes": runtime["cuda_context_bytes"],
        "figure": "cuda",
        "published": plan.runtime == "cuda",
        "source": runtime["cuda_context_source"],
    }


def estimate(
    shape: ModelShape, plan: Plan, device_memory: int | None, host: HostMemory | None = None
) -> dict[str, Any]:
    """The per-GPU and per-node figures, whether they fit, and what would make them fit."""
    host = host or HostMemory()
    result = fit_figures(shape, plan, device_memory, host)
    result["suggestions"] = suggestions(shape, plan, device_memory, host) if result["fits"] is False else []
    return result


def fit_figures(shape: ModelShape, plan: Plan, device_memory: int | None, host: HostMemory) -> dict[str, Any]:
    """The per-GPU parts and the host's, and whether they fit (three-valued), without suggestions."""
    states = model_states(shape, plan)
    per_device: dict[str, int | None] = dict(states)
    per_device["activations"] = activations(shape, plan)
    per_device["loss_gradients"] = loss_gradients(shape, plan)
    per_device["optimizer_step"] = optimizer_step(
        shape, plan, (per_device["activations"] or 0) + (per_device["loss_gradients"] or 0)
    )
    counted = sum(value or 0 for value in per_device.values())
    per_device.update(runtime_bytes(shape, plan, counted))
    total = sum(value or 0 for value in per_device.values())
    per_device["total"] = total
    device_fits = None if device_memory is None else total <= device_memory
    unsized = (per_device["activations"] or 0) + (per_device["loss_gradients"] or 0)
    unsized += per_device["optimizer_step"] or 0
    activations_known = per_device["activations"] is not None
    offloaded = host_states(shape, plan)
    host_figures = _host_figures(offloaded, host, plan)
    # Three-valued: no when a counted part already does not fit, yes only when every part is
    # counted and fits, else unknown.
    # --headroom given: the headroom alone decides, no margin.
    kept = None if plan.headroom is not None else margin(shape.model_type, plan.checkpointing)
    estimated = total - (per_device["fragmentation"] or 0)
    lowest = _lowest_peak(estimated, per_device, plan)
    device_ok = device_fits
    if kept is not None and device_memory is not None:
        # "no" only where even the lowest the peak may be is beyond the GPU.
        device_ok = lowest <= device_memory
    answers = [device_ok, host_figures["fits"] if offloaded is not None else True]
    if False in answers:
        fits: bool | None = False
    elif None in answers or not activations_known:
        fits = None
    else:
        fits = True
    verdict = _verdict_word(fits, estimated, device_memory, kept)
    if verdict == "yes" and device_fits is False:
        verdict = "tight"  # within the estimate's error of the memory, beyond it with the headroom
    return {
        "fits": fits,
        "verdict": verdict,
        "lowest_peak": lowest,
        "margin": kept,
        "context": runtime_context(plan),
        "device_memory": device_memory,
        "device_fits": device_fits,
        "model_states_fit": None if device_memory is None else total - unsized <= device_memory,
        "activations_known": activations_known,
        "per_device": per_device,
        "dtypes": dtypes(plan),
        "trainable_parameters": trainable(shape, plan).parameters,
        "notes": notes(shape, plan),
        "host": host_figures,
    }


def _lowest_peak(estimated: int, per_device: dict[str, int | None], plan: Plan) -> int:
    """The least the peak may be: the estimate (headroom left out) less its largest measured
    over-estimate (memory.toml), and without a paged optimizer's state, which the driver moves
    to host memory rather than fail."""
    runtime = _runtime()
    paged = knowledge.optimizer_state(plan.optimizer).get("paged")
    held = estimated - ((per_device.get("optimizer") or 0) if paged else 0)
    return math.floor(held / (1 + runtime["largest_over_estimate"]))


def _verdict_word(
    fits: bool | None, estimate: int, device_memory: int | None, kept: dict[str, Any] | None
) -> str:
    """yes, tight (the estimate above the margin's safe share of the memory, the total within it),
    no or unknown; without a margin (--headroom given) the headroom alone decides, as before."""
    if fits is None:
        return "unknown"
    if not fits:
        return "no"
    if kept is not None and device_memory is not None and estimate > kept["safe_share"] * device_memory:
        return "tight"
    return "yes"


def _host_figures(offloaded: dict[str, int] | None, host: HostMemory, plan: Plan) -> dict[str, Any]:
    needed = None if offloaded is None else sum(offloaded.values())
    bound = host.available if host.available is not None else host.total
    fits = None if needed is None or bound is None else needed <= bound
    return {
        "per_node": None if offloaded is None else {**offloaded, "total": needed},
        "gpus_per_node": plan.per_node,
        "pinned": offloaded is not None,  # pin_memory: page-locked, it cannot be swapped out
        "total_bytes": host.total,
        "available_bytes": host.available,
        "source": host.source,
        "fits": fits if offloaded is not None else None,
    }


def suggestions(
    shape: ModelShape, plan: Plan, device_memory: int | None, host: HostMemory | None = None
) -> list[dict[str, Any]]:
    """Single changes that make the model fit, cheapest first, each with its per-GPU total."""
    if device_memory is None:
        return []
    host = host or HostMemory()
    candidates: list[tuple[str, Plan]] = []
    stage = plan.zero if plan.zero is not None else -1
    # ZeRO 1 and 2 cost no more communication than data parallelism (ZeRO §7); checkpointing
    # costs a third more compute; a smaller batch fewer samples per step; ZeRO-3 half again
    # the communication; offload the CPU's speed; more GPUs more hardware.
    for zero in (1, 2):
        if stage < zero and plan.gpus > 1:
            candidates.append((f"--zero {zero}", replace(plan, zero=zero)))
    if not plan.checkpointing and shape.transformer is not None:
        candidates.append(("--checkpointing", replace(plan, checkpointing=True)))
    if plan.batch > 1 and shape.transformer is not None:
        batch = _largest_batch(shape, plan, device_memory, host)
        if batch:
            candidates.append((f"--batch {batch}", replace(plan, batch=batch)))
    if stage < 3 and plan.gpus > 1:
        candidates.append(("--zero 3", replace(plan, zero=3)))
    if not plan.offload:
        offloaded = replace(plan, zero=max(stage, 2 if plan.gpus > 1 else 1), offload=True)
        words = "--offload" if plan.zero else f"--zero {offloaded.zero} --offload"
        candidates.append((words, offloaded))
    gpus = _fewest_gpus(
        shape, replace(plan, zero=3, offload=False, offload_params=False), device_memory, host
    )
    if gpus and gpus > plan.gpus:
        candidates.append((f"--gpus {gpus} --zero 3", replace(plan, gpus=gpus, zero=3, offload=False)))
    found = []
    for change, changed in candidates:
        figures = fit_figures(shape, changed, device_memory, host)
        if figures["device_fits"] and figures["host"]["fits"] is not False:
            host_total = (figures["host"]["per_node"] or {}).get("total")
            found.append(
                {"change": change, "total": figures["per_device"]["total"], "host_per_node": host_total}
            )
    return found


def _fits_device(shape: ModelShape, plan: Plan, device_memory: int, host: HostMemory) -> bool:
    figures = fit_figures(shape, plan, device_memory, host)
    return bool(figures["device_fits"]) and figures["host"]["fits"] is not False


def _largest_batch(shape: ModelShape, plan: Plan, device_memory: int, host: HostMemory) -> int | None:
    low, high = 0, plan.batch - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _fits_device(shape, replace(plan, batch=middle), device_memory, host):
            low = middle
        else:
            high = middle - 1
    return low or None


def _fewest_gpus(shape: ModelShape, plan: Plan, device_memory: int, host: HostMemory) -> int | None:
    if not _fits_device(shape, replace(plan, gpus=MAX_GPUS), device_memory, host):
        return None
    low, high = 1, MAX_GPUS
    while low < high:
        middle = (low + high) // 2
        if _fits_device(shape, replace(plan, gpus=middle), device_memory, host):
            high = middle
        else:
            low = middle + 1
    return low


SOLVABLE = ("batch", "seq-len")


def solve(
    shape: ModelShape, plan: Plan, device_memory: int, what: str, host: HostMemory | None = None
) -> int | None:
    """The largest micro-batch (`what` "batch") or sequence length ("seq-len") whose verdict is
    yes: its total fits `device_memory` and, unless --headroom is given, its estimate is within
    the safe share (not tight); None when not even 1 does. Doubling, then
    bisection: about 2 log2(answer) estimates, each independent of the layer count."""
    host = host or HostMemory()
    field = "batch" if what == "batch" else "seq_len"
    limit = MAX_SOLVED

    def fits(value: int) -> bool:
        changed = replace(plan, batch=value) if field == "batch" else replace(plan, seq_len=value)
        return fit_figures(shape, changed, device_memory, host)["verdict"] == "yes"

    if not fits(1):
        return None
    low = 1
    while low * 2 <= limit and fits(low * 2):
        low *= 2
    high = min(low * 2, limit + 1)  # low fits, high does not (or is past the limit)
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


MAX_SOLVED = 10**7  # the largest batch or sequence length fit takes
