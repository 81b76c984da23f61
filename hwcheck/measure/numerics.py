"""What a training step's numbers did, observed in the measuring child after each step, untimed.

For every step: whether the loss was finite. Where the step's parameters and GradScaler are
reachable (PyTorch): whether any gradient was inf or NaN, the fraction of gradient elements that
are exactly zero, and the steps GradScaler skipped (its scale fell) with its final scale. Where a
Keras 3 model's LossScaleOptimizer is reachable (any backend): the steps it skipped and its final
scale, since it too halves its dynamic scale exactly when a step's gradients are not finite. The
first losses are kept, so that the parent can compare each precision's trajectory with
float32's over the same steps and data (every child seeds its random generators alike).

What is reachable: the step's own `model`, `parameters`, `optimizer` and `scaler` attributes
(docs/bench.md, the make_step contract), else the modules, optimizers and GradScalers its
closure holds, or the object it is a method of. Nothing reachable leaves the gradients unknown.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

# Steps whose gradients are read (each read walks every parameter): the first ones tell.
GRADIENT_STEPS = 64
# Losses kept for the trajectory's comparison with float32's.
LOSS_HEAD = 64
SEED = 0
# The attributes a step may carry to expose what it trains (the make_step contract, docs/bench.md).
EXPOSED = ("model", "parameters", "optimizer", "scaler")
# How deep and how wide the search from a step for its model and GradScaler goes.
REACH = 3
SEARCHED = 256


def seed_everything() -> None:
    """Seed Python's, NumPy's and PyTorch's generators alike in every precision's child."""
    import random

    random.seed(SEED)
    for name in ("numpy", "torch"):
        module = sys.modules.get(name)
        if module is None:
            continue
        try:
            if name == "numpy":
                module.random.seed(SEED)
            else:
                module.manual_seed(SEED)
        except Exception:  # a stand-in module without the call: nothing to seed
            pass


class Observer:
    """The numerics of one child's steps, observed after each step outside its timing."""

    def __init__(
        self,
        step: Callable[[], Any] | None,
        backend: str,
        *,
        parameters: list[Any] | None = None,
        scaler: Any = None,
    ) -> None:
        """Observe `step` (what it exposes or holds), or the `parameters` and `scaler` given."""
        self.parameters: list[Any] = list(parameters or [])
        self.scaler: Any = scaler
        if step is not None and backend == "torch" and "torch" in sys.modules:
            self.parameters, self.scaler = _reachable(step)
        if step is not None and self.scaler is None and "keras" in sys.modules:
            self.scaler = keras_loss_scale(step)
        self.scale = _scale(self.scaler)
        self.steps = self.nonfinite_losses = 0
        self.first_nonfinite: int | None = None
        self.gradient_steps = self.nonfinite_gradient_steps = 0
        self.zero_sum = 0.0
        self.zero_steps = 0
        self.skipped = 0
        self.losses: list[float | None] = []

    def observe(self, loss: float) -> None:
        """Record one step that just ended with `loss`."""
        self.steps += 1
        finite = math.isfinite(loss)
        if len(self.losses) < LOSS_HEAD:
            self.losses.append(loss if finite else None)
        if not finite:
            self.nonfinite_losses += 1
            if self.first_nonfinite is None:
                self.first_nonfinite = self.steps
        scale = _scale(self.scaler)
        if scale is not None and self.scale is not None and scale < self.scale:
            self.skipped += 1  # GradScaler backs its scale off exactly when it skips the step
        self.scale = scale
        if self.parameters and self.gradient_steps < GRADIENT_STEPS:
            self._read_gradients()

    def _read_gradients(self) -> None:
        import torch

        with torch.no_grad():
            gradients = [p.grad for p in self.parameters if getattr(p, "grad", None) is not None]
            total = sum(g.numel() for g in gradients)
            if total == 0:
                return  # the step set its gradients to None: unknown
            try:
                # One read from the device for all the parameters, not two per parameter.
                zeros = int(torch.stack([(g == 0).sum() for g in gradients]).sum())
                finite = bool(torch.stack([torch.isfinite(g).all() for g in gradients]).all())
            except RuntimeError:  # parameters on several devices: read one by one
                zeros = sum(int((g == 0).sum()) for g in gradients)
                finite = all(bool(torch.isfinite(g).all()) for g in gradients)
        self.gradient_steps += 1
        if not finite:
            self.nonfinite_gradient_steps += 1
        else:
            self.zero_sum += zeros / total
            self.zero_steps += 1

    def summary(self) -> dict[str, Any]:
        """What was observed, as the child's result carries it."""
        seen = self.gradient_steps > 0
        return {
            "steps": self.steps,
            "nonfinite_losses": self.nonfinite_losses,
            "first_nonfinite_loss_step": self.first_nonfinite,
            "gradient_steps": self.gradient_steps,
            "nonfinite_gradient_steps": self.nonfinite_gradient_steps if seen else None,
            "zero_gradient_fraction": round(self.zero_sum / self.zero_steps, 6) if self.zero_steps else None,
            "scaler": _scaler_name(self.scaler),
            "scaler_skipped_steps": self.skipped if self.scaler is not None else None,
            "final_scale": self.scale,
            "loss_heads": [self.losses],
        }


