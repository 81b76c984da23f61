"""The built-in workloads in PyTorch: each make_step builds a model, data and optimizer once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hwcheck.measure.workloads.sizes import SEED, size_of

AUTOCAST = {"mixed_bfloat16": torch.bfloat16, "mixed_float16": torch.float16}
ACCELERATORS = ("cuda", "mps", "xpu")


def make_step(
    workload: str, policy: str, *, loss_scaling: bool = True, device: str | None = None
) -> Callable[[], Any]:
    """One AdamW training step of `workload` in `policy`; the step returns the loss tensor."""
    target = device or ("cuda" if torch.cuda.is_available() else "cpu")
    target = "cuda" if target == "gpu" else target
    # Apple's and Intel's GPUs (mps, xpu) run the accelerator sizes too.
    size = size_of(workload, "gpu" if target in ACCELERATORS else "cpu")
    torch.manual_seed(SEED)
    model, inputs, labels = BUILDERS[workload](size)
    model, inputs = model.to(target), inputs.to(target)
    if workload == "conv":
        # NHWC, the layout Tensor Cores convolve in without transposes.
        model = model.to(memory_format=torch.channels_last)
        inputs = inputs.contiguous(memory_format=torch.channels_last)
    labels = labels.to(target)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_function = nn.CrossEntropyLoss()
    dtype = AUTOCAST.get(policy)
    if policy != "float32" and dtype is None:
        raise ValueError(f"unknown policy {policy!r}")
    scaler = torch.amp.GradScaler(target) if dtype is torch.float16 and loss_scaling else None

    def step() -> Any:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(target, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = loss_function(model(inputs).float(), labels)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return step


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def _mlp(size: dict[str, Any]) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    widths = [size["inputs"], *size["hidden"]]
    layers: list[nn.Module] = []
    for width_in, width_out in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    layers.append(nn.Linear(widths[-1], size["classes"]))
    inputs = torch.randn(size["batch"], size["inputs"], generator=_generator())
    labels = torch.randint(0, size["classes"], (size["batch"],), generator=_generator())
    return nn.Sequential(*layers), inputs, labels


class _Block(nn.Module):
    """A residual block: basic (two 3x3) or bottleneck (1x1, 3x3, 1x1 with 4x expansion)."""

    def __init__(self, kind: str, width_in: int, width: int, stride: int) -> None:
        super().__init__()
        width_out = width * 4 if kind == "bottleneck" else width
        if kind == "bottleneck":
            self.body = nn.Sequential(
                nn.Conv2d(width_in, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width_out, 1, bias=False),
                nn.BatchNorm2d(width_out),
            )
        else:
            self.body = nn.Sequential(
                nn.Conv2d(width_in, width, 3, stride, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width_out, 3, 1, 1, bias=False),
                nn.BatchNorm2d(width_out),
            )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or width_in != width_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(width_in, width_out, 1, stride, bias=False), nn.BatchNorm2d(width_out)
            )
        self.width_out = width_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def _conv(size: dict[str, Any]) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    stem = size["widths"][0]
    large = size["image"] >= 128
    layers: list[nn.Module] = [
        nn.Conv2d(3, stem, 7 if large else 3, 2 if large else 1, 3 if large else 1, bias=False),
        nn.BatchNorm2d(stem),
        nn.ReLU(inplace=True),
    ]
    if large:
        layers.append(nn.MaxPool2d(3, 2, 1))
    width_in = stem
    for stage, (count, width) in enumerate(zip(size["stages"], size["widths"], strict=False)):
        for index in range(count):
            block = _Block(size["block"], width_in, width, 2 if stage > 0 and index == 0 else 1)
            layers.append(block)
            width_in = block.width_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width_in, size["classes"])]
    shape = (size["batch"], 3, size["image"], size["image"])
    inputs = torch.randn(*shape, generator=_generator())
    labels = torch.randint(0, size["classes"], (size["batch"],), generator=_generator())
    return nn.Sequential(*layers), inputs, labels


class _Encoder(nn.Module):
    def __init__(self, size: dict[str, Any]) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            size["d_model"], size["heads"], size["ff"], dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, size["layers"], enable_nested_tensor=False)
        self.head = nn.Linear(size["d_model"], size["d_model"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x)).flatten(0, 1)


def _transformer(size: dict[str, Any]) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    # Token classification over d_model classes: every position gets a label.
    shape = (size["batch"], size["sequence"], size["d_model"])
    inputs = torch.randn(*shape, generator=_generator())
    labels = torch.randint(0, size["d_model"], (size["batch"] * size["sequence"],), generator=_generator())
    return _Encoder(size), inputs, labels


class _Recurrent(nn.Module):
    def __init__(self, size: dict[str, Any]) -> None:
        super().__init__()
        self.lstm = nn.LSTM(size["inputs"], size["hidden"], size["layers"], batch_first=True)
        self.head = nn.Linear(size["hidden"], size["classes"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _state = self.lstm(x)
        return self.head(output[:, -1])


def _lstm(size: dict[str, Any]) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    shape = (size["batch"], size["sequence"], size["inputs"])
    inputs = torch.randn(*shape, generator=_generator())
    labels = torch.randint(0, size["classes"], (size["batch"],), generator=_generator())
    return _Recurrent(size), inputs, labels


BUILDERS = {"mlp": _mlp, "conv": _conv, "transformer": _transformer, "lstm": _lstm}
