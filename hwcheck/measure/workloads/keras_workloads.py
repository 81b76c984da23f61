"""The built-in workloads in Keras 3, backend-neutral (runs under any KERAS_BACKEND).

The policy is set before the model is built, the output layer stays float32, and each step
is `model.train_on_batch`, which applies the LossScaleOptimizer that compile() puts around
the optimizer for mixed_float16 on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from hwcheck.measure.workloads.sizes import SEED, size_of


def make_step(
    workload: str, policy: str, *, loss_scaling: bool = True, device: str | None = None
) -> Callable[[], Any]:
    """One AdamW training step of `workload` in `policy`; the step returns the loss as a float."""
    size = size_of(workload, device or "cpu")
    keras.utils.set_random_seed(SEED)
    keras.mixed_precision.set_global_policy(policy)
    model, inputs, labels = BUILDERS[workload](size, np.random.default_rng(SEED))
    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        auto_scale_loss=loss_scaling,
    )

    def step() -> Any:
        return model.train_on_batch(inputs, labels)

    return step


def _labels(rng: np.random.Generator, classes: int, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, classes, shape).astype("int32")


def _logits(x: Any, classes: int) -> Any:
    # The output layer computes in float32 so the loss and its gradient stay in range.
    return keras.layers.Dense(classes, dtype="float32")(x)


def _mlp(size: dict[str, Any], rng: np.random.Generator) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    inputs = keras.Input((size["inputs"],))
    x = inputs
    for width in size["hidden"]:
        x = keras.layers.Dense(width, activation="relu")(x)
    model = keras.Model(inputs, _logits(x, size["classes"]))
    data = rng.standard_normal((size["batch"], size["inputs"]), dtype="float32")
    return model, data, _labels(rng, size["classes"], (size["batch"],))


def _block(x: Any, kind: str, width: int, stride: int) -> Any:
    layers = keras.layers
    width_out = width * 4 if kind == "bottleneck" else width
    shortcut = x
    if stride != 1 or x.shape[-1] != width_out:
        shortcut = layers.Conv2D(width_out, 1, strides=stride, use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    if kind == "bottleneck":
        y = layers.Conv2D(width, 1, use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(y)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.Conv2D(width_out, 1, use_bias=False)(y)
    else:
        y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.Conv2D(width_out, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def _conv(size: dict[str, Any], rng: np.random.Generator) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    layers = keras.layers
    # channels_last (NHWC), Keras's default and the layout Tensor Cores want.
    inputs = keras.Input((size["image"], size["image"], 3))
    large = size["image"] >= 128
    x = layers.Conv2D(size["widths"][0], 7 if large else 3, strides=2 if large else 1, padding="same")(inputs)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    if large:
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for stage, (count, width) in enumerate(zip(size["stages"], size["widths"], strict=False)):
        for index in range(count):
            x = _block(x, size["block"], width, 2 if stage > 0 and index == 0 else 1)
    x = layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, _logits(x, size["classes"]))
    shape = (size["batch"], size["image"], size["image"], 3)
    data = rng.standard_normal(shape, dtype="float32")
    return model, data, _labels(rng, size["classes"], (size["batch"],))


def _transformer(
    size: dict[str, Any], rng: np.random.Generator
) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    layers = keras.layers
    d_model = size["d_model"]
    inputs = keras.Input((size["sequence"], d_model))
    x = inputs
    for _ in range(size["layers"]):
        attention = layers.MultiHeadAttention(size["heads"], d_model // size["heads"])(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attention]))
        feed = layers.Dense(size["ff"], activation="relu")(x)
        feed = layers.Dense(d_model)(feed)
        x = layers.LayerNormalization()(layers.Add()([x, feed]))
    model = keras.Model(inputs, _logits(x, d_model))
    data = rng.standard_normal((size["batch"], size["sequence"], d_model), dtype="float32")
    return model, data, _labels(rng, d_model, (size["batch"], size["sequence"]))


def _lstm(size: dict[str, Any], rng: np.random.Generator) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    inputs = keras.Input((size["sequence"], size["inputs"]))
    x = inputs
    for index in range(size["layers"]):
        x = keras.layers.LSTM(size["hidden"], return_sequences=index < size["layers"] - 1)(x)
    model = keras.Model(inputs, _logits(x, size["classes"]))
    data = rng.standard_normal((size["batch"], size["sequence"], size["inputs"]), dtype="float32")
    return model, data, _labels(rng, size["classes"], (size["batch"],))


BUILDERS = {"mlp": _mlp, "conv": _conv, "transformer": _transformer, "lstm": _lstm}
