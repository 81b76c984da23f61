"""How big each built-in workload is on a GPU and on a CPU: plain data, no framework imported.

The GPU sizes are those of the H100 measurements in docs/measurements/h100-2026.md (MLP
784-4096-4096-10 at batch 8192; a 4-layer encoder with d_model 1024; a 2-layer LSTM with
hidden size 1024; ResNet-50 at batch 128, channels_last), so a GPU run compares with it.
Where the table leaves a dimension open (sequence length, heads, batch of the encoder and
the LSTM) the value here is hwcheck's choice. The CPU sizes keep a default bench of one
workload on a 2-core CPU well under a minute.
"""

from __future__ import annotations

from typing import Any

WORKLOADS = ("mlp", "conv", "transformer", "lstm")
DEVICES = ("gpu", "cpu")

SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "mlp": {
        "gpu": {"batch": 8192, "inputs": 784, "hidden": [4096, 4096], "classes": 10},
        "cpu": {"batch": 128, "inputs": 784, "hidden": [256, 256], "classes": 10},
    },
    "conv": {
        # ResNet-50: bottleneck blocks 3-4-6-3 at 224x224.
        "gpu": {
            "batch": 128,
            "image": 224,
            "block": "bottleneck",
            "stages": [3, 4, 6, 3],
            "widths": [64, 128, 256, 512],
            "classes": 1000,
        },
        "cpu": {
            "batch": 16,
            "image": 16,
            "block": "basic",
            "stages": [1, 1],
            "widths": [16, 32],
            "classes": 10,
        },
    },
    "transformer": {
        "gpu": {"batch": 32, "sequence": 512, "layers": 4, "d_model": 1024, "heads": 16, "ff": 4096},
        "cpu": {"batch": 8, "sequence": 32, "layers": 1, "d_model": 64, "heads": 4, "ff": 256},
    },
    "lstm": {
        "gpu": {"batch": 64, "sequence": 128, "inputs": 256, "layers": 2, "hidden": 1024, "classes": 10},
        "cpu": {"batch": 16, "sequence": 16, "inputs": 16, "layers": 2, "hidden": 64, "classes": 10},
    },
}

SEED = 0


def size_of(workload: str, device: str) -> dict[str, Any]:
    """The sizes of `workload` on `device` ("gpu" or "cpu")."""
    return dict(SIZES[workload]["gpu" if device == "gpu" else "cpu"])
