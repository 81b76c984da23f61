"""The knowledge layer: one small reader per table in rules/knowledge/ (no advice lives in Python).

Each module reads one table and answers questions about it; this package gathers their
public names so that callers write `knowledge.gpu_model(...)`. Tables are read on first use.
"""

from hwcheck.base.tables import load, read_toml, rules_dir
from hwcheck.knowledge.amd import (
    amd_target,
    amd_target_by_name,
    amd_target_family,
    first_rocm_supporting,
    override_facts,
    override_target,
    rocm_release,
    rocm_support,
    torch_rocm_variants,
)
from hwcheck.knowledge.apple import (
    bfloat16_macos,
    jax_metal,
    last_torch_for_macos,
    newest_jax_metal,
    tensorflow_metal,
    tensorflow_metal_fits,
    tensorflow_metal_for,
    torch_autocast_dtypes,
    torch_grad_scaler,
    torch_mps_floor,
)
from hwcheck.knowledge.cpu import (
    arch_family,
    bf16_class,
    cpu_feature,
    cpu_flags,
    fast_bf16_flag,
    kernel_floor,
)
from hwcheck.knowledge.cuda import (
    GpuKernels,
    KernelBuild,
    KernelDeviation,
    cuda_driver_minimum,
    cuda_targets,
    gpu_kernels,
    newest_cuda_for_driver,
)
from hwcheck.knowledge.fit_error import measured_error as fit_measured_error
from hwcheck.knowledge.gpus import (
    FEATURES,
    architecture,
    compute_capability_for,
    fp8_floors,
    gpu_family,
    gpu_features,
    gpu_model,
    gpu_model_by_pci_id,
)
from hwcheck.knowledge.intel import intel_family, intel_family_by_name, intel_ipex, intel_torch
from hwcheck.knowledge.jax import jax_cuda, jax_kernels, jax_minimum_capability
from hwcheck.knowledge.memory import holding as memory_holding
from hwcheck.knowledge.memory import optimizer_state
from hwcheck.knowledge.packages import package_variables
from hwcheck.knowledge.platforms import platform_facts
from hwcheck.knowledge.tensorflow import (
    newest_tensorflow_for_cuda,
    tensorflow_build,
    tensorflow_cpu_release,
    tensorflow_gpu_bfloat16_slow,
    tensorflow_kernels,
)
from hwcheck.knowledge.torch import (
    local_build,
    torch_build,
    torch_builds_for,
    torch_fix,
    torch_install,
    torch_kernels,
    torch_variant,
    torch_variants,
)
from hwcheck.knowledge.tpu import tpu_runtime
from hwcheck.knowledge.unknowns import unknowable_fact, unknowable_facts
from hwcheck.knowledge.vendors import nvidia_wheel, pci_vendor_id

__all__ = [
    "FEATURES",
    "GpuKernels",
    "KernelBuild",
    "KernelDeviation",
    "amd_target",
    "amd_target_by_name",
    "amd_target_family",
    "arch_family",
    "architecture",
    "bf16_class",
    "bfloat16_macos",
    "compute_capability_for",
    "cpu_feature",
    "cpu_flags",
    "cuda_driver_minimum",
    "cuda_targets",
    "fast_bf16_flag",
    "first_rocm_supporting",
    "fit_measured_error",
    "fp8_floors",
    "gpu_family",
    "gpu_features",
    "gpu_kernels",
    "gpu_model",
    "gpu_model_by_pci_id",
    "intel_family",
    "intel_family_by_name",
    "intel_ipex",
    "intel_torch",
    "jax_cuda",
    "jax_kernels",
    "jax_metal",
    "jax_minimum_capability",
    "kernel_floor",
    "last_torch_for_macos",
    "local_build",
    "load",
    "memory_holding",
    "newest_cuda_for_driver",
    "newest_jax_metal",
    "newest_tensorflow_for_cuda",
    "nvidia_wheel",
    "optimizer_state",
    "override_facts",
    "package_variables",
    "override_target",
    "pci_vendor_id",
    "platform_facts",
    "read_toml",
    "rocm_release",
    "rocm_support",
    "rules_dir",
    "tensorflow_build",
    "tensorflow_cpu_release",
    "tensorflow_gpu_bfloat16_slow",
    "tensorflow_kernels",
    "tensorflow_metal",
    "tensorflow_metal_fits",
    "tensorflow_metal_for",
    "torch_autocast_dtypes",
    "torch_build",
    "torch_builds_for",
    "torch_fix",
    "torch_grad_scaler",
    "torch_install",
    "torch_mps_floor",
    "torch_kernels",
    "torch_rocm_variants",
    "torch_variant",
    "torch_variants",
    "tpu_runtime",
    "unknowable_fact",
    "unknowable_facts",
]
