"""One measurement in a fresh process: `python -m hwcheck.measure.child` with a JSON job on stdin.

The job names the framework, the workload or script, the policy and its variant flags, the
steps and the device, and the environment to set before the framework is imported. Standard
output carries only this module's JSON lines ({"progress": k, "total": n} while it runs, then
one {"result": ...} or {"contract": reason}); whatever else prints goes to standard error.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from hwcheck.facts.stats import loss_trend

KERAS_FRAMEWORKS = ("keras", "tensorflow")
MAX_REASON = 200  # characters of an exception's first line kept as a failed run's reason


def main() -> int:
    """Read the job, run it, write the result line; the exit status is 0 unless the process dies."""
    # Everything a framework or a user script prints goes to stderr; stdout is ours alone.
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    job = json.loads(sys.stdin.read())
    os.environ.update(job.get("env") or {})
    try:
        result = measure(job, lambda k, n: _send(channel, {"progress": k, "total": n}))
    except ContractError as error:
        _send(channel, {"contract": str(error)})
        return 0
    _send(channel, {"result": result})
    return 0


class ContractError(Exception):
    """The user's script does not keep the make_step contract."""


def measure(job: dict[str, Any], progress: Callable[[int, int], None]) -> dict[str, Any]:
    """Build the step, warm up, time the steps; every Python-level failure becomes a failed result."""
    result: dict[str, Any] = {"status": "ok", "reason": None, "notes": [], "times_ms": [], "losses": []}
    backend = job["framework"]
    try:
        backend = _prepare(job)
        step = _make_step(job, result)
        if step is None:
            return result
        _run(job, step, backend, result, progress)
    except ContractError:
        raise
    except BaseException as error:  # noqa: B036 - a failed run is a result, whatever ended it
        if isinstance(error, KeyboardInterrupt):
            raise
        traceback.print_exc()
        result["status"], result["reason"] = "failed", _one_line(error)
    result["framework_versions"] = _versions()
    if result["status"] == "ok":
        result["peak_memory_mib"] = _peak_memory_mib(job, backend)
    return result


def _prepare(job: dict[str, Any]) -> str:
    """Import the framework and set its float32 matmul precision; returns the compute backend."""
    framework = job["framework"]
    backend = os.environ.get("KERAS_BACKEND", "tensorflow") if framework in KERAS_FRAMEWORKS else framework
    if job["policy"] != "float32" or job["device"] != "gpu":
        return backend
    tf32 = bool(job.get("tf32"))
    if backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    elif backend == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if tf32 else "float32")
    return backend


def _make_step(job: dict[str, Any], result: dict[str, Any]) -> Callable[[], Any] | None:
    policy, loss_scaling = job["policy"], job.get("loss_scaling", True)
    if job.get("script"):
        from hwcheck.base.errors import InputError
        from hwcheck.measure.contract import accepts_loss_scaling, load_make_step

        try:
            make_step = load_make_step(job["script"])
        except InputError as error:
            raise ContractError(str(error)) from None
        if policy == "mixed_float16" and not loss_scaling:
            if not accepts_loss_scaling(make_step):
                result["status"] = "skipped"
                result["reason"] = "make_step takes no loss_scaling keyword, so float16 cannot run unscaled"
                return None
            step = make_step(policy, loss_scaling=False)
        else:
            step = make_step(policy)
        if not callable(step):
            raise ContractError(
                f"{job['script']}: make_step({policy!r}) returned a {type(step).__name__}, not a function"
            )
        return step
    framework, workload = job["framework"], job["workload"]
    if framework == "torch":
        from hwcheck.measure.workloads import torch_workloads as module
    elif framework in KERAS_FRAMEWORKS:
        from hwcheck.measure.workloads import keras_workloads as module  # type: ignore[no-redef]
    else:
        from hwcheck.measure.workloads import jax_workloads as module  # type: ignore[no-redef]
    return module.make_step(workload, policy, loss_scaling=loss_scaling, device=job["device"])


def _run(
    job: dict[str, Any],
    step: Callable[[], Any],
    backend: str,
    result: dict[str, Any],
    progress: Callable[[int, int], None],
) -> None:
    warmup, steps = job["warmup"], job["steps"]
    total = warmup + steps
    synchronize = _synchronizer(backend, job["device"])
    losses: list[float] = result["losses"]
    for index in range(total):
        started = time.perf_counter()
        loss = step()
        value = _scalar(loss)  # reading the value waits for the device to finish the step
        synchronize()
        elapsed = time.perf_counter() - started
        losses.append(value)
        if index >= warmup:
            result["times_ms"].append(elapsed * 1000.0)
        progress(index + 1, total)
        if not math.isfinite(value):
            result["status"] = "failed"
            result["reason"] = f"non-finite: the loss was {value} at step {index + 1} of {total}"
            break
    result["finite"] = all(math.isfinite(v) for v in losses)
    result["decreased"] = result["finite"] and loss_trend(losses)


def _scalar(loss: Any) -> float:
    if isinstance(loss, list | tuple) and loss:
        loss = loss[0]  # Keras's train_on_batch returns [loss, *metrics] when metrics are compiled
    try:
        return float(loss)
    except (TypeError, ValueError):
        raise TypeError(f"the step returned {type(loss).__name__}, not a scalar loss") from None


def _synchronizer(backend: str, device: str) -> Callable[[], None]:
    if backend == "torch" and device in ("gpu", "mps", "xpu"):
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        if device == "mps" and torch.backends.mps.is_available():
            return torch.mps.synchronize
        if device == "xpu" and hasattr(torch, "xpu") and torch.xpu.is_available():
            return torch.xpu.synchronize
    return lambda: None


def _peak_memory_mib(job: dict[str, Any], backend: str) -> float | None:
    """The allocator's peak on a GPU; the process's peak resident set on a CPU."""
    mib = 1024.0 * 1024.0
    try:
        if job["device"] == "xpu" and backend == "torch":
            import torch

            return torch.xpu.max_memory_allocated() / mib
        if job["device"] == "mps":
            return None  # MPS reports what is allocated now, not a peak
        if job["device"] == "gpu":
            if backend == "torch":
                import torch

                return torch.cuda.max_memory_allocated() / mib
            if backend == "tensorflow":
                import tensorflow as tf

                return tf.config.experimental.get_memory_info("GPU:0")["peak"] / mib
            if backend == "jax":
                import jax

                stats = jax.devices()[0].memory_stats() or {}
                peak = stats.get("peak_bytes_in_use")
                return None if peak is None else peak / mib
            return None
        import resource

        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Linux reports KiB, macOS bytes.
        return peak_rss / (mib if sys.platform == "darwin" else 1024.0)
    except Exception:  # a missing allocator statistic leaves the memory unknown, not the run failed
        return None


def _versions() -> dict[str, str]:
    """The versions of the frameworks this run imported (a user script may import more)."""
    names = ("torch", "keras", "tensorflow", "jax", "optax")
    versions = {}
    for name in names:
        version = getattr(sys.modules.get(name), "__version__", None)
        if version is not None:
            versions[name] = str(version)
    return versions


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > MAX_REASON:
        first = first[: MAX_REASON - 3] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


if __name__ == "__main__":
    sys.exit(main())
