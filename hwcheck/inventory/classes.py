"""Hardware classes: what makes two nodes interchangeable for a training run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwcheck import devices, knowledge

if TYPE_CHECKING:
    from hwcheck.devices import Device

# (workload, framework, device kind, variant): what one measured speed-up is of.
SpeedupKey = tuple[str, str, str, str]


def class_cpu_flags() -> frozenset[str]:
    """The CPU flags that change precision advice (rules/knowledge/cpu_features.toml):
    two nodes whose CPUs differ only in other flags are the same class."""
    return frozenset(row["name"] for row in knowledge.cpu_flags())


@dataclass(frozen=True)
class GpuGroup:
    """Identical GPUs in one node: model, how many, whether MIG is on."""

    name: str
    count: int
    mig: bool = False
    arch: str | None = None  # an AMD GPU's gfx target: same name, other target, other class
    # Unified memory (Apple silicon, a Jetson): the chip's name leaves its memory open.
    unified_gib: int | None = None

    def describe(self) -> str:
        """E.g. "8× NVIDIA A100-SXM4-80GB (MIG)", "8× AMD Instinct MI300X (gfx942)"."""
        return (
            f"{self.count}× {self.name}"
            + (" (MIG)" if self.mig else "")
            + (f" ({self.arch})" if self.arch else "")
            + (f" ({self.unified_gib} GiB unified)" if self.unified_gib else "")
        )


@dataclass(frozen=True)
class HardwareClass:
    """The facts that put a node in a class: GPUs, CPU, driver/CUDA, TensorFlow build, TPU."""

    gpus: tuple[GpuGroup, ...] = ()
    cpu_arch: str | None = None
    cpu_model: str | None = None
    cpu_flags: tuple[str, ...] = ()
    driver: str | None = None
    driver_cuda: str | None = None
    cuda: str | None = None
    tensorflow: str | None = None
    tensorflow_cuda_build: bool | None = None
    tensorflow_cuda: str | None = None
    tensorflow_cudnn: str | None = None
    tpu: str | None = None
    rocm: str | None = None  # the ROCm release installed (AMD nodes)
    # Apple and Intel GPUs train on what macOS and Intel's compute runtime provide: nodes that
    # differ there get different advice (PyTorch's MPS needs a macOS per release).
    macos: str | None = None
    intel_runtime: str | None = None

    @property
    def gpu_count(self) -> int:
        """GPUs per node."""
        return sum(group.count for group in self.gpus)

    def gpu_text(self) -> str:
        """The GPUs in words, "no GPU" when there are none."""
        return ", ".join(group.describe() for group in self.gpus) or "no GPU"

    def cpu_text(self) -> str:
        """The CPU model; its class-relevant flags are listed separately."""
        return self.cpu_model or self.cpu_arch or "unknown CPU"

    def driver_text(self) -> str:
        """NVIDIA driver (and the CUDA it supports) and the CUDA runtime found; macOS or Intel's
        compute runtime for Apple and Intel GPUs; "no driver"."""
        parts = []
        if self.driver:
            parts.append(
                f"driver {self.driver}" + (f" (CUDA {self.driver_cuda})" if self.driver_cuda else "")
            )
        if self.macos:
            parts.append(f"macOS {self.macos}")
        if self.intel_runtime:
            parts.append(f"Intel compute runtime {self.intel_runtime}")
        text = ", ".join(parts) or "no driver"
        if self.cuda:
            text += f", runtime {self.cuda}"
        if self.rocm:
            text += f", ROCm {self.rocm}"
        return text

    def tensorflow_text(self) -> str:
        """TensorFlow version and build, "not installed" when absent."""
        if not self.tensorflow:
            return "not installed"
        if self.tensorflow_cuda_build is False:
            return f"{self.tensorflow} CPU-only"
        built = [
            f"CUDA {self.tensorflow_cuda}" if self.tensorflow_cuda else "",
            f"cuDNN {self.tensorflow_cudnn}" if self.tensorflow_cudnn else "",
        ]
        return " ".join([self.tensorflow, *[part for part in built if part]])

    def to_dict(self) -> dict[str, Any]:
        """The class's hardware as it appears in the JSON inventory."""
        return {
            "gpus": [
                {
                    "name": g.name,
                    "count": g.count,
                    "mig": g.mig,
                    **({"arch": g.arch} if g.arch else {}),
                    **({"unified_memory_gib": g.unified_gib} if g.unified_gib else {}),
                }
                for g in self.gpus
            ],
            "cpu": {"arch": self.cpu_arch, "model": self.cpu_model, "flags": list(self.cpu_flags)},
            "nvidia_driver": {"version": self.driver, "cuda": self.driver_cuda},
            "cuda": self.cuda,
            "tensorflow": {
                "version": self.tensorflow,
                "cuda_build": self.tensorflow_cuda_build,
                "cuda": self.tensorflow_cuda,
                "cudnn": self.tensorflow_cudnn,
            },
            "tpu": self.tpu,
            "rocm": self.rocm,
            "macos": self.macos,
            "intel_compute_runtime": self.intel_runtime,
        }