def _reachable(step: Callable[[], Any]) -> tuple[list[Any], Any]:
    """The parameters and the enabled GradScaler a step exposes or holds.

    Searched from the step: its EXPOSED attributes, its closure, the object it is a method of
    and that object's attributes, a functools.partial's function and arguments, and the values
    of dicts, lists and tuples among them, REACH levels deep and SEARCHED objects at most.
    """
    import torch

    parameters: dict[int, Any] = {}
    scaler = None
    ends = (torch.nn.Module, torch.optim.Optimizer, torch.amp.GradScaler, torch.Tensor)
    for candidate in _searched(step, lambda thing: isinstance(thing, ends)):
        if isinstance(candidate, torch.nn.Module):
            parameters.update((id(p), p) for p in candidate.parameters())
        elif isinstance(candidate, torch.optim.Optimizer):
            for group in candidate.param_groups:
                parameters.update((id(p), p) for p in group["params"])
        elif isinstance(candidate, torch.amp.GradScaler):
            scaler = candidate if candidate.is_enabled() else scaler
        elif isinstance(candidate, torch.Tensor):
            parameters[id(candidate)] = candidate
    trained = [p for p in parameters.values() if getattr(p, "requires_grad", False)]
    return trained, scaler


def _searched(step: Callable[[], Any], found: Callable[[Any], bool]) -> Iterator[Any]:
    """Every object reached from a step, breadth first; the search stops at what `found` accepts."""
    pending: list[tuple[Any, int]] = [(getattr(step, name, None), 0) for name in EXPOSED]
    pending.append((step, 0))
    seen: set[int] = set()
    while pending and len(seen) < SEARCHED:
        candidate, level = pending.pop(0)
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        yield candidate
        if level < REACH and not found(candidate):
            pending.extend((inner, level + 1) for inner in _held(candidate))


def _held(thing: Any) -> list[Any]:
    """What a function, method, partial, object or container holds, for the search."""
    import functools

    if isinstance(thing, dict):
        return list(thing.values())[:SEARCHED]
    if isinstance(thing, list | tuple):
        return list(thing[:SEARCHED])
    if isinstance(thing, functools.partial):
        return [thing.func, *thing.args, *thing.keywords.values()]
    held: list[Any] = []
    for cell in getattr(thing, "__closure__", None) or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    owner = getattr(thing, "__self__", None)
    if owner is not None:
        held.append(owner)
    if not callable(thing) or owner is not None or isinstance(getattr(thing, "__dict__", None), dict):
        attributes = getattr(thing, "__dict__", None)
        if isinstance(attributes, dict) and not isinstance(thing, type):
            held.extend(list(attributes.values())[:SEARCHED])
    return held


class KerasLossScale:
    """A Keras 3 LossScaleOptimizer read as a GradScaler is: its current scale."""

    def __init__(self, optimizer: Any) -> None:
        """Read `optimizer`'s dynamic scale."""
        self.optimizer = optimizer

    def get_scale(self) -> float:
        """The scale the next step's loss is multiplied by."""
        import numpy as np

        # The scale variable is made on the first step; until then the scale is the initial one.
        scale = getattr(self.optimizer, "dynamic_scale", None)
        return float(np.asarray(scale if scale is not None else self.optimizer.initial_scale))


def keras_loss_scale(step: Callable[[], Any]) -> KerasLossScale | None:
    """The LossScaleOptimizer of the Keras model a step exposes or holds, if it has one.

    Keras's compile() wraps the optimizer for mixed_float16 (auto_scale_loss); searched as
    `_reachable` searches: the step's EXPOSED attributes, what it holds, REACH levels deep.
    """
    for candidate in _searched(step, lambda thing: hasattr(thing, "optimizer")):
        for optimizer in (candidate, getattr(candidate, "optimizer", None)):
            if hasattr(optimizer, "inner_optimizer") and hasattr(optimizer, "scale_loss"):
                return KerasLossScale(optimizer)
    return None


def _scaler_name(scaler: Any) -> str | None:
    """The loss scaler's name in its framework's words: GradScaler or LossScaleOptimizer."""
    if scaler is None:
        return None
    return "LossScaleOptimizer" if isinstance(scaler, KerasLossScale) else "GradScaler"


def _scale(scaler: Any) -> float | None:
    if scaler is None:
        return None
    try:
        return float(scaler.get_scale())
    except Exception:  # a scaler in a state that cannot say: the scale stays unknown
        return None


def _is(summary: dict[str, Any], key: str, kind: Any) -> bool:
    return isinstance(summary.get(key), kind) and not isinstance(summary.get(key), bool)


def merged(summaries: list[Any]) -> dict[str, Any] | None:
    """One precision's numerics from the processes that took its rounds in turn."""
    found = [s for s in summaries if isinstance(s, dict)]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    counted = ("steps", "nonfinite_losses", "gradient_steps")
    total: dict[str, int | None] = {key: sum(int(s.get(key) or 0) for s in found) for key in counted}
    optional = ("nonfinite_gradient_steps", "scaler_skipped_steps")
    for key in optional:
        values = [s[key] for s in found if isinstance(s.get(key), int)]
        total[key] = sum(values) if values else None
    firsts: list[int] = [
        s["first_nonfinite_loss_step"] for s in found if _is(s, "first_nonfinite_loss_step", int)
    ]
    fractions: list[float] = [
        s["zero_gradient_fraction"] for s in found if _is(s, "zero_gradient_fraction", float)
    ]
    scales: list[float] = [s["final_scale"] for s in found if _is(s, "final_scale", int | float)]
    return {
        **total,
        "first_nonfinite_loss_step": min(firsts) if firsts else None,
        "zero_gradient_fraction": max(fractions) if fractions else None,
        "scaler": next((s["scaler"] for s in found if s.get("scaler")), None),
        "final_scale": min(scales) if scales else None,
        "loss_heads": [head for s in found for head in s.get("loss_heads") or []],
    }
