"""The child process of `hwcheck fit --measure`: a few training steps of the model a config
describes, built with random weights (nothing downloaded), and the memory they took.

Run under the user's interpreter (hwcheck/measure/interpreter.py). It reads one JSON job on
stdin: the config, the policy, the optimizer, batch, sequence length, steps, the device and
whether to count torch's CPU allocations. It writes one line, {"fit_measured": {...}}:

- the peak: on CUDA and ROCm torch.cuda.max_memory_allocated(), on XPU torch.xpu's, on MPS
  the largest torch.mps.current_allocated_memory() seen between the phases of each step
  (MPS keeps no peak); on the CPU the peak resident set (getrusage) less the resident set
  just before the model is built, its modules already imported;
- on the CPU, with `count`, the same steps again on a fresh model under torch's profiler with
  profile_memory, whose allocation and free events summed in order give the peak torch itself
  allocated: what the resident set holds beyond it is the C allocator's slack;
- the parts the framework can tell: the bytes of the weights, the gradients and the optimizer
  state (each storage once), the 16-bit copies of the weights autocast saved, and every other
  tensor autograd saved for the backward pass of the first step (saved_tensors_hooks).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# The families hwcheck lays out, by the transformers class it lays out for each.
BASE_MODELS = ("bert", "roberta", "vit")
SEQ2SEQ = ("t5",)
# The view functions between a cast weight and what a layer saves of it.
VIEWS = ("TBackward0", "TransposeBackward0", "ViewBackward0", "PermuteBackward0", "ExpandBackward0")
SIXTEEN_BITS = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


def main() -> int:
    """Read the job, train, write the answer line; 0 whenever an answer was written."""
    try:
        job = json.loads(sys.stdin.readline())
        answer = measure(job)
    except Exception as error:  # any failure is the answer: the parent says it and caches nothing
        answer = {"outcome": "error", "error": f"{type(error).__name__}: {str(error)[:300]}"}
    sys.stdout.write(json.dumps({"fit_measured": answer}) + "\n")
    sys.stdout.flush()
    return 0


def measure(job: dict[str, Any]) -> dict[str, Any]:
    """Train the job's steps and return the peak, the parts and the versions."""
    import torch
    import transformers

    device = job["device"]
    torch.set_num_threads(max(1, min(int(job.get("threads") or 1), os.cpu_count() or 1)))
    _warm_up(job, torch)
    baseline = _resident() if device == "cpu" else 0
    if device in ("cuda", "rocm"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    elif device == "xpu":
        torch.xpu.reset_peak_memory_stats()
    sampled = [0]
    started = time.perf_counter()
    parts, loss = _train(job, torch, sampled)
    seconds = time.perf_counter() - started
    peak, how = _peak(device, torch, baseline, sampled[0])
    answer: dict[str, Any] = {
        "outcome": "ok",
        "peak_bytes": peak,
        "how": how,
        "parts": parts,
        # The parent refuses NaN and Infinity in an answer: a loss that was not finite is sent as null.
        "loss": loss if math.isfinite(loss) else None,
        "seconds": round(seconds, 2),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    if device == "cpu" and job.get("count"):
        answer["counted_peak_bytes"] = _counted_peak(job, torch)
    return answer


def build(job: dict[str, Any], torch: Any, device: str) -> Any:
    """The transformers model of the job's config, random weights, on `device`, in training mode."""
    import transformers

    config = dict(job["config"])
    model_type = str(config.pop("model_type"))
    for key in ("architectures", "transformers_version", "torch_dtype", "dtype", "auto_map"):
        config.pop(key, None)
    config.setdefault("pad_token_id", 0)
    if model_type in SEQ2SEQ:
        config.setdefault("decoder_start_token_id", 0)
    built = transformers.AutoConfig.for_model(model_type, **config)
    auto: Any
    if model_type in SEQ2SEQ:
        auto = transformers.AutoModelForSeq2SeqLM
    elif model_type in BASE_MODELS:
        auto = transformers.AutoModel
    else:
        auto = transformers.AutoModelForCausalLM
    torch.manual_seed(0)
    with torch.device(device):
        model = auto.from_config(built, dtype=torch.float32)
    model.train()
    if job.get("checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def _warm_up(job: dict[str, Any], torch: Any) -> None:
    """Import the model's modules and load the kernels before the baseline (a meta-device build)."""
    build(job, torch, "meta")
    device = _torch_device(job["device"])
    with torch.autocast(device, dtype=torch.bfloat16, enabled=job["policy"] != "float32"):
        ones = torch.ones(2, 2, device=device).requires_grad_()
        ones.matmul(ones).sum().backward()


def _torch_device(device: str) -> str:
    return {"cuda": "cuda", "rocm": "cuda", "xpu": "xpu", "mps": "mps"}.get(device, "cpu")


def _optimizer(name: str, parameters: Any, torch: Any) -> Any:
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(parameters, lr=1e-3, relative_step=False, scale_parameter=False)
    if name == "adamw-8bit":
        import bitsandbytes  # type: ignore[import-not-found,unused-ignore]

        return bitsandbytes.optim.AdamW8bit(parameters, lr=1e-4)
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=1e-3, momentum=0.9)
    return {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](parameters, lr=1e-4)


def _inputs(job: dict[str, Any], model: Any, torch: Any, device: str) -> dict[str, Any]:
    config = model.config
    if config.model_type == "vit":
        size, channels = config.image_size, config.num_channels
        return {"pixel_values": torch.randn(job["batch"], channels, size, size, device=device)}
    generator = torch.Generator().manual_seed(1)
    top = max(4, min(1000, config.vocab_size))
    ids = torch.randint(3, top, (job["batch"], job["seq_len"]), generator=generator).to(device)
    if config.model_type in BASE_MODELS:
        return {"input_ids": ids}
    return {"input_ids": ids, "labels": ids}


def _loss(model: Any, inputs: dict[str, Any]) -> Any:
    output = model(**inputs)
    if getattr(output, "loss", None) is not None:
        return output.loss
    # A base model (no head): the mean square of its last hidden state, as fit lays it out.
    return output.last_hidden_state.float().pow(2).mean()


def _train(job: dict[str, Any], torch: Any, sampled: list[int]) -> tuple[dict[str, int], float]:
    """Build, train the steps, and return the parts the framework tells and the last loss."""
    device = _torch_device(job["device"])
    model = build(job, torch, device)
    optimizer = _optimizer(job["optimizer"], model.parameters(), torch)
    inputs = _inputs(job, model, torch, device)
    sixteen = SIXTEEN_BITS.get(job["policy"])
    scaler = torch.amp.GradScaler(device) if sixteen == "float16" and device != "cpu" else None
    sample = _sampler(job["device"], torch, sampled)
    saved: dict[str, int] = {}
    loss_value = float("nan")
    for step in range(job["steps"]):
        hooks = _saved_counter(model, saved) if step == 0 else None
        with torch.autocast(device, dtype=getattr(torch, sixteen or "bfloat16"), enabled=sixteen is not None):
            if hooks is not None:
                with torch.autograd.graph.saved_tensors_hooks(*hooks):
                    loss = _loss(model, inputs)
            else:
                loss = _loss(model, inputs)
        sample()
        (scaler.scale(loss) if scaler else loss).backward()
        sample()
        if scaler:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        sample()
        optimizer.zero_grad(set_to_none=False)
        loss_value = float(loss.detach().float().cpu())
    parts = {
        "weights": _bytes(model.parameters()),
        "gradients": _bytes(p.grad for p in model.parameters()),
        "optimizer": _bytes(v for state in optimizer.state.values() for v in _tensors(state)),
        "working_copy": saved.get("working_copy", 0),
        "activations": saved.get("activations", 0),
    }
    return parts, loss_value


def _saved_counter(model: Any, saved: dict[str, int]) -> tuple[Any, Any]:
    """saved_tensors_hooks that add up, each storage once, the tensors autograd keeps: autocast's
    copies of a weight (a cast whose input is a parameter) apart from the rest; parameters left out."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: set[int] = set()

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer in parameters or pointer in seen or tensor.device.type == "meta":
            return tensor
        seen.add(pointer)
        part = "working_copy" if _cast_of_parameter(tensor) else "activations"
        saved[part] = saved.get(part, 0) + storage.nbytes()
        return tensor

    return pack, lambda tensor: tensor


def _cast_of_parameter(tensor: Any) -> bool:
    """Whether autograd's graph leads from `tensor` to a parameter through a dtype cast (autocast's
    copy of a weight) and views of it only (a linear layer saves the cast weight transposed)."""
    function = tensor.grad_fn
    for _ in range(4):
        if function is None:
            return False
        name = type(function).__name__
        following = function.next_functions
        if name == "ToCopyBackward0":
            return bool(following) and type(following[0][0]).__name__ == "AccumulateGrad"
        if name not in VIEWS or not following:
            return False
        function = following[0][0]
    return False


def _tensors(state: Any) -> list[Any]:
    import torch

    return [value for value in state.values() if isinstance(value, torch.Tensor)]


def _bytes(tensors: Any) -> int:
    seen: dict[int, int] = {}
    for tensor in tensors:
        if tensor is not None:
            storage = tensor.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _sampler(device: str, torch: Any, sampled: list[int]) -> Any:
    """On MPS, which keeps no peak, the largest allocation seen at the step's phase ends."""
    if device != "mps":
        return lambda: None

    def sample() -> None:
        sampled[0] = max(sampled[0], int(torch.mps.current_allocated_memory()))

    return sample


def _peak(device: str, torch: Any, baseline: int, sampled: int) -> tuple[int, str]:
    if device in ("cuda", "rocm"):
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated()), "torch.cuda.max_memory_allocated()"
    if device == "xpu":
        return int(torch.xpu.max_memory_allocated()), "torch.xpu.max_memory_allocated()"
    if device == "mps":
        return sampled, "the largest torch.mps.current_allocated_memory() after each phase of a step"
    import resource

    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    return peak - baseline, "the peak resident set less the resident set before the model was built"


def _resident() -> int:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _counted_peak(job: dict[str, Any], torch: Any) -> int | None:
    """The same steps on a fresh model, counted by counted_peak."""
    return counted_peak(lambda: _train(job, torch, [0]))


def counted_peak(run: Callable[[], object]) -> int | None:
    """The peak of torch's own CPU allocations while `run` runs, without the allocator's slack:
    torch's profiler's allocation and free events summed in order (None when it saw none)."""
    import gc

    from torch.profiler import ProfilerActivity, profile

    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        run()
        gc.collect()
    events: list[tuple[int, int]] = []
    stack = list(profiler.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if str(node.tag).endswith("Allocation"):
            fields = node.extra_fields
            if str(getattr(fields, "device_type", "cpu")).lower().endswith("cpu"):
                events.append((node.start_time_ns, int(fields.alloc_size)))
    running = peak = 0
    for _, size in sorted(events):
        running += size
        peak = max(peak, running)
    return peak if events else None


if __name__ == "__main__":
    sys.exit(main())
