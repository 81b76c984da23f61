"""The ZeRO plan a DeepSpeed config gets (DeepSpeed's own accounting: deepspeed_estimator.py).

`deepspeed_plan` is the one place that decides the ZeRO stage and offload written into a
DeepSpeed config: the cheapest plan whose GPU share and offloaded host share both fit.
"""

from __future__ import annotations

from dataclasses import replace

from hwcheck.base.records import NamedTuple
from hwcheck.recommendation.fit import fit_figures, host_states
from hwcheck.recommendation.memory_plan import HostMemory, Plan
from hwcheck.recommendation.model_layout import ModelShape


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
