"""One variant's measuring process (hwcheck/measure/interpreter.py starts it), driven over stdin.

The first line on stdin is the job: the framework, the workload or script, the policy and its
variant flags, the device, the threads and cores it may use, and the environment to set before
the framework is imported. The child builds the step and answers {"loaded": status}; then each
line {"steps": n} (with "warmup": true for the untimed first batch) runs n steps and is answered
{"batch": {"times_ms", "status", "reason"}}, so the parent can interleave the variants in rounds;
{"done": true} or the end of stdin is answered with the whole {"result": ...}. A script that
breaks the make_step contract is answered {"contract": reason}. {"progress": k} lines count the
steps as they run. Standard output carries only these lines; whatever else prints goes to stderr.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from hwcheck.facts.stats import loss_trend
from hwcheck.measure.numerics import Observer, seed_everything

KERAS_FRAMEWORKS = ("keras", "tensorflow")
MAX_REASON = 200  # characters of an exception's first line kept as a failed run's reason


def main() -> int:
    """Read the job, load the step, then run the batches the parent asks for; exit 0 unless it dies."""
    # Everything a framework or a user script prints goes to stderr; stdout is ours alone.
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    commands = sys.stdin
    job = json.loads(commands.readline())
    _own_threads(job)
    os.environ.update(job.get("env") or {})
    try:
        session = Session(job, lambda k: _send(channel, {"progress": k}))
    except ContractError as error:
        _send(channel, {"contract": str(error)})
        return 0
    _send(channel, {"loaded": session.result["status"]})
    for line in commands:
        command = json.loads(line)
        if command.get("done"):
            break
        _send(channel, {"batch": session.batch(int(command["steps"]), warmup=bool(command.get("warmup")))})
    _send(channel, {"result": session.finish()})
    return 0


class ContractError(Exception):
    """The user's script does not keep the make_step contract."""


class Session:
    """One variant's step, built once and run in the batches the parent asks for.

    The warm-up batch comes first and is not timed into the result; each timed batch adds its
    step times and their median (one sample of an interleaved round, `rounds_ms`).
    Every Python-level failure becomes a failed result; later batches then run nothing.
    """

    def __init__(self, job: dict[str, Any], progress: Callable[[int], None]) -> None:
        self.job, self.progress, self.done = job, progress, 0
        self.result: dict[str, Any] = {
            "status": "ok",
            "reason": None,
            "notes": [],
            "times_ms": [],
            "rounds_ms": [],
            "losses": [],
        }
        self.backend = job["framework"]
        self.step: Callable[[], Any] | None = None
        self.observer = Observer(None, self.backend)
        try:
            self.backend = _prepare(job)
            self.step = _make_step(job, self.result)
            self.synchronize = _synchronizer(self.backend, job["device"]) if self.step else None
            self.observer = Observer(self.step, self.backend)
        except ContractError:
            raise
        except BaseException as error:  # noqa: B036 - a failed run is a result, whatever ended it
            self._fail(error)

    def batch(self, steps: int, *, warmup: bool = False) -> dict[str, Any]:
        """Run `steps` steps; their times (ms), and the status so far."""
        times: list[float] = []
        if self.step is not None and self.result["status"] == "ok":
            try:
                times = self._run(steps)
            except BaseException as error:  # noqa: B036 - see __init__
                self._fail(error)
        if not warmup and times and self.result["status"] == "ok":
            self.result["times_ms"].extend(times)
            # The batch's median: one step stalled by the scheduler or a collection moves a mean.
            self.result["rounds_ms"].append(statistics.median(times))
        return {"times_ms": times, "status": self.result["status"], "reason": self.result["reason"]}

    def finish(self) -> dict[str, Any]:
        """The whole result: every timed step, the losses, the peak memory and the versions."""
        result, losses = self.result, self.result["losses"]
        result["finite"] = all(math.isfinite(v) for v in losses)
        result["decreased"] = result["finite"] and loss_trend(losses)
        # The parent refuses NaN and Infinity in an answer: a loss that was not finite is sent as null.
        result["losses"] = [v if math.isfinite(v) else None for v in losses]
        result["numerics"] = self.observer.summary()
        result["framework_versions"] = _versions()
        result["framework_files"] = _files()
        if result["status"] == "ok":
            result["peak_memory_mib"] = _peak_memory_mib(self.job, self.backend)
        return result

    def _run(self, steps: int) -> list[float]:
        assert self.step is not None and self.synchronize is not None
        times, losses = [], self.result["losses"]
        for _ in range(steps):
            started = time.perf_counter()
            value = _scalar(self.step())  # reading the value waits for the device to finish the step
            self.synchronize()
            times.append((time.perf_counter() - started) * 1000.0)
            losses.append(value)
            self.observer.observe(value)  # after the step's time is taken: its reads cost time too
            self.done += 1
            self.progress(self.done)
            if not math.isfinite(value):
                self.result["status"] = "failed"
                self.result["reason"] = f"non-finite: the loss was {value} at step {self.done}"
                break
        return times

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, KeyboardInterrupt):
            raise error
        traceback.print_exc()
        self.result["status"], self.result["reason"] = "failed", _one_line(error)


def _own_threads(job: dict[str, Any]) -> None:
    """Pin this process to the cores the parent chose and size the thread pools, before any import."""
    cores = job.get("cores")
    if cores and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cores)
        except OSError:
            pass  # a core taken away meanwhile: the thread count still holds
    threads = job.get("threads")
    if threads:
        from hwcheck.measure.machine_load import thread_environment

        os.environ.update(thread_environment(threads))


def _prepare(job: dict[str, Any]) -> str:
    """Import the framework and set its float32 matmul precision; returns the compute backend."""
    framework = job["framework"]
    backend = os.environ.get("KERAS_BACKEND", "tensorflow") if framework in KERAS_FRAMEWORKS else framework
    if backend == "torch" and job.get("threads"):
        import torch

        torch.set_num_threads(int(job["threads"]))  # its pool is sized at import, not by OMP alone
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
        # Every precision's model starts from the same weights and sees the same data, so that
        # its losses can be compared with float32's step by step.
        seed_everything()
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


def _files() -> dict[str, str]:
    """The file each framework this run imported came from: the user's sys.path order decides which copy."""
    files = {}
    for name in ("torch", "keras", "tensorflow", "jax"):
        file = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(file, str):
            files[name] = file
    return files


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > MAX_REASON:
        first = first[: MAX_REASON - 3] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, allow_nan=False) + "\n")
    channel.flush()


if __name__ == "__main__":
    sys.exit(main())