def hardware_class(facts: dict[str, Any]) -> HardwareClass:
    """The class of the machine `facts` describe (facts already valid against the schema).

    The GPUs here are every device plug-in's installed ones (hwcheck.devices.installed), not
    those CUDA_VISIBLE_DEVICES and kin left to the process that wrote the report: a class is
    what is installed, so the same node is the same hardware whatever shell ran hwcheck. The
    advice shown for a class comes from the recommendation, which the engine made for the
    visible GPUs (devices/cuda_visibility.py), so a report written with every GPU hidden shows
    its CPU policy and its error findings.
    """
    # A Jetson's GPU is not on the PCI bus and NVML may not list it: it is the SoC's (devices/tegra.py).
    facts = devices.complete(facts)
    cpu = facts.get("cpu") or {}
    driver = facts.get("nvidia_driver") or {}
    tensorflow = (facts.get("frameworks") or {}).get("tensorflow") or {}
    tpu = facts.get("tpu") or {}
    found = devices.installed(facts)
    vendors = {device.vendor for device in found}
    intel_driver = facts.get("intel_gpu_driver") or {}
    return HardwareClass(
        gpus=_gpu_groups(found),
        cpu_arch=cpu.get("arch"),
        cpu_model=cpu.get("model"),
        cpu_flags=tuple(sorted(class_cpu_flags().intersection(cpu.get("flags") or ()))),
        driver=driver.get("version"),
        driver_cuda=driver.get("cuda"),
        cuda=(facts.get("cuda") or {}).get("version"),
        tensorflow=tensorflow.get("version"),
        tensorflow_cuda_build=tensorflow.get("cuda_build"),
        tensorflow_cuda=tensorflow.get("cuda"),
        tensorflow_cudnn=tensorflow.get("cudnn"),
        tpu=(tpu.get("type") or "TPU") if tpu.get("present") else None,
        rocm=(facts.get("rocm") or {}).get("version"),
        macos=(facts.get("os") or {}).get("macos") if "apple" in vendors else None,
        intel_runtime=intel_driver.get("opencl") if "intel" in vendors else None,
    )


def _gpu_groups(found: list[Device]) -> tuple[GpuGroup, ...]:
    """The node's GPUs, any plug-in's, grouped by model, MIG, architecture and unified memory.

    NVIDIA's model name fixes its compute capability (rules/knowledge/gpus.toml), so its
    architecture says nothing more; another vendor's name may stand for several (an AMD APU's
    gfx target). A discrete GPU's memory is its model's (NVML's figure moves with ECC and the
    driver); unified memory is the machine's, rounded to whole GiB.
    """
    counts = Counter(
        (
            device.name,
            device.mig,
            device.architecture if device.vendor != "nvidia" else None,
            round(device.memory_bytes / 2**30) if device.unified and device.memory_bytes else None,
        )
        for device in found
        if device.kind == "gpu"
    )
    return tuple(
        GpuGroup(name, count, mig, arch, unified)
        for (name, mig, arch, unified), count in sorted(
            counts.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] or "", item[0][3] or 0)
        )
    )


def measured_speedups(report: dict[str, Any]) -> dict[SpeedupKey, float]:
    """The speed-ups over float32 a report's bench results measured, per workload and variant.

    Only variants a user may be told to train in count (float32 itself is 1 by definition,
    float16 without loss scaling only prices the scaling); a later block of the same workload
    replaces an earlier one. A stale block (another framework version or device than the
    report's machine, facts/bench.py: Freshness) speaks for no class.
    """
    from hwcheck.engine.measured import block_backend
    from hwcheck.engine.verdict import RECOMMENDABLE
    from hwcheck.facts.bench import Freshness, blocks_of

    found: dict[SpeedupKey, float] = {}
    blocks = blocks_of(report.get("bench") or [])
    freshness = Freshness(report.get("facts") or {}) if blocks else None
    for block in blocks:
        if freshness is not None and freshness.stale(block):
            continue
        workload = block["workload"]
        label = Path(str(workload["script"])).name if workload.get("script") else str(workload["name"])
        framework = str(block["framework"])
        backend = block_backend(block)
        if framework in ("keras", "tensorflow") and backend and backend != framework:
            framework += f" on {backend}"
        for result in block["results"]:
            speedup = result.get("speedup")
            if result["status"] == "ok" and speedup and result["variant"] in RECOMMENDABLE[1:]:
                found[(label, framework, block["device"]["kind"], result["variant"])] = speedup
    return found
