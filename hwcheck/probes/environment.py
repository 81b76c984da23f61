"""Probe: environment variables that change how frameworks use the hardware."""

from __future__ import annotations

import os

from hwcheck.probes.result import ABSENT, OK, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# Each one changes precision or device selection behind the user's back.
VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_TF32_OVERRIDE",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_USE_LEGACY_KERAS",
    "TF_XLA_FLAGS",
    "XLA_FLAGS",
    "KERAS_BACKEND",
    "JAX_PLATFORMS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "TORCH_CUDA_ARCH_LIST",
    # ROCm: which AMD GPUs a process sees, and the gfx target the runtime is told the GPU is.
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    # Searched before a library's RUNPATH: an old cuDNN here shadows the one a framework ships.
    "LD_LIBRARY_PATH",
    # LLaMA-Factory skips its start-up check of the transformers version when this is 1/true.
    "DISABLE_VERSION_CHECK",
)


def probe(environ: Mapping[str, str] | None = None) -> ProbeResult:
    """Record which of VARIABLES are set, and to what."""
    environ = os.environ if environ is None else environ
    found = {name: environ[name] for name in VARIABLES if name in environ}
    if not found:
        return ProbeResult(ABSENT, {"environment": {}}, reason="none of the variables is set")
    return ProbeResult(OK, {"environment": found})
