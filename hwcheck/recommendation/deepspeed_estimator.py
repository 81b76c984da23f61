"""DeepSpeed 0.19's estimators' accounting of the model states, for `hwcheck fit --accounting deepspeed`."""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.recommendation.memory_plan import HOST_PARTS, STATES, Plan, split_share
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
