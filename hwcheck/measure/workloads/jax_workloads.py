"""The built-in workloads in plain JAX with optax: float32 parameters, 16-bit compute for mixed policies.

A mixed policy casts the parameters and inputs to the compute type inside the step and keeps
the loss and the optimizer in float32, as Keras's mixed policies do. float16 with loss scaling
uses dynamic loss scaling: the loss is multiplied by a scale, the gradients divided by it, a
step whose gradients overflow is skipped and the scale halved, and the scale doubles after
2000 good steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from hwcheck.measure.workloads.sizes import SEED, size_of

COMPUTE = {"float32": jnp.float32, "mixed_bfloat16": jnp.bfloat16, "mixed_float16": jnp.float16}
GROWTH_INTERVAL = 2000


def make_step(
    workload: str, policy: str, *, loss_scaling: bool = True, device: str | None = None
) -> Callable[[], Any]:
    """One AdamW training step of `workload` in `policy`; the step returns the loss (a JAX scalar)."""
    if policy not in COMPUTE:
        raise ValueError(f"unknown policy {policy!r}")
    target = device or ("gpu" if any(d.platform == "gpu" for d in jax.devices()) else "cpu")
    size = size_of(workload, target)
    init, apply, data = BUILDERS[workload]
    key = jax.random.PRNGKey(SEED)
    params_key, data_key = jax.random.split(key)
    params = init(params_key, size)
    inputs, labels = data(data_key, size)
    compute = COMPUTE[policy]
    scaled = policy == "mixed_float16" and loss_scaling
    optimizer = optax.adamw(1e-3)

    def loss_of(params: Any, scale: jax.Array) -> tuple[jax.Array, jax.Array]:
        cast = jax.tree_util.tree_map(lambda p: p.astype(compute), params)
        logits = apply(cast, inputs.astype(compute), size).astype(jnp.float32)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        return loss * scale, loss

    @jax.jit
    def update(params: Any, opt_state: Any, scale: jax.Array, good: jax.Array) -> tuple[Any, ...]:
        grads, loss = jax.grad(loss_of, has_aux=True)(params, scale)
        grads = jax.tree_util.tree_map(lambda g: g.astype(jnp.float32) / scale, grads)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]))
        updates, new_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        if scaled:
            keep = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
                lambda n, o: jnp.where(finite, n, o), new, old
            )
            new_params, new_state = keep(new_params, params), keep(new_state, opt_state)
            grow = good + 1 >= GROWTH_INTERVAL
            scale = jnp.where(finite, jnp.where(grow, scale * 2, scale), jnp.maximum(scale / 2, 1.0))
            good = jnp.where(finite & ~grow, good + 1, 0)
        return new_params, new_state, scale, good, loss

    state = {
        "params": params,
        "opt": optimizer.init(params),
        "scale": jnp.float32(2.0**15 if scaled else 1.0),
        "good": jnp.int32(0),
    }

    def step() -> Any:
        state["params"], state["opt"], state["scale"], state["good"], loss = update(
            state["params"], state["opt"], state["scale"], state["good"]
        )
        return loss

    return step


def _dense(key: jax.Array, width_in: int, width_out: int) -> dict[str, jax.Array]:
    bound = 1.0 / math.sqrt(width_in)
    return {
        "w": jax.random.uniform(key, (width_in, width_out), jnp.float32, -bound, bound),
        "b": jnp.zeros((width_out,), jnp.float32),
    }


def _apply_dense(layer: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return x @ layer["w"] + layer["b"]


def _labels(key: jax.Array, classes: int, shape: tuple[int, ...]) -> jax.Array:
    return jax.random.randint(key, shape, 0, classes)


# MLP


def _mlp_init(key: jax.Array, size: dict[str, Any]) -> list[dict[str, jax.Array]]:
    widths = [size["inputs"], *size["hidden"], size["classes"]]
    keys = jax.random.split(key, len(widths) - 1)
    return [_dense(k, a, b) for k, a, b in zip(keys, widths, widths[1:], strict=False)]


def _mlp_apply(params: list[dict[str, jax.Array]], x: jax.Array, size: dict[str, Any]) -> jax.Array:
    for layer in params[:-1]:
        x = jax.nn.relu(_apply_dense(layer, x))
    return _apply_dense(params[-1], x)


def _mlp_data(key: jax.Array, size: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
    x_key, y_key = jax.random.split(key)
    return jax.random.normal(x_key, (size["batch"], size["inputs"])), _labels(
        y_key, size["classes"], (size["batch"],)
    )


# Conv: a ResNet-style net in NHWC (channels_last), with per-batch normalization.


def _conv_weight(key: jax.Array, kernel: int, width_in: int, width_out: int) -> jax.Array:
    scale = math.sqrt(2.0 / (kernel * kernel * width_in))
    return jax.random.normal(key, (kernel, kernel, width_in, width_out)) * scale


def _conv(x: jax.Array, w: jax.Array, stride: int) -> jax.Array:
    return jax.lax.conv_general_dilated(
        x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def _norm(x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    mean = x.mean(axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axes, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(variance + 1e-5)


def _conv_plan(size: dict[str, Any]) -> list[tuple[int, int, int]]:
    """(width in, width, stride) of each residual block."""
    plan, width_in = [], size["widths"][0]
    for stage, (count, width) in enumerate(zip(size["stages"], size["widths"], strict=False)):
        for index in range(count):
            plan.append((width_in, width, 2 if stage > 0 and index == 0 else 1))
            width_in = width * 4 if size["block"] == "bottleneck" else width
    return plan


def _conv_init(key: jax.Array, size: dict[str, Any]) -> dict[str, Any]:
    large = size["image"] >= 128
    keys = iter(jax.random.split(key, 8 * len(_conv_plan(size)) + 4))
    stem = size["widths"][0]
    params: dict[str, Any] = {"stem": _conv_weight(next(keys), 7 if large else 3, 3, stem), "blocks": []}
    for width_in, width, stride in _conv_plan(size):
        width_out = width * 4 if size["block"] == "bottleneck" else width
        if size["block"] == "bottleneck":
            shapes = [(1, width_in, width), (3, width, width), (1, width, width_out)]
        else:
            shapes = [(3, width_in, width), (3, width, width_out)]
        block: dict[str, Any] = {"convs": [_conv_weight(next(keys), *shape) for shape in shapes]}
        if stride != 1 or width_in != width_out:
            block["shortcut"] = _conv_weight(next(keys), 1, width_in, width_out)
        params["blocks"].append(block)
    last = _conv_plan(size)[-1]
    width_last = last[1] * 4 if size["block"] == "bottleneck" else last[1]
    params["head"] = _dense(next(keys), width_last, size["classes"])
    return params


def _conv_apply(params: dict[str, Any], x: jax.Array, size: dict[str, Any]) -> jax.Array:
    large = size["image"] >= 128
    x = jax.nn.relu(_norm(_conv(x, params["stem"], 2 if large else 1), (0, 1, 2)))
    if large:
        x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    for block, (_width_in, _width, stride) in zip(params["blocks"], _conv_plan(size), strict=False):
        y = x
        convs = block["convs"]
        for index, w in enumerate(convs):
            # The stride sits on the 3x3 convolution (the first of a basic block, the second of a bottleneck).
            strided = index == (1 if len(convs) == 3 else 0)
            y = _norm(_conv(y, w, stride if strided else 1), (0, 1, 2))
            if index < len(convs) - 1:
                y = jax.nn.relu(y)
        shortcut = _norm(_conv(x, block["shortcut"], stride), (0, 1, 2)) if "shortcut" in block else x
        x = jax.nn.relu(y + shortcut)
    return _apply_dense(params["head"], x.mean((1, 2)))


def _conv_data(key: jax.Array, size: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
    x_key, y_key = jax.random.split(key)
    shape = (size["batch"], size["image"], size["image"], 3)
    return jax.random.normal(x_key, shape), _labels(y_key, size["classes"], (size["batch"],))


# Transformer encoder: post-norm blocks, token classification over d_model classes.


def _transformer_init(key: jax.Array, size: dict[str, Any]) -> dict[str, Any]:
    d_model, ff = size["d_model"], size["ff"]
    layers = []
    for layer_key in jax.random.split(key, size["layers"] + 1)[:-1]:
        keys = jax.random.split(layer_key, 6)
        layers.append(
            {
                "q": _dense(keys[0], d_model, d_model),
                "k": _dense(keys[1], d_model, d_model),
                "v": _dense(keys[2], d_model, d_model),
                "o": _dense(keys[3], d_model, d_model),
                "ff1": _dense(keys[4], d_model, ff),
                "ff2": _dense(keys[5], ff, d_model),
            }
        )
    return {"layers": layers, "head": _dense(jax.random.split(key, 1)[0], d_model, d_model)}


def _transformer_apply(params: dict[str, Any], x: jax.Array, size: dict[str, Any]) -> jax.Array:
    batch, sequence, d_model = x.shape
    heads = size["heads"]

    def split(t: jax.Array) -> jax.Array:
        return t.reshape(batch, sequence, heads, d_model // heads).transpose(0, 2, 1, 3)

    for layer in params["layers"]:
        q, k, v = (split(_apply_dense(layer[n], x)) for n in ("q", "k", "v"))
        weights = jax.nn.softmax((q @ k.transpose(0, 1, 3, 2)) / math.sqrt(d_model // heads), axis=-1)
        attended = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, sequence, d_model)
        x = _norm(x + _apply_dense(layer["o"], attended), (-1,))
        feed = _apply_dense(layer["ff2"], jax.nn.relu(_apply_dense(layer["ff1"], x)))
        x = _norm(x + feed, (-1,))
    return _apply_dense(params["head"], x).reshape(batch * sequence, d_model)


def _transformer_data(key: jax.Array, size: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
    x_key, y_key = jax.random.split(key)
    shape = (size["batch"], size["sequence"], size["d_model"])
    labels = _labels(y_key, size["d_model"], (size["batch"] * size["sequence"],))
    return jax.random.normal(x_key, shape), labels


# LSTM: stacked layers scanned over time; the last step's state is classified.


def _lstm_init(key: jax.Array, size: dict[str, Any]) -> dict[str, Any]:
    hidden = size["hidden"]
    keys = jax.random.split(key, size["layers"] + 1)
    layers = []
    for index in range(size["layers"]):
        width_in = size["inputs"] if index == 0 else hidden
        layers.append(_dense(keys[index], width_in + hidden, 4 * hidden))
    return {"layers": layers, "head": _dense(keys[-1], hidden, size["classes"])}


def _lstm_apply(params: dict[str, Any], x: jax.Array, size: dict[str, Any]) -> jax.Array:
    batch, hidden = x.shape[0], size["hidden"]
    outputs = x.transpose(1, 0, 2)  # time first, for scan
    for layer in params["layers"]:

        def cell(carry: tuple[jax.Array, jax.Array], x_t: jax.Array, layer: Any = layer) -> Any:
            h, c = carry
            gates = _apply_dense(layer, jnp.concatenate([x_t, h], axis=-1))
            i, f, g, o = jnp.split(gates, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((batch, hidden), x.dtype)
        _final, outputs = jax.lax.scan(cell, (zeros, zeros), outputs)
    return _apply_dense(params["head"], outputs[-1])


def _lstm_data(key: jax.Array, size: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
    x_key, y_key = jax.random.split(key)
    shape = (size["batch"], size["sequence"], size["inputs"])
    return jax.random.normal(x_key, shape), _labels(y_key, size["classes"], (size["batch"],))


BUILDERS: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
    "mlp": (_mlp_init, _mlp_apply, _mlp_data),
    "conv": (_conv_init, _conv_apply, _conv_data),
    "transformer": (_transformer_init, _transformer_apply, _transformer_data),
    "lstm": (_lstm_init, _lstm_apply, _lstm_data),
}
