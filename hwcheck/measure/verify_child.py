"""The verifying process of `hwcheck doctor --verify`: what the framework itself sees, and one training step.

The first line on stdin is the job: {"framework", "backend", "device", "policy", "env"}. The
child imports the framework, records its version, the file it was imported from, the devices
it lists, the build's architecture list and CUDA/ROCm versions as the framework reports them,
then runs one forward and backward step of a tiny model in the policy on the device, and
answers one line {"verified": {...}} on standard output (everything else prints to stderr).
A failure is part of the answer (outcome "error" with the exception's text), never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
import warnings
from typing import Any

MAX_TEXT = 2000  # characters of an error or warning text kept
MAX_DEVICES = 64
MAX_WARNINGS = 8


def main() -> int:
    """Read the job, observe the framework, run the step, answer; exit 0 unless the process dies."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # whatever the framework prints goes to stderr: stdout carries the answer alone
    job = json.loads(sys.stdin.readline())
    os.environ.update({str(k): str(v) for k, v in (job.get("env") or {}).items()})
    seen: dict[str, Any] = {"devices": [], "outcome": "error", "error": None, "warnings": []}
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            observe = {"torch": _torch, "jax": _jax}.get(job["framework"], _keras)
            observe(job, seen)
            seen["outcome"] = "ok"
        except Unsupported as reason:
            seen["outcome"], seen["error"] = "skipped", str(reason)
        except BaseException as error:  # noqa: B036 - a failed step is an observation, whatever ended it
            if isinstance(error, KeyboardInterrupt):
                raise
            traceback.print_exc()
            seen["error"] = bounded(f"{type(error).__name__}: {error}")
    seen["seconds"] = round(time.perf_counter() - started, 3)
    texts = list(dict.fromkeys(bounded(str(w.message)) for w in caught))
    seen["warnings"] = texts[:MAX_WARNINGS]
    channel.write(json.dumps({"verified": seen}, default=str) + "\n")
    channel.flush()
    return 0


class Unsupported(Exception):
    """The devices were listed, but this child runs no step of this framework on the advised device."""


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _record(seen: dict[str, Any], module: Any, name: str) -> None:
    seen["framework"] = name
    seen["version"] = str(getattr(module, "__version__", "") or "") or None
    seen["file"] = getattr(module, "__file__", None)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise FloatingPointError(f"the loss was {value}")
    return value


# --- PyTorch ---------------------------------------------------------------------------


