"""DeepSpeed's side of `hwcheck fit`: its estimators' accounting, and the ZeRO plan a config gets.

`deepspeed_plan` is the one place that decides the ZeRO stage and offload written into a
DeepSpeed config: the cheapest plan whose GPU share and offloaded host share both fit.
"""

from __future__ import annotations

from dataclasses import replace

from hwcheck import knowledge
from hwcheck.base.records import NamedTuple
from hwcheck.recommendation.fit import (
    HOST_PARTS,
    STATES,
    HostMemory,
    Plan,
    fit_figures,
    host_states,
    split_share,
)
from hwcheck.recommendation.model_layout import ModelShape


def estimator_states(shape: ModelShape, plan: Plan) -> tuple[dict[str, int], dict[str, int] | None]:
    """Per-GPU states and per-node host memory as DeepSpeed 0.19's estimators count them.

    estimate_zero2_model_states_mem_needs (stages 1-2) and estimate_zero3_model_states_mem_needs
    (stage 3, zero_init=True), split into the parts hwcheck names; the host figure carries their
    additional_buffer_factor of 1.5.
    """
    table = knowledge.load("memory")["deepspeed_estimator"]
    factor = table["additional_buffer_factor"]
    params, gpus = shape.parameters, plan.gpus
    states = dict.fromkeys(STATES, 0)
    # The 18 partitioned bytes: 2 (16-bit gradients) + 4 (fp32 gradients) + 4 (fp32 weights) + 8 (Adam).
    partitioned = {"gradients": 2, "float32_gradients": 4, "master_weights": 4, "optimizer": 8}
    if plan.zero == 3:
        largest = shape.largest_tensor or 0
        states["weights"] = 2 * largest + (0 if plan.offload_params else split_share(2 * params, gpus))
        states["gradients"] = 2 * largest
        if not plan.offload:
            # Its ZeRO-3 figure is 18 bytes per partitioned parameter with the 16-bit weights
            # among them: it leaves the 16-bit gradient partition out.
            for key in ("float32_gradients", "master_weights", "optimizer"):
                states[key] += int(partitioned[key] * params / gpus)
        host = None
        if plan.offload:
            host = dict.fromkeys(HOST_PARTS, 0)
            share = params / plan.nodes * factor
            host["float32_gradients"] = int(6 * share)  # its 16 (or 18) bytes, in the parts they are
            host["master_weights"] = int(4 * share)
            host["optimizer"] = int(6 * share)
            if plan.offload_params:
                host["weights"] = int(2 * share)
        return states, host
    states["weights"] = 2 * params
    host = None
    if plan.offload:
        host = dict.fromkeys(HOST_PARTS, 0)
        # max(4 x all GPUs, 16) bytes per parameter: each process loads the model in float32
        # before partitioning, or the 16 bytes of the offloaded states, whichever is more.
        total = int(params * max(4 * gpus, 16) * factor)
        host["master_weights"] = total // 4
        host["float32_gradients"] = total // 4
        host["optimizer"] = total - 2 * (total // 4)
    else:
        for key, size in partitioned.items():
            states[key] = int(size * params / gpus)
    return states, host


class DeepSpeedChoice(NamedTuple):
    """The ZeRO stage and offload a DeepSpeed config gets, and why."""

    stage: int
    offload: bool
    fits: bool | None  # None: a figure that decides is unknown (host memory)
    note: str | None  # what was skipped or is unknown, in one sentence (None: nothing to say)


# The plans in the order they cost: stages add communication, offload the CPU's speed.
DEEPSPEED_PLANS = ((0, False), (1, False), (2, False), (3, False), (1, True), (2, True), (3, True))


def deepspeed_plan(
    shape: ModelShape,
    plan: Plan,
    device_memory: int,
    host: HostMemory,
    wanted: tuple[int, bool] | None = None,
) -> DeepSpeedChoice:
    """The ZeRO stage and offload to write into a DeepSpeed config: `wanted` when it fits,
    else the cheapest plan whose GPU share and offloaded host share both fit.

    An offload plan whose host memory is known not to fit is never chosen; one whose host
    memory is unknown is chosen only when nothing else fits the GPUs, with a note saying so.
    """
    skipped: list[str] = []
    unknown_host: tuple[int, bool] | None = None
    order = [wanted, *(p for p in DEEPSPEED_PLANS if p != wanted)] if wanted else list(DEEPSPEED_PLANS)
    for stage, offload in order:
        if offload and stage == 0:
            continue
        figures = fit_figures(shape, replace(plan, zero=stage, offload=offload), device_memory, host)
        if not figures["device_fits"]:
            continue
        host_fits = figures["host"]["fits"] if offload else True
        if host_fits is False:
            needed = figures["host"]["per_node"]["total"]
            bound = host.available if host.available is not None else host.total or 0
            skipped.append(
                f"ZeRO stage {stage} with offload needs {needed / 2**30:.1f} GiB of host memory per node, "
                f"{bound / 2**30:.1f} GiB is {'available' if host.available is not None else 'there'} "
                f"({host.source})"
            )
            continue
        if host_fits is None:
            unknown_host = unknown_host or (stage, offload)
            continue
        note = "; ".join(skipped) or None
        if wanted and (stage, offload) != wanted:
            note = f"the asked-for plan does not fit: {note or 'not on these GPUs'}"
        return DeepSpeedChoice(stage, offload, True, note)
    if unknown_host:
        stage, offload = unknown_host
        needed = host_states(shape, replace(plan, zero=stage, offload=offload)) or {}
        return DeepSpeedChoice(
            stage,
            offload,
            None,
            f"host memory is unknown ({host.source}): ZeRO stage {stage} with offload needs "
            f"{sum(needed.values()) / 2**30:.1f} GiB of it per node",
        )
    return DeepSpeedChoice(3, True, False, "; ".join(skipped) or "no ZeRO stage fits these GPUs")
