"""`hwcheck fit --measure`: the plan's training steps really run, and the memory they took.

The child (hwcheck/measure/fit_child.py) runs under the user's interpreter and `sys.path`, in
its own process group (base/children.py), with a deadline: it builds the model from its config
with random weights (never downloading any), trains a few steps in the plan's precision,
optimizer, batch and sequence length on the device fit plans for, and answers with the peak
and the parts the framework can tell. A measurement is kept in the private cache
(hwcheck/base/tables.py), named by everything that changes it: the config, the plan, the
device, the CPU, the GPUs and the library versions; a failed one is said, never cached.
The child's answer and a cache entry are checked against FIT_ANSWER and CACHE_ENTRY
(base/answers.py) before any use: an answer that does not fit is a measurement that failed,
an entry that does not fit is measured again.
"""

from __future__ import annotations

import json
import os
import time

from hwcheck.base.answers import problem
from hwcheck.base.numbers import MAX_INTEGER
from hwcheck.base.tables import cache_key, cached_document, store_document
from hwcheck.measure.ask import ask
from hwcheck.measure.interpreter import interpreter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.devices import Device
    from hwcheck.recommendation.fit import Plan

DEFAULT_STEPS = 3
DEFAULT_TIMEOUT = 600.0
MAX_ANSWER = 1024 * 1024
CACHE_FORMAT = 1
# The runtimes whose device the child can measure on: PyTorch's name for each is fit_child's.
MEASURED_RUNTIMES = ("cuda", "rocm", "mps", "xpu")
PARTS = ("weights", "working_copy", "gradients", "optimizer", "activations")
_BYTES = {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER}
_TEXT = {"type": "string", "maxLength": 4096}
# What fit_child.py answers, or run_child says of a child that did not: checked before any use.
FIT_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": ["outcome"],
    "properties": {
        "outcome": {"enum": ["ok", "error", "timeout"]},
        "error": {"type": "string", "maxLength": MAX_ANSWER},
        "stderr": {"type": "string", "maxLength": MAX_ANSWER},
        "peak_bytes": {**_BYTES, "minimum": 1},
        "how": _TEXT,
        "parts": {"type": "object", "maxProperties": 16, "additionalProperties": _BYTES},
        "loss": {"type": ["number", "null"]},
        "seconds": {"type": "number", "minimum": 0},
        "versions": {"type": "object", "maxProperties": 16, "additionalProperties": _TEXT},
        "counted_peak_bytes": {**_BYTES, "type": ["integer", "null"]},
    },
}
# A measurement as it is kept: the child's answer that succeeded, with where and when it ran.
MEASURED: dict[str, Any] = {
    **FIT_ANSWER,
    "required": ["outcome", "peak_bytes", "steps", "device"],
    "properties": {
        **FIT_ANSWER["properties"],
        "outcome": {"enum": ["ok"]},
        "device": {"enum": [*MEASURED_RUNTIMES, "cpu"]},
        "steps": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
        "python": _TEXT,
        "wall_seconds": {"type": "number", "minimum": 0},
        "measured_at": {"type": "string", "maxLength": 64},
    },
}
CACHE_ENTRY: dict[str, Any] = {
    "type": "object",
    "required": ["format", "measured"],
    "properties": {"format": {"enum": [CACHE_FORMAT]}, "measured": MEASURED},
}


def measured_runtime(gpus: list[Device]) -> str:
    """The runtime the steps run on: the first visible GPU's (cuda, rocm, mps, xpu), else the CPU."""
    return next((gpu.runtime for gpu in gpus if gpu.runtime in MEASURED_RUNTIMES), "cpu")


def refusal(plan: Plan) -> str | None:
    """Why the plan cannot be measured in one process here (None: it can)."""
    if plan.zero is not None or plan.offload or plan.offload_params:
        return "measures plain PyTorch on one device: leave out --zero and --offload"
    if plan.accounting != "hwcheck":
        return "compares hwcheck's own accounting: leave out --accounting deepspeed"
    return None


def measure_fit(
    config: dict[str, Any],
    plan: Plan,
    device: str,
    facts: dict[str, Any],
    *,
    steps: int = DEFAULT_STEPS,
    timeout: float = DEFAULT_TIMEOUT,
    use_cache: bool = True,
) -> dict[str, Any]:
    """The measurement of the plan's steps: status measured, reused or failed, with the figures."""
    job = {
        "config": config,
        "policy": plan.policy,
        "optimizer": plan.optimizer,
        "batch": plan.batch,
        "seq_len": plan.seq_len,
        "checkpointing": plan.checkpointing,
        "steps": steps,
        "device": device,
        "count": device == "cpu",
        "threads": os.cpu_count() or 1,
    }
    key = _key(job, facts)
    if use_cache and key is not None:
        entry = cached_document(key)
        if entry is not None and problem(entry, CACHE_ENTRY, "cache entry") is None:
            return {**entry["measured"], "status": "reused"}
    started = time.monotonic()
    answer = run_child(job, timeout)
    unusable = problem(answer, FIT_ANSWER, "its answer")
    if unusable is not None:
        answer = {"outcome": "error", "error": f"the child answered unusably: {unusable}"}
    answer.update(device=device, steps=steps, python=interpreter())
    answer["wall_seconds"] = round(time.monotonic() - started, 2)
    if answer.get("outcome") != "ok" or "peak_bytes" not in answer:
        answer.setdefault("error", "the child answered without a peak")
        return {**answer, "status": "failed"}
    answer["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if key is not None:
        store_document(key, {"format": CACHE_FORMAT, "measured": answer})
    return {**answer, "status": "measured"}


def run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The child's answer, or what became of it: a timeout, a signal, an exit status."""
    asked = ask("hwcheck.measure.fit_child", job, "fit_measured", timeout, limit=MAX_ANSWER)
    if asked.answer is not None:
        return asked.answer
    last = asked.errors.last_line()[:300]
    if asked.outcome == "timeout":
        return {"outcome": "timeout", "error": asked.reason}
    if asked.signal is not None:
        return {"outcome": "error", "error": asked.reason, "stderr": last}
    # The last line of stderr is the reason an exit without an answer had (a traceback's last line).
    return {"outcome": "error", "error": f"{asked.reason}: {last}" if last else asked.reason}


def _key(job: dict[str, Any], facts: dict[str, Any]) -> str | None:
    """The cache key: the job, this machine's CPU and GPUs, the library versions, the interpreter."""
    from hwcheck import devices
    from hwcheck.facts import section
    from hwcheck.probes.site_packages import distributions

    cpu = section(facts, "cpu")
    gpus = [
        [device.vendor, device.name, device.memory_bytes, device.mig] for device in devices.installed(facts)
    ]
    wanted = ("torch", "transformers", "bitsandbytes")
    versions = {dist.name: dist.version for dist in distributions() if dist.name in wanted}
    inputs = {
        "format": CACHE_FORMAT,
        "job": {key: value for key, value in job.items() if key != "threads"},
        "cpu": {"model": cpu.get("model"), "flags": sorted(cpu.get("flags") or [])},
        "gpus": gpus,
        "versions": versions,
        "python": interpreter(),
    }
    try:
        text = json.dumps(inputs, sort_keys=True, allow_nan=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return None
    return cache_key("fit-measure", text.encode("utf-8", "surrogatepass"))