def _torch(job: dict[str, Any], seen: dict[str, Any]) -> None:
    import torch

    _record(seen, torch, "torch")
    version = getattr(torch, "version", None)
    seen["cuda"] = getattr(version, "cuda", None)
    seen["hip"] = getattr(version, "hip", None)
    cudnn = getattr(torch.backends, "cudnn", None)
    if cudnn is not None and cudnn.is_available():
        seen["cudnn"] = str(cudnn.version())
    devices: list[dict[str, Any]] = [{"kind": "cpu", "name": "cpu"}]
    cuda = torch.cuda
    if cuda.is_available():
        seen["arch_list"] = list(cuda.get_arch_list())
        for index in range(min(cuda.device_count(), MAX_DEVICES)):
            properties = cuda.get_device_properties(index)
            major, minor = cuda.get_device_capability(index)
            device = {
                "kind": "gpu",
                "name": str(properties.name),
                "memory_mib": int(properties.total_memory // (1024 * 1024)),
                "compute_capability": f"{major}.{minor}",
            }
            if seen["hip"]:
                device["arch"] = str(getattr(properties, "gcnArchName", "") or "") or None
            devices.append(device)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append({"kind": "mps", "name": "mps"})
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        devices += [{"kind": "xpu", "name": str(xpu.get_device_name(i))} for i in range(xpu.device_count())]
    seen["devices"] = devices
    where = {"gpu": "cuda", "mps": "mps", "xpu": "xpu", "cpu": "cpu"}.get(job["device"])
    if where is None:
        raise Unsupported(f"no step of PyTorch on the {job['device'].upper()} (torch_xla) is run here")
    seen["device"] = job["device"] if where != "cpu" else "cpu"
    policy = job["policy"]
    observed, compute, loss = _torch_step(where, policy)
    seen["compute_dtype"] = compute
    # The same step on the same weights and data in float32, for the numbers to be compared with.
    reference = observed if policy == "float32" else _torch_step(where, "float32")[0]
    seen["numerics"] = _step_numerics(observed, reference, policy)
    seen["loss"] = _finite(loss)
    if seen["numerics"]["failed"]:
        raise FloatingPointError(f"the step's numbers failed: {seen['numerics']['failed']}")


def _torch_step(where: str, policy: str) -> tuple[Any, str, float]:
    """One training step of the tiny model in `policy`, observed; the dtype it computed in, its loss."""
    import torch

    from hwcheck.measure.numerics import Observer

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(where)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(8, 16, device=where), torch.randn(8, 1, device=where)
    dtype = {"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}.get(policy)
    scaler = torch.amp.GradScaler(where) if policy == "mixed_float16" else None
    observer = Observer(None, "torch", parameters=list(model.parameters()), scaler=scaler)
    with torch.autocast(where, dtype=dtype or torch.float32, enabled=dtype is not None):
        outputs = model(inputs)
        compute = str(outputs.dtype).removeprefix("torch.")
        loss = torch.nn.functional.mse_loss(outputs.float(), targets)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    value = float(loss.item())
    observer.observe(value)
    return observer, compute, value


def _step_numerics(observed: Any, reference: Any, policy: str) -> dict[str, Any]:
    """The one step's numerics beside float32's, judged as hwcheck bench judges a precision's."""
    from hwcheck.measure.numerics_verdict import judge_one

    return judge_one(observed.summary(), reference.summary(), policy)


# --- JAX -------------------------------------------------------------------------------


def _jax(job: dict[str, Any], seen: dict[str, Any]) -> None:
    import jax
    import jax.numpy as jnp

    _record(seen, jax, "jax")
    try:
        import jaxlib

        seen["jaxlib"] = str(getattr(jaxlib, "__version__", "") or "") or None
    except ImportError:
        seen["jaxlib"] = None
    listed = jax.devices()  # the default backend's: raises when the platform asked for cannot start
    devices = []
    for device in list(listed)[:MAX_DEVICES]:
        entry: dict[str, Any] = {
            "kind": "gpu" if device.platform in ("gpu", "cuda", "rocm") else str(device.platform),
            "name": str(getattr(device, "device_kind", device.platform)),
            "platform": str(device.platform),
        }
        capability = getattr(device, "compute_capability", None)
        if capability:
            entry["compute_capability"] = str(capability)
        devices.append(entry)
    if not any(d["kind"] == "cpu" for d in devices):
        devices.insert(0, {"kind": "cpu", "name": "cpu", "platform": "cpu"})
    seen["devices"] = devices
    seen["platform_version"] = _jax_platform_version()
    wanted = {"gpu": "gpu", "tpu": "tpu", "mps": "metal", "cpu": "cpu"}.get(job["device"])
    if wanted is None:
        raise Unsupported(f"no step of JAX on the {job['device'].upper()} is run here")
    target = next((d for d in listed if _jax_kind(d.platform) == wanted), None)
    if target is None:
        target = jax.devices("cpu")[0] if wanted == "cpu" else None
    if target is None:
        raise RuntimeError(
            f"JAX lists no {wanted.upper()} device (it sees: {', '.join(d['platform'] for d in devices)})"
        )
    seen["device"] = job["device"] if wanted != "cpu" else "cpu"
    policy = job["policy"]
    compute = {"mixed_bfloat16": jnp.bfloat16, "mixed_float16": jnp.float16}.get(policy, jnp.float32)
    scale = 2.0**12 if policy == "mixed_float16" else 1.0
    key = jax.random.PRNGKey(0)
    params = {
        "w1": jax.random.normal(key, (16, 32), jnp.float32) * 0.1,
        "w2": jax.random.normal(jax.random.split(key)[0], (32, 1), jnp.float32) * 0.1,
    }
    params = jax.device_put(params, target)
    inputs = jax.device_put(jnp.ones((8, 16), jnp.float32), target)

    def step(dtype: Any, scale: float) -> tuple[float, dict[str, Any]]:
        def loss_of(p: dict[str, Any], x: Any) -> Any:
            # float32 parameters, cast to the compute type for the math; the loss in float32.
            hidden = jax.nn.relu(x.astype(dtype) @ p["w1"].astype(dtype))
            out = (hidden @ p["w2"].astype(dtype)).astype(jnp.float32)
            return jnp.mean(out**2) * scale

        loss, grads = jax.jit(jax.value_and_grad(loss_of))(params, inputs)
        updated = jax.tree_util.tree_map(lambda p, g: p - 0.01 * (g / scale), params, grads)
        jax.block_until_ready(updated)
        return float(loss) / scale, _jax_numerics(jax, jnp, float(loss) / scale, grads)

    loss, observed = step(compute, scale)
    # The same step on the same weights and data in float32, for the numbers to be compared with.
    reference = observed if policy == "float32" else step(jnp.float32, 1.0)[1]
    from hwcheck.measure.numerics_verdict import judge_one

    seen["numerics"] = judge_one(observed, reference, policy)
    seen["loss"] = _finite(loss)
    if seen["numerics"]["failed"]:
        raise FloatingPointError(f"the step's numbers failed: {seen['numerics']['failed']}")
    seen["compute_dtype"] = jnp.dtype(compute).name


def _jax_numerics(jax: Any, jnp: Any, loss: float, grads: Any) -> dict[str, Any]:
    """One JAX step's numerics as measure/numerics.Observer summarises a PyTorch step's (no GradScaler)."""
    leaves = jax.tree_util.tree_leaves(grads)
    total = sum(int(g.size) for g in leaves)
    finite = all(bool(jnp.isfinite(g).all()) for g in leaves)
    zeros = sum(int((g == 0).sum()) for g in leaves)
    return {
        "steps": 1,
        "nonfinite_losses": 0 if math.isfinite(loss) else 1,
        "first_nonfinite_loss_step": None if math.isfinite(loss) else 1,
        "gradient_steps": 1,
        "nonfinite_gradient_steps": 0 if finite else 1,
        "zero_gradient_fraction": round(zeros / total, 6) if finite and total else None,
        "scaler": None,
        "scaler_skipped_steps": None,
        "final_scale": None,
        "loss_heads": [[loss if math.isfinite(loss) else None]],
    }


def _jax_kind(platform: str) -> str:
    return "gpu" if platform in ("gpu", "cuda", "rocm") else platform.lower()


def _jax_platform_version() -> str | None:
    """The default backend's platform version ("cuda 12080" on a GPU), when this JAX reports one."""
    try:
        from jax.extend import backend

        return bounded(str(backend.get_backend().platform_version), 200)
    except Exception:  # an observation the framework does not offer stays unknown
        return None


# --- Keras / TensorFlow ----------------------------------------------------------------


def _keras(job: dict[str, Any], seen: dict[str, Any]) -> None:
    if job["framework"] == "tensorflow" or job["backend"] == "tensorflow":
        _tensorflow_build(seen)
    if job["framework"] == "tensorflow":
        import tensorflow as tf

        keras: Any = tf.keras
        _record(seen, tf, "tensorflow")
        seen["keras"] = str(getattr(keras, "__version__", "") or "") or None
    else:
        import keras as keras_module

        keras = keras_module
        _record(seen, keras, "keras")
        backend = getattr(getattr(keras, "config", None), "backend", None)
        seen["keras_backend"] = backend() if callable(backend) else job["backend"]
        if job["backend"] != "tensorflow":
            _backend_devices(job["backend"], seen)
    import numpy as np

    keras.mixed_precision.set_global_policy(job["policy"])
    # TensorFlow's Metal plugin registers the Apple GPU as a GPU.
    wanted = {"gpu": "gpu:0", "mps": "gpu:0", "cpu": "cpu:0"}.get(job["device"])
    if wanted is None:
        raise Unsupported(f"no Keras step on the {job['device'].upper()} is run here")
    seen["device"] = job["device"] if wanted != "cpu:0" else "cpu"
    scope = getattr(keras, "device", None)
    if scope is None:  # Keras 2 (tf_keras): TensorFlow's own placement
        import tensorflow as tf

        scope = lambda name: tf.device("/" + name.upper())  # noqa: E731
    elif job["backend"] == "torch":
        # Keras 3.15's torch backend: a model built under keras.device() gets no gradients
        # ("No gradients provided for any variable"), so the step runs where the backend places
        # it (the GPU when torch sees one) and records that.
        import contextlib

        import torch

        scope = lambda name: contextlib.nullcontext()  # noqa: E731
        seen["device"] = "gpu" if torch.cuda.is_available() else "cpu"
    try:
        with scope(wanted):
            model = keras.Sequential(
                [
                    keras.Input((16,)),
                    keras.layers.Dense(32, activation="relu"),
                    keras.layers.Dense(1, dtype="float32"),
                ]
            )
            model.compile(optimizer="sgd", loss="mse")
            rng = np.random.default_rng(0)
            inputs = rng.standard_normal((8, 16)).astype("float32")
            targets = rng.standard_normal((8, 1)).astype("float32")
            loss = model.train_on_batch(inputs, targets)
        seen["compute_dtype"] = str(model.layers[0].compute_dtype)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    seen["loss"] = _finite(float(loss[0] if isinstance(loss, list | tuple) else loss))


def _tensorflow_build(seen: dict[str, Any]) -> None:
    import tensorflow as tf

    seen["tensorflow"] = str(getattr(tf, "__version__", "") or "") or None
    seen["tensorflow_file"] = getattr(tf, "__file__", None)
    build = dict(tf.sysconfig.get_build_info())
    seen["cuda"] = build.get("cuda_version")
    seen["cudnn"] = build.get("cudnn_version")
    seen["rocm"] = build.get("rocm_version")
    capabilities = build.get("cuda_compute_capabilities")
    if isinstance(capabilities, list | tuple):
        seen["arch_list"] = [str(c) for c in capabilities][:MAX_DEVICES]
    devices = []
    for device in list(tf.config.list_physical_devices())[:MAX_DEVICES]:
        entry: dict[str, Any] = {"kind": str(device.device_type).lower(), "name": str(device.name)}
        if entry["kind"] == "gpu":
            details = tf.config.experimental.get_device_details(device)
            entry["name"] = str(details.get("device_name") or device.name)
            capability = details.get("compute_capability")
            if isinstance(capability, tuple | list) and len(capability) == 2:
                entry["compute_capability"] = f"{capability[0]}.{capability[1]}"
        devices.append(entry)
    seen["devices"] = devices


def _backend_devices(backend: str, seen: dict[str, Any]) -> None:
    """Keras on JAX or PyTorch: the backend's own device list (no step; Keras runs that)."""
    probe: dict[str, Any] = {"devices": []}
    if backend == "jax":
        import jax

        probe["devices"] = [
            {"kind": _jax_kind(d.platform), "name": str(getattr(d, "device_kind", d.platform))}
            for d in list(jax.devices())[:MAX_DEVICES]
        ]
    elif backend == "torch":
        import torch

        probe["devices"] = [{"kind": "cpu", "name": "cpu"}] + [
            {"kind": "gpu", "name": str(torch.cuda.get_device_name(i))}
            for i in range(min(torch.cuda.device_count(), MAX_DEVICES))
        ]
        seen["cuda"], seen["hip"] = torch.version.cuda, getattr(torch.version, "hip", None)
    seen["devices"] = probe["devices"]


if __name__ == "__main__":
    sys.exit(main())
