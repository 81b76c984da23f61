"""Machines taken from real captures, and the advice a demanding ML engineer expects for each.

Every profile is a facts document built from recorded data:
- GPUs: the GPU probe replaying an NVML recording (tests/fixtures/nvml/<name>.json, whose
  "source" names the nvidia-smi / deviceQuery capture), or one of the few recordings below
  (RECORDINGS) for GPUs that have no fixture there, each with its source;
- CPUs: tests/fixtures/cpuinfo/<name>.txt parsed by the CPU probe;
- TensorFlow builds: the CUDA / cuDNN TensorFlow's tested build configurations list for the
  release (rules/knowledge/tensorflow.toml), as TensorFlow's build_info.py reports them.
Where a machine needs a value no capture recorded, the profile's `machine` text says which
value stands in for it and why the stand-in does not change the advice.

`wrong` lists the parts ("decision", "findings", "remedies") where the shipped rules are known to give
advice that is wrong for the machine, with the reason; the tests mark those xfail(strict).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from amd_profiles import amd_profiles
from fakes.nvml import FakeNvml, recording

from hwcheck.base.tables import load
from hwcheck.probes import OK
from hwcheck.probes.cpu import load_cpuinfo
from hwcheck.probes.nvidia import gpu as gpu_probe

FIXTURES = Path(__file__).parent / "fixtures"
NVML_NOT_FOUND = {"status": "absent", "reason": gpu_probe.NOT_FOUND}

# Findings every usable-GPU recommendation carries (SPEC §3 "further findings").
MIXED_ON_GPU = frozenset({"gpu-tensor-core-shapes", "gpu-xla", "output-float32"})
BF16_ON_GPU = MIXED_ON_GPU | {"gpu-tf32-default"}

THAMADA = "thamada/gls @ e20f22d0eec076b6eeed628fdb1312d84a6fb663 (gls/<GPU>_smi.py, <GPU>_deviceQuery.py)"
TELEGRAF = (
    "influxdata/telegraf @ b27263146617cefe16c0b300107b58b111a7fa57 (plugins/inputs/nvidia_smi/testdata/)"
)

# NVML recordings (FakeNvml's format) for GPUs without a fixture in tests/fixtures/nvml.
RECORDINGS: dict[str, dict[str, Any]] = {
    "rtx-5090": {
        "source": [
            {"file": "gpu-captures/thamada_gls/RTX5090_smi__q.txt", "origin": THAMADA},
            {"file": "gpu-captures/thamada_gls/RTX5090_deviceQuery.txt", "origin": THAMADA},
        ],
        "compute_capability_source": "CUDA deviceQuery: 'CUDA Capability Major/Minor version number: 12.0'",
        "driver_version": "570.124.06",
        "cuda_driver_version": 12080,
        "nvml_version": None,
        "devices": [
            {
                "name": "NVIDIA GeForce RTX 5090",
                "uuid": "GPU-ea2294a3-4d61-1757-8aed-f91723f16ad2",
                "serial": None,
                "pci_bus_id": "00000000:02:00.0",
                "memory_total_mib": 32607,
                "mig_mode": None,
                "compute_capability": [12, 0],
            },
        ],
    },
    "rtx-3080-windows": {
        "source": [{"file": "gpu-captures/telegraf/rtx-3080-v12.xml", "origin": TELEGRAF}],
        "compute_capability_source": "thamada/gls RTX3080_deviceQuery.txt (GeForce RTX 3080: 8.6); "
        "https://developer.nvidia.com/cuda-gpus (GeForce RTX 3080: 8.6)",
        "driver_version": "536.40",
        "cuda_driver_version": 12020,
        "nvml_version": None,
        "devices": [
            {
                "name": "NVIDIA GeForce RTX 3080",
                "uuid": "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4",
                "serial": None,
                "pci_bus_id": "00000000:04:00.0",
                "memory_total_mib": 10240,
                "mig_mode": None,
                "compute_capability": [8, 6],
            },
        ],
        "notes": "driver_model WDDM in the capture: a native Windows machine.",
    },
    "tf-guide-rtx-3090-rtx-2080-ti": {
        "source": [
            {
                "file": "shared/seeds/003 (TensorFlow mixed precision guide, as run by its authors)",
                "origin": "`nvidia-smi -L`: 'GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-8bb0882b-...)', "
                "'GPU 1: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-7315b749-...)'",
            }
        ],
        "compute_capability_source": "the guide's TensorFlow log: 'StreamExecutor device (0): NVIDIA "
        "GeForce RTX 3090, Compute Capability 8.6', '(1): NVIDIA GeForce RTX 2080 Ti, Compute "
        "Capability 7.5'",
        "driver_version": None,
        "cuda_driver_version": None,
        "nvml_version": None,
        "devices": [
            {
                "name": "NVIDIA GeForce RTX 3090",
                "uuid": "GPU-8bb0882b-61a3-d7c6-5636-ba3ad1416223",
                "serial": None,
                "pci_bus_id": None,
                "memory_total_mib": None,
                "mig_mode": None,
                "compute_capability": [8, 6],
            },
            {
                "name": "NVIDIA GeForce RTX 2080 Ti",
                "uuid": "GPU-7315b749-8f79-5d30-7955-4466dedba028",
                "serial": None,
                "pci_bus_id": None,
                "memory_total_mib": None,
                "mig_mode": None,
                "compute_capability": [7, 5],
            },
        ],
        "notes": "The guide prints neither the driver nor the memory: NVML answers them as unknown.",
    },
    "jetson-orin-nx": {
        "source": [
            {
                "file": "a Jetson Orin NX bug report (TensorRT-Edge-LLM fork user, 2026-05): "
                "L4T R36.4.3, CUDA 12.6",
                "origin": "`nvidia-smi` on the board: name 'Orin (nvgpu)', compute_cap 8.7, driver 540.4.0, "
                "memory 'Not Supported' (integrated GPU sharing the SoC's LPDDR5)",
            }
        ],
        "compute_capability_source": "nvidia-smi --query-gpu=compute_cap (8.7); "
        "https://developer.nvidia.com/cuda-gpus (Jetson Orin: 8.7)",
        "driver_version": "540.4.0",
        "cuda_driver_version": 12060,
        "nvml_version": None,
        "devices": [
            {
                "name": "Orin (nvgpu)",
                "uuid": None,
                "serial": None,
                "pci_bus_id": None,
                "memory_total_mib": None,
                "mig_mode": None,
                "compute_capability": [8, 7],
            },
        ],
    },
}


@dataclass(frozen=True)
class Profile:
    """One real machine, the facts it yields, and the advice it should get."""

    name: str
    machine: str  # what the machine is and where its values come from
    facts: dict[str, Any]
    policy: str
    device: str
    findings: frozenset[str]
    framework: str | None = "tensorflow"  # None: hwcheck picks from the installed frameworks
    prefer: str | None = None
    probes: dict[str, dict[str, Any]] | None = None
    wrong: dict[str, str] = field(default_factory=dict)  # part -> why the rules get it wrong

    @property
    def loss_scaling(self) -> bool:
        """Loss scaling goes with float16, and only with it."""
        return self.policy == "mixed_float16"


# --- facts builders ---------------------------------------------------------------


def nvidia(name: str, *, boards: int | None = None, driver: tuple[str, int] | None = None) -> dict[str, Any]:
    """The "gpus" and "nvidia_driver" facts the GPU probe reads from a recorded machine.

    `boards` repeats the recorded devices up to that many GPUs (identity fields left unknown
    on the repeats); `driver` replaces the driver (version, NVML's CUDA number such as 12040).
    """
    machine = copy.deepcopy(RECORDINGS[name] if name in RECORDINGS else recording(name))
    if boards:
        recorded = machine["devices"]
        anonymous = [{**d, "uuid": None, "serial": None, "pci_bus_id": None} for d in recorded]
        machine["devices"] = (recorded + anonymous * boards)[:boards]
    if driver:
        machine["driver_version"], machine["cuda_driver_version"] = driver
    result = gpu_probe.probe(nvml=FakeNvml(machine, text_type=str))
    assert result.status == OK, result.reason
    return result.facts


@cache
def _cpu(name: str) -> dict[str, Any]:
    return load_cpuinfo(FIXTURES / "cpuinfo" / f"{name}.txt")


def cpu(name: str) -> dict[str, Any]:
    """The "cpu" facts the CPU probe reads from tests/fixtures/cpuinfo/<name>.txt."""
    return {"cpu": copy.deepcopy(_cpu(name))}


def _tested(version: str) -> dict[str, str]:
    wanted = version.split(".")[:2]
    return next(row for row in load("tensorflow")["build"] if row["version"].split(".")[:2] == wanted)


def tensorflow(version: str, *, package: str = "tensorflow", cuda_build: bool = True) -> dict[str, Any]:
    """TensorFlow as its build_info.py reports it: a CUDA build names its CUDA and cuDNN major."""
    facts: dict[str, Any] = {
        "version": version,
        "package": package,
        "cuda_build": cuda_build,
        "rocm_build": False,
    }
    if cuda_build:
        tested = _tested(version)
        facts.update(cuda=tested["cuda"], cudnn=tested["cudnn"].split(".")[0])
    return facts


def keras_for(tensorflow_version: str) -> dict[str, Any]:
    """The Keras that `pip install tensorflow==VERSION` brings (Keras 3 from TensorFlow 2.16)."""
    major_minor = tuple(int(part) for part in tensorflow_version.split(".")[:2])
    if major_minor >= (2, 16):
        return {"version": "3.3.3", "tf_keras_major": 3}
    return {"version": tensorflow_version, "tf_keras_major": 2}


def with_tensorflow(
    version: str, *, package: str = "tensorflow", cuda_build: bool = True, python: str | None = None
) -> dict[str, Any]:
    """The frameworks (and Python) of a machine with TensorFlow `version` installed."""
    facts: dict[str, Any] = {
        "frameworks": {
            "tensorflow": tensorflow(version, package=package, cuda_build=cuda_build),
            "keras": keras_for(version),
        }
    }
    if python:
        facts["python"] = {"version": python}
    return facts


def pip_cuda_for(tensorflow_version: str) -> dict[str, Any]:
    """The CUDA runtime and cuDNN `pip install tensorflow[and-cuda]` brings: the tested ones."""
    tested = _tested(tensorflow_version)
    return {
        "cuda": {"version": tested["cuda"], "source": "pip"},
        "cudnn": {"version": tested["cudnn"], "source": "pip"},
    }


def libraries(cuda: str | None, cudnn: str | None, source: str) -> dict[str, Any]:
    """CUDA runtime and cuDNN found somewhere else than pip (loader path, headers)."""
    return {"cuda": {"version": cuda, "source": source}, "cudnn": {"version": cudnn, "source": source}}


def pci_nvidia(
    addresses: list[str], device_id: str, *, driver: str | None, nodes: bool, display_class: str = "0x030200"
) -> dict[str, Any]:
    """NVIDIA GPUs as the PCI scan lists them (class 0x0302xx: 3D controller)."""
    return {
        "pci": {
            "devices": [
                {
                    "address": address,
                    "vendor": "nvidia",
                    "vendor_id": "0x10de",
                    "device_id": device_id,
                    "class": display_class,
                    "driver": driver,
                    "device_nodes": nodes,
                }
                for address in addresses
            ]
        }
    }


def tpu(generation: str, chips: int, device_id: str) -> dict[str, Any]:
    """A TPU VM's "tpu" facts as the TPU probe reports them from the PCI bus."""
    return {
        "tpu": {
            "present": True,
            "type": generation,
            "chips": chips,
            "detected_by": [f"PCI: {chips} x Google {device_id} ({generation})"],
        }
    }


def machine(*parts: dict[str, Any]) -> dict[str, Any]:
    """A facts document from its parts; "frameworks" parts are merged, the rest replace."""
    facts: dict[str, Any] = {"schema_version": 1, "os": {"system": "Linux", "machine": "x86_64"}}
    for part in parts:
        for key, value in part.items():
            if key in ("frameworks", "os") and key in facts:
                facts[key] = {**facts[key], **value}
            else:
                facts[key] = value
    if "cpu" in facts and facts["cpu"].get("arch"):
        facts["os"]["machine"] = facts["cpu"]["arch"]
    facts.setdefault("tpu", {"present": False})
    return facts


NO_PCI_ACCELERATOR: dict[str, Any] = {"pci": {"devices": []}}
WINDOWS = {"os": {"system": "Windows", "machine": "AMD64"}}
TORCH_CUDA = {"frameworks": {"torch": {"version": "2.5.1+cu124", "cuda": "12.4"}}}
TORCH_CPU = {"frameworks": {"torch": {"version": "2.5.1+cpu", "cuda": None}}}
# shared/anchors/h100.md: torch 2.11 (CUDA 13.0 build), JAX 0.11.2, Keras 3.15.1, no TensorFlow;
# driver 580.159.04 (NVML: CUDA 13.0), CUDA 13.0.96 and cuDNN 9.19 from pip wheels.
H100_ANCHOR_FRAMEWORKS = {
    "frameworks": {
        "torch": {"version": "2.11.0+cu130", "cuda": "13.0"},
        "jax": {"version": "0.11.2", "jaxlib": "0.11.2"},
        "keras": {"version": "3.15.1", "tf_keras": None, "legacy": False, "tf_keras_major": None},
    },
    "python": {"version": "3.12.3"},
}
H100_ANCHOR_DRIVER = ("580.159.04", 13000)
# The anchors' torch 2.11 step times in the bench format (tests/fixtures/bench/README.md).
H100_ANCHOR_BENCH = {
    "measurements": {"bench": [json.loads((FIXTURES / "bench" / "h100-anchors.json").read_text())]}
}
# hwcheck doctor --measure's blocks (measured_for): real recordings, labelled as doctor --measure's
# by the tests so that they decide (tests/fixtures/bench/README.md says where each was measured).
MEASURED_FOR = {"measured_for": "doctor --measure"}
AMX_VM_FACTS = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())


def measured(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A facts part carrying `blocks` as doctor --measure's measurements."""
    return {"measurements": {"bench": [{**block, **MEASURED_FOR} for block in blocks]}}


def bench_fixture(name: str, workload: str | None = None) -> dict[str, Any]:
    """A block of tests/fixtures/bench/<name>.json (of a collection: the one of `workload`)."""
    document = json.loads((FIXTURES / "bench" / f"{name}.json").read_text())
    blocks = document.get("benches") or [document]
    return next(b for b in blocks if workload is None or b["workload"]["name"] == workload)


def h100_resnet50_batch256() -> dict[str, Any]:
    """shared/anchors/h100.md's ResNet-50 at batch 256, medians (fp32 288, tf32 101, bf16 64, fp16 54)."""
    block = copy.deepcopy(bench_fixture("h100-anchors", "conv"))
    block["workload"]["sizes"]["batch"] = 256
    medians = {"float32": 288.0, "float32+tf32": 101.0, "mixed_bfloat16": 64.0, "mixed_float16": 54.0}
    block["results"] = [r for r in block["results"] if r["variant"] in medians]
    for result in block["results"]:
        median = medians[result["variant"]]
        result["ms_per_step"] = {"median": median, "iqr": 0.0, "min": median, "max": median}
        result["speedup"] = round(288.0 / median, 3)
    return block


# Findings a bf16 GPU recommendation carries on each runtime (the TF32 default is the runtime's).
BF16_ON_GPU_TORCH = frozenset({"gpu-tf32-torch", "gpu-tensor-core-shapes"})
BF16_ON_GPU_JAX = frozenset({"gpu-tf32-jax", "gpu-tensor-core-shapes"})
# PCI buses of the 8 H100 in thamada's H100SXMx8 capture.
H100_HGX_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


def _profiles() -> list[Profile]:
    sapphire_rapids = cpu("intel-sapphirerapids-xeon-platinum-8480plus")
    cascade_lake = cpu("intel-cascadelake-xeon-platinum-8260m")
    zen3 = cpu("amd-zen3-ryzen9-5950x")
    epyc_zen = cpu("amd-zen-epyc-7301")
    broadwell = cpu("intel-broadwell-xeon-e5-2690v4")
    haswell_cpu = cpu("intel-haswell-xeon-e5-2680v3")
    tpu_host = {"cpu": {"arch": "x86_64", "vendor": "AuthenticAMD"}}
    return [
        # ---------------------------------------------------------------- data-center GPUs
        Profile(
            "dgx-a100-8x-a100-sxm4-80gb",
            "DGX A100: the 4 recorded A100-SXM4-80GB (thamada A100SXMx4, driver 555.42.02) repeated to 8; "
            "TensorFlow 2.16.1 with its pip CUDA 12.3 / cuDNN 8.9. CPU: the EPYC 7301 dump stands in for "
            "the DGX's EPYC 7742 (both AMD EPYC without AMX; the GPUs decide).",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4", boards=8),
                NO_PCI_ACCELERATOR,
                pip_cuda_for("2.16.1"),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU,
        ),
        Profile(
            "dgx1-8x-v100-sxm2-16gb",
            "8x Tesla V100-SXM2-16GB (thamada V100_x8, driver 550.127.05 / CUDA 12.4), TensorFlow 2.15.0 "
            "with pip CUDA 12.2 / cuDNN 8.9; the Broadwell E5-2690 v4 dump stands in for the DGX-1's "
            "E5-2698 v4 (same generation).",
            machine(
                broadwell,
                nvidia("v100-sxm2-16gb-x8"),
                pip_cuda_for("2.15.0"),
                with_tensorflow("2.15.0", python="3.10.12"),
            ),
            "mixed_float16",
            "gpu",
            MIXED_ON_GPU,
        ),
        Profile(
            "hgx-8x-h100-sxm-tf217",
            "8x H100 80GB HBM3 (thamada H100SXMx8, driver 565.57.01 / CUDA 12.7) on a Sapphire Rapids "
            "8480+ host, TensorFlow 2.17.0 with pip CUDA 12.3 / cuDNN 8.9.",
            machine(
                sapphire_rapids,
                nvidia("h100-sxm-x8"),
                pip_cuda_for("2.17.0"),
                with_tensorflow("2.17.0", python="3.11.9"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU,
        ),
        Profile(
            "h100-mig-tf220",
            "H100 80GB HBM3 with MIG enabled (nvidia_gpu_exporter capture, driver 590.48.01 / CUDA 13.1), "
            "Sapphire Rapids 8480+ host, TensorFlow 2.20.0 with pip CUDA 12.5 / cuDNN 9.3.",
            machine(
                sapphire_rapids,
                nvidia("h100-80gb-hbm3-mig"),
                pip_cuda_for("2.20.0"),
                with_tensorflow("2.20.0", python="3.12.3"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"gpu-mig-several-instances"},
        ),
        Profile(
            "a100-40gb-mig-driver-510-tf214",
            "A100-SXM4-40GB with MIG enabled (netdata capture, driver 510.47.03 / CUDA 11.6), TensorFlow "
            "2.14.0 built for CUDA 11.8: runs through CUDA 11 minor-version compatibility.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-40gb-mig"),
                pip_cuda_for("2.14.0"),
                with_tensorflow("2.14.0", python="3.10.12"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"gpu-mig-several-instances", "driver-older-minor-version"},
        ),
        Profile(
            "gcp-g2-l4-tf218",
            "NVIDIA L4 (thamada L4, driver 550.90.07 / CUDA 12.4), TensorFlow 2.18.0 with pip CUDA 12.5 "
            "/ cuDNN 9.3: CUDA 12.5 on a 12.4 driver runs through minor-version compatibility. The "
            "Cascade Lake 8260M dump stands in for the G2 VM's Cascade Lake.",
            machine(
                cascade_lake, nvidia("l4"), pip_cuda_for("2.18.0"), with_tensorflow("2.18.0", python="3.11.9")
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"driver-older-minor-version"},
        ),
        Profile(
            "l40s-two-part-driver-tf221",
            "NVIDIA L40S (nvidia_gpu_exporter capture, two-part driver 595.80 / CUDA 13.2), TensorFlow "
            "2.21.0 with pip CUDA 12.5 / cuDNN 9.3, Zen 4 EPYC 9654 host.",
            machine(
                cpu("amd-zen4-epyc-9654"),
                nvidia("l40s-two-part-driver"),
                pip_cuda_for("2.21.0"),
                with_tensorflow("2.21.0", python="3.13.1"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU,
        ),
        Profile(
            "t4-cloud-vm-driver-515-tf216",
            "Tesla T4 cloud VM (telegraf capture: driver 515.105.01, CUDA 11.7) with TensorFlow 2.16.1 "
            "built for CUDA 12.3: the driver cannot run it. The Cascade Lake 8260M dump stands in for "
            "the g4dn's Cascade Lake 8259CL.",
            machine(
                cascade_lake,
                nvidia("tesla-t4"),
                pip_cuda_for("2.16.1"),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"driver-too-old-for-framework"}),
        ),
        Profile(
            "colab-p100-tf211",
            "Tesla P100-PCIE-16GB (netdata capture, driver 510.47.03 / CUDA 11.6), the GPU the guide says "
            "Colab hands out, with TensorFlow 2.11.0 (CUDA 11.2) and a Broadwell host.",
            machine(
                broadwell,
                nvidia("tesla-p100-pcie-16gb"),
                pip_cuda_for("2.11.0"),
                with_tensorflow("2.11.0", python="3.10.12"),
            ),
            "float32",
            "gpu",
            frozenset(),
        ),
        # ---------------------------------------------------------------- workstations
        Profile(
            "tf-guide-rtx-3090-plus-rtx-2080-ti",
            "The TensorFlow mixed precision guide's own machine: RTX 3090 (CC 8.6) + RTX 2080 Ti (CC 7.5), "
            "names and capabilities from the guide's output; TensorFlow 2.17.0 (the guide does not print "
            "its version) with pip CUDA 12.3 / cuDNN 8.9; Zen 3 desktop CPU.",
            machine(
                zen3,
                nvidia("tf-guide-rtx-3090-rtx-2080-ti"),
                pip_cuda_for("2.17.0"),
                with_tensorflow("2.17.0", python="3.11.9"),
            ),
            "mixed_float16",
            "gpu",
            MIXED_ON_GPU | {"gpu-mixed-generations"},
        ),
        Profile(
            "rtx-2080-super-tf219",
            "GeForce RTX 2080 SUPER alone (nvidia_gpu_exporter capture, driver 595.71.05 / CUDA 13.2), "
            "TensorFlow 2.19.0 with pip CUDA 12.5 / cuDNN 9.3.",
            machine(
                zen3,
                nvidia("rtx-2080-super"),
                pip_cuda_for("2.19.0"),
                with_tensorflow("2.19.0", python="3.12.3"),
            ),
            "mixed_float16",
            "gpu",
            MIXED_ON_GPU,
        ),
        Profile(
            "rtx-5090-tf220",
            "GeForce RTX 5090 (thamada RTX5090: CC 12.0, driver 570.124.06 / CUDA 12.8) with TensorFlow "
            "2.20.0 from pip (CUDA 12.5 / cuDNN 9.3), Zen 3 desktop CPU.",
            machine(
                zen3, nvidia("rtx-5090"), pip_cuda_for("2.20.0"), with_tensorflow("2.20.0", python="3.12.3")
            ),
            "float32",
            "cpu",
            frozenset({"gpu-arch-unsupported-by-framework"}),
        ),
        Profile(
            "gtx-1660-ti-laptop-tf24",
            "The GTX 1660 Ti laptop of tensorflow#44191 (mixed_float16 2-4x slower than float32): Ubuntu "
            "20.04, TensorFlow 2.4.0 with CUDA 11.0. The facts give the GPU by name alone, so the "
            "knowledge table supplies CC 7.5 and the GTX 16 exception; the CPU is not in the report.",
            machine(
                {"gpus": [{"index": 0, "vendor": "nvidia", "name": "NVIDIA GeForce GTX 1660 Ti"}]},
                libraries("11.0", "8.0", "loader"),
                with_tensorflow("2.4.0", python="3.6.9"),
            ),
            "float32",
            "gpu",
            frozenset({"gpu-turing-without-tensor-cores"}),
        ),
        Profile(
            "gtx-1660-graphics-device-driver-418",
            "GeForce GTX 1660 as driver 418.43 reports it, 'Graphics Device' with CC 7.5 (telegraf "
            "capture, PCI device id 0x2184 at 43:00.0); no TensorFlow yet (none in the table runs on "
            "CUDA 10.1).",
            machine(
                zen3,
                nvidia("gtx-1660-graphics-device"),
                pci_nvidia(["0000:43:00.0"], "0x2184", driver="nvidia", nodes=True, display_class="0x030000"),
            ),
            "float32",
            "gpu",
            frozenset({"gpu-turing-without-tensor-cores", "tf-not-installed"}),
        ),
        Profile(
            "jetson-orin-nx-no-tensorflow",
            "Jetson Orin NX (JetPack 6.1, L4T R36.4.3): integrated 'Orin (nvgpu)', CC 8.7, driver 540.4.0 "
            "/ CUDA 12.6, no PCI GPU, memory not reported; TensorFlow not installed yet. No cpuinfo dump "
            "of the Cortex-A78AE was recorded, so only the architecture is known.",
            machine(
                {"cpu": {"arch": "aarch64"}}, nvidia("jetson-orin-nx"), libraries("12.6", "9.3", "loader")
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"tf-not-installed"},
        ),
        Profile(
            "windows-native-tf215-rtx-3080",
            "Native Windows (WDDM) with a GeForce RTX 3080 (telegraf capture, driver 536.40 / CUDA 12.2) "
            "and TensorFlow 2.15.0, whose Windows wheel is CPU-only; the Zen 3 dump stands in for the "
            "desktop CPU that py-cpuinfo would report.",
            machine(
                WINDOWS,
                zen3,
                nvidia("rtx-3080-windows"),
                with_tensorflow("2.15.0", cuda_build=False, python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"tf-windows-native-no-gpu"}),
        ),
        # ---------------------------------------------------------------- GPUs TensorFlow will not use
        Profile(
            "rtx-3090-x2-with-tensorflow-cpu",
            "2x RTX 3090 (thamada RTX3090, driver 560.35.03 / CUDA 12.6) with tensorflow-cpu 2.16.1.",
            machine(
                zen3,
                nvidia("rtx-3090-x2"),
                with_tensorflow("2.16.1", package="tensorflow-cpu", cuda_build=False, python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"tf-cpu-only-build"}),
        ),
        Profile(
            "t4-on-pci-no-driver",
            "A fresh T4 cloud VM before the driver is installed: the T4 (PCI 10de:1eb8 at 00:1e.0, as in "
            "the telegraf capture) has no kernel driver bound and NVML is not there; TensorFlow 2.16.1.",
            machine(
                cascade_lake,
                pci_nvidia(["0000:00:1e.0"], "0x1eb8", driver=None, nodes=False),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"gpu-driver-not-loaded"}),
            probes={"gpu": NVML_NOT_FOUND},
        ),
        Profile(
            "h100-host-container-without-gpus",
            "A docker container on the 8x H100 host started without --gpus: the PCI scan sees the 8 "
            "H100 (10de:2330, bus ids from thamada H100SXMx8) bound to nvidia but no /dev/nvidia* nodes "
            "and no NVML; the Sapphire Rapids CPU then decides.",
            machine(
                {"os": {"container": "docker"}},
                sapphire_rapids,
                pci_nvidia(
                    [f"0000:{bus}:00.0" for bus in H100_HGX_BUSES], "0x2330", driver="nvidia", nodes=False
                ),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"gpu-container-without-devices", "cpu-bf16-conditions", "output-float32"}),
            probes={"gpu": NVML_NOT_FOUND},
        ),
        Profile(
            "a100-tensorflow-without-cuda-libraries",
            "4x A100-SXM4-80GB (thamada) with `pip install tensorflow==2.16.1` but without [and-cuda]: "
            "the CUDA probe found no CUDA runtime or cuDNN anywhere.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4"),
                with_tensorflow("2.16.1", python="3.11.9"),
                # what the cuda probe records when it looked and found nothing
                {"cuda": {"version": None, "found": []}, "cudnn": {"version": None, "found": []}},
            ),
            "float32",
            "cpu",
            frozenset({"cuda-libraries-missing"}),
            probes={"cuda": {"status": "absent", "reason": "no CUDA runtime or cuDNN found"}},
        ),
        Profile(
            "a100-cudnn-8-under-tf218",
            "4x A100-SXM4-80GB (thamada) with TensorFlow 2.18.0 (built for cuDNN 9) installed without "
            "[and-cuda], using the system's CUDA 12.2 and cuDNN 8.9.7 from the loader path.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4"),
                libraries("12.2", "8.9.7", "loader"),
                with_tensorflow("2.18.0", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"cudnn-older-than-build"}),
        ),
        Profile(
            "h100-cudnn-9.1-under-tf218",
            "8x H100 (thamada H100SXMx8) with TensorFlow 2.18.0, compiled against cuDNN 9.3, loading a "
            "system cuDNN 9.1.0: XLA's cuda_dnn.cc refuses it ('CuDNN library needs to have matching "
            "major version and equal or higher minor version'), so every convolution fails.",
            machine(
                sapphire_rapids,
                nvidia("h100-sxm-x8"),
                libraries("12.5", "9.1.0", "loader"),
                with_tensorflow("2.18.0", python="3.11.9"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"cudnn-older-minor-than-build"},
        ),
        # ---------------------------------------------------------------- preferences and other frameworks
        Profile(
            "h100-prefer-float16",
            "H100 80GB HBM3 (nvidia_gpu_exporter capture, driver 590.48.01) with --prefer float16, "
            "TensorFlow 2.20.0.",
            machine(
                sapphire_rapids,
                nvidia("h100-80gb-hbm3"),
                pip_cuda_for("2.20.0"),
                with_tensorflow("2.20.0", python="3.12.3"),
            ),
            "mixed_float16",
            "gpu",
            BF16_ON_GPU,
            prefer="float16",
        ),
        Profile(
            "v100-prefer-bfloat16",
            "8x V100 (thamada V100_x8) with --prefer bfloat16: V100 has no bfloat16 Tensor Cores.",
            machine(
                broadwell,
                nvidia("v100-sxm2-16gb-x8"),
                pip_cuda_for("2.15.0"),
                with_tensorflow("2.15.0", python="3.10.12"),
            ),
            "mixed_float16",
            "gpu",
            MIXED_ON_GPU | {"prefer-bfloat16-unsupported"},
            prefer="bfloat16",
        ),
        Profile(
            "torch-cuda-a100",
            "PyTorch 2.5.1+cu124 on 4x A100-SXM4-80GB (thamada, driver 555.42.02 / CUDA 12.5).",
            machine(epyc_zen, nvidia("a100-sxm4-80gb-x4"), TORCH_CUDA),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH,
            framework="torch",
        ),
        Profile(
            "torch-cpu-build-with-rtx-3090",
            "PyTorch 2.5.1+cpu on the 2x RTX 3090 workstation (thamada, driver 560.35.03 / CUDA 12.6).",
            machine(zen3, nvidia("rtx-3090-x2"), TORCH_CPU),
            "float32",
            "cpu",
            frozenset({"torch-cpu-only-build"}),
            framework="torch",
        ),
        # ---------------------------------------------------------------- TPU VMs
        Profile(
            "tpu-v4-8-vm",
            "Cloud TPU v4-8 VM: 4 TPU v4 chips (PCI 1ae0:005e) and tensorflow-tpu 2.16.1; the host CPU's "
            "flags were not recorded.",
            machine(
                tpu_host,
                tpu("v4", 4, "0x005e"),
                with_tensorflow("2.16.1", package="tensorflow-tpu", cuda_build=False, python="3.10.12"),
            ),
            "mixed_bfloat16",
            "tpu",
            frozenset({"output-float32"}),
        ),
        Profile(
            "tpu-v5e-8-vm",
            "Cloud TPU v5litepod-8 VM: 8 TPU v5e chips (PCI 1ae0:0063) and tensorflow-tpu 2.16.1.",
            machine(
                tpu_host,
                tpu("v5e", 8, "0x0063"),
                with_tensorflow("2.16.1", package="tensorflow-tpu", cuda_build=False, python="3.10.12"),
            ),
            "mixed_bfloat16",
            "tpu",
            frozenset({"output-float32"}),
        ),
        # ---------------------------------------------------------------- CPUs without an accelerator
        Profile(
            "sapphire-rapids-8480plus-tf216",
            "Xeon Platinum 8480+ (AMX) without an accelerator, TensorFlow 2.16.1.",
            machine(sapphire_rapids, NO_PCI_ACCELERATOR, with_tensorflow("2.16.1", python="3.11.9")),
            "mixed_bfloat16",
            "cpu",
            frozenset({"cpu-bf16-conditions", "output-float32"}),
        ),
        Profile(
            "sapphire-rapids-class-dev-vm-onednn-off",
            "This project's 2-core Sapphire-Rapids-class dev VM (SPEC §3's measurements) with "
            "tensorflow-cpu 2.21.0 and TF_ENABLE_ONEDNN_OPTS=0 exported.",
            machine(
                cpu("intel-sapphirerapids-class-vm-hwcheck-dev"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.21.0", package="tensorflow-cpu", cuda_build=False, python="3.11.7"),
                {"environment": {"TF_ENABLE_ONEDNN_OPTS": "0"}},
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"cpu-bf16-conditions", "cpu-onednn-disabled", "output-float32"}),
        ),
        Profile(
            "sapphire-rapids-tf211-too-old-for-amx",
            "Xeon Platinum 8480+ with TensorFlow 2.11.0, which predates AMX support (2.12).",
            machine(sapphire_rapids, NO_PCI_ACCELERATOR, with_tensorflow("2.11.0", python="3.10.12")),
            "float32",
            "cpu",
            frozenset({"cpu-amx-needs-newer-tf"}),
        ),
        Profile(
            "sapphire-rapids-linux510-tf216",
            "Xeon Platinum 8480+ under Linux 5.10 (Debian 11's kernel, 5.10.0-28-amd64), which predates "
            "mainline AMX support (5.16): bfloat16 stays the advice, with a warning about the kernel.",
            machine(
                sapphire_rapids,
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.16.1", python="3.11.9"),
                {"os": {"release": "5.10.0-28-amd64"}},
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"cpu-amx-kernel-too-old", "cpu-bf16-conditions", "output-float32"}),
        ),
        Profile(
            "cascade-lake-8260m-tf216",
            "Xeon Platinum 8260M (AVX-512, VNNI, no bf16, no AMX), TensorFlow 2.16.1.",
            machine(cascade_lake, NO_PCI_ACCELERATOR, with_tensorflow("2.16.1", python="3.11.9")),
            "float32",
            "cpu",
            frozenset(),
        ),
        Profile(
            "skylake-sp-gold-6132-no-tensorflow",
            "Xeon Gold 6132 (Skylake-SP) server with no accelerator and no TensorFlow.",
            machine(cpu("intel-skylake-sp-xeon-gold-6132"), NO_PCI_ACCELERATOR),
            "float32",
            "cpu",
            frozenset({"tf-not-installed"}),
        ),
        Profile(
            "haswell-e5-2680v3-tf215",
            "Xeon E5-2680 v3 (Haswell: AVX2 and FMA), TensorFlow 2.15.0.",
            machine(
                cpu("intel-haswell-xeon-e5-2680v3"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.15.0", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset(),
        ),
        Profile(
            "ivy-bridge-e5-2650v2-tf216",
            "Xeon E5-2650 v2 (Ivy Bridge: AVX without AVX2/FMA), TensorFlow 2.16.1.",
            machine(
                cpu("intel-ivybridge-xeon-e5-2650v2"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"cpu-missing-avx2"}),
        ),
        Profile(
            "opteron-6136-k10-no-avx-tf216",
            "AMD Opteron 6136 (K10, no AVX) with TensorFlow 2.16.1 installed: import dies.",
            machine(
                cpu("amd-k10-opteron-6136-no-avx"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"cpu-missing-avx"}),
        ),
        Profile(
            "zen3-ryzen9-5950x-tf216",
            "Ryzen 9 5950X (Zen 3) desktop without a GPU, TensorFlow 2.16.1.",
            machine(zen3, NO_PCI_ACCELERATOR, with_tensorflow("2.16.1", python="3.11.9")),
            "float32",
            "cpu",
            frozenset(),
        ),
        Profile(
            "zen4-epyc-9654-tf216",
            "EPYC 9654 (Zen 4: AVX-512 BF16 but no AMX), TensorFlow 2.16.1: the evidence on bfloat16 is "
            "split (faster measured here, slower in TensorFlow's guide), so float32 and measure.",
            machine(
                cpu("amd-zen4-epyc-9654"), NO_PCI_ACCELERATOR, with_tensorflow("2.16.1", python="3.11.9")
            ),
            "float32",
            "cpu",
            frozenset({"cpu-bf16-measure"}),
        ),
        Profile(
            "zen4-epyc-9654-torch",
            "EPYC 9654 (Zen 4: AVX-512 BF16 but no AMX), PyTorch on the CPU: bfloat16 autocast measured "
            "1.89x faster than float32 on this project's Zen 4 VM (cpu_features.toml).",
            machine(cpu("amd-zen4-epyc-9654"), NO_PCI_ACCELERATOR, TORCH_CPU),
            "mixed_bfloat16",
            "cpu",
            frozenset(),
            framework="torch",
        ),
        Profile(
            "graviton2-neoverse-n1-tf216",
            "AWS Graviton2 (Neoverse N1, aarch64: no bf16), TensorFlow 2.16.1 (aarch64 wheel, no CUDA).",
            machine(
                cpu("arm-graviton2-neoverse-n1"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.16.1", cuda_build=False, python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset(),
        ),
        Profile(
            "graviton3-neoverse-v1-tf216",
            "AWS Graviton3 (Neoverse V1, aarch64 with bf16 and SVE), TensorFlow 2.16.1.",
            machine(
                cpu("arm-graviton3-neoverse-v1"),
                NO_PCI_ACCELERATOR,
                with_tensorflow("2.16.1", cuda_build=False, python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"cpu-arm-bf16-fpmath", "cpu-bf16-measure"}),
        ),
        # ---------------------------------------------------------------- what goes wrong on real hosts
        Profile(
            "opteron-6136-k10-no-avx-no-tensorflow",
            "The Opteron 6136 (K10, no AVX) before TensorFlow is installed: a pip wheel would die on import.",
            machine(
                cpu("amd-k10-opteron-6136-no-avx"), NO_PCI_ACCELERATOR, {"python": {"version": "3.11.9"}}
            ),
            "float32",
            "cpu",
            frozenset({"cpu-missing-avx-no-tensorflow", "tf-not-installed"}),
        ),
        Profile(
            "t4-driver-library-version-mismatch",
            "A T4 cloud VM right after a driver upgrade, before the reboot: the T4 (10de:1eb8 at 00:1e.0, "
            "as in the telegraf capture) is bound to nvidia with its /dev/nvidia* nodes, but NVML refuses "
            "with 'Driver/library version mismatch', so no GPU facts; TensorFlow 2.16.1. The GPU cannot be "
            "used until the reboot, so the Cascade Lake CPU (no AMX) decides: float32.",
            machine(
                cascade_lake,
                pci_nvidia(["0000:00:1e.0"], "0x1eb8", driver="nvidia", nodes=True),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "float32",
            "cpu",
            frozenset({"gpu-nvml-unavailable"}),
            probes={"gpu": {"status": "error", "reason": "NVML: Driver/library version mismatch"}},
        ),
        Profile(
            "h100-host-hung-driver-gpu-probe-timeout",
            "The 8x H100 host (PCI ids and buses from thamada H100SXMx8) with a hung driver: the GPU "
            "probe's NVML call never returns and is cut off by the deadline (SPEC §2), the devices and "
            "nodes are there. No GPU facts, so the Sapphire Rapids CPU (AMX) decides, and both the "
            "timeout and the unreachable GPUs are reported.",
            machine(
                sapphire_rapids,
                pci_nvidia(
                    [f"0000:{bus}:00.0" for bus in H100_HGX_BUSES], "0x2330", driver="nvidia", nodes=True
                ),
                with_tensorflow("2.16.1", python="3.11.9"),
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"probe-timeout", "gpu-nvml-unavailable", "cpu-bf16-conditions", "output-float32"}),
            probes={"gpu": {"status": "timeout", "reason": "no answer within 10 s"}},
        ),
        Profile(
            "pre-release-graphics-device-unknown-capability",
            "A pre-release board on an early driver: NVML names it 'Graphics Device' and does not report "
            "its compute capability, and its PCI id (0x2bff, a stand-in: pci.ids and hwcheck's table lack "
            "it, as they lack any board newer than the snapshot) names no model; driver 550.54.15 / CUDA "
            "12.4, TensorFlow 2.16.1 with its pip CUDA. Without the capability nothing says it has Tensor "
            "Cores: float32 on the GPU, with a warning asking for the capability.",
            machine(
                epyc_zen,
                {
                    "gpus": [
                        {
                            "index": 0,
                            "vendor": "nvidia",
                            "name": "Graphics Device",
                            "compute_capability": None,
                            "memory_mib": 49152,
                            "mig": False,
                            "pci_device_id": "0x2bff",
                        }
                    ],
                    "nvidia_driver": {"version": "550.54.15", "cuda": "12.4"},
                },
                with_tensorflow("2.16.1", python="3.11.9"),
                pip_cuda_for("2.16.1"),
            ),
            "float32",
            "gpu",
            frozenset({"gpu-unknown-model"}),
        ),
        Profile(
            "v100s-name-only-family-assumed",
            "A facts file naming a Tesla V100S-PCIE-32GB (the name as NVML prints it) without its compute "
            "capability; hwcheck's table has no cited row for the V100S, so the V100 family pattern places "
            "it as Volta (CC 7.0) and says so; driver 550.54.15 / CUDA 12.4, TensorFlow 2.16.1 with its pip "
            "CUDA (issue 19: a board the table lacks is placed by its family instead of falling to float32).",
            machine(
                epyc_zen,
                {
                    "gpus": [
                        {
                            "index": 0,
                            "vendor": "nvidia",
                            "name": "Tesla V100S-PCIE-32GB",
                            "compute_capability": None,
                            "memory_mib": 32768,
                            "mig": False,
                        }
                    ],
                    "nvidia_driver": {"version": "550.54.15", "cuda": "12.4"},
                },
                with_tensorflow("2.16.1", python="3.11.9"),
                pip_cuda_for("2.16.1"),
            ),
            "mixed_float16",
            "gpu",
            frozenset({"gpu-family-assumed", "gpu-tensor-core-shapes", "output-float32", "gpu-xla"}),
        ),
        Profile(
            "a100-x4-stale-cu11-wheels-tf216",
            "4x A100-SXM4-80GB (thamada, driver 555.42.02 / CUDA 12.5) upgraded from TensorFlow 2.14 to "
            "2.16.1 without [and-cuda]: the old nvidia-*-cu11 wheels (CUDA 11.8) are still installed and "
            "are what the CUDA probe names first, while TensorFlow loads the system CUDA 12.4 / cuDNN "
            "8.9.7 from the loader path, so the GPUs work, but on a CUDA it was not tested with.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4"),
                with_tensorflow("2.16.1", python="3.11.9"),
                # As the CUDA probe records them: the pip copy is its first choice, and `found`
                # lists every copy, so the CUDA 12 runtime TensorFlow loads is seen too.
                {
                    "cuda": {
                        "version": "11.8",
                        "source": "pip",
                        "found": [
                            {
                                "version": "12.4.131",
                                "source": "loader",
                                "path": "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.131",
                            },
                            {
                                "version": "11.8",
                                "source": "pip",
                                "path": "/opt/venv/lib/python3.11/site-packages",
                            },
                        ],
                    },
                    "cudnn": {
                        "version": "8.9.7",
                        "source": "loader",
                        "found": [
                            {
                                "version": "8.9.7",
                                "source": "loader",
                                "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
                            }
                        ],
                    },
                },
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"tf-untested-cuda"},
        ),
        # ---------------------------------------------------------------- every framework
        *_anchor_h100_profiles(sapphire_rapids),
        *_visibility_profiles(sapphire_rapids),
        Profile(
            "sapphire-rapids-8480plus-torch",
            "Xeon Platinum 8480+ (AMX) without an accelerator, PyTorch 2.5.1+cpu: bfloat16 autocast on the "
            "CPU (SPEC §3: 4.7 against 7.4 ms/step in float32 with PyTorch 2.13).",
            machine(sapphire_rapids, NO_PCI_ACCELERATOR, TORCH_CPU),
            "mixed_bfloat16",
            "cpu",
            frozenset(),
            framework="torch",
        ),
        Profile(
            "sapphire-rapids-8480plus-torch-cuda-build",
            "Xeon Platinum 8480+ (AMX) without a GPU, where a plain pip install torch put the CUDA build "
            "2.14.1+cu130 (what it installed on a 2-core Xeon VM without a GPU, 2026-11-28): bfloat16 "
            "on the CPU, and the CUDA build's libraries are never used there.",
            machine(
                sapphire_rapids,
                NO_PCI_ACCELERATOR,
                {"frameworks": {"torch": {"version": "2.14.1+cu130", "cuda": "13.0"}}},
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"cuda-build-without-gpu"}),
            framework="torch",
            probes={"gpu": {"status": "absent", "reason": "no NVIDIA GPU (NVML: driver not loaded)"}},
        ),
        Profile(
            "sapphire-rapids-8480plus-jax",
            "Xeon Platinum 8480+ (AMX) without an accelerator, JAX 0.4.35 (CPU): JAX compiles with XLA, "
            "where bfloat16 measured slower than float32 on this CPU class (SPEC §3), so float32.",
            machine(sapphire_rapids, NO_PCI_ACCELERATOR, {"frameworks": {"jax": {"version": "0.4.35"}}}),
            "float32",
            "cpu",
            frozenset(),
            framework="jax",
        ),
        Profile(
            "v100-torch-float16",
            "8x V100 (thamada V100_x8, driver 550.127.05 / CUDA 12.4) with PyTorch 2.5.1+cu124: float16 "
            "autocast with GradScaler.",
            machine(broadwell, nvidia("v100-sxm2-16gb-x8"), TORCH_CUDA),
            "mixed_float16",
            "gpu",
            frozenset({"torch-compile-no-bf16", "gpu-tensor-core-shapes"}),
            framework="torch",
        ),
        Profile(
            "v100-torch-cu102-cublas10",
            "8x V100 (thamada V100_x8, driver 550.127.05 / CUDA 12.4) with PyTorch 1.12.1+cu102, whose "
            "wheel bundles CUDA 10.2 and cuDNN 7.6.5: cuBLAS 10.2 uses Tensor Cores only for multiples of 8 "
            "(NVIDIA's Deep Learning Performance guide: relaxed from cuBLAS 11.0 and cuDNN 7.6.3).",
            machine(
                broadwell,
                nvidia("v100-sxm2-16gb-x8"),
                {"frameworks": {"torch": {"version": "1.12.1+cu102", "cuda": "10.2"}}},
                libraries("10.2.89", "7.6.5", "pip"),
            ),
            "mixed_float16",
            "gpu",
            # torch.amp.GradScaler('cuda') is a 2.3 API: 1.12 needs torch.cuda.amp.GradScaler().
            frozenset({"gpu-tensor-core-shapes-required", "framework-api-too-old"}),
            framework="torch",
        ),
        Profile(
            "a100-tf216-advised-for-jax",
            "4x A100-SXM4-80GB (thamada) with TensorFlow 2.16.1 only, advised for JAX, which is not "
            "installed: the hardware decides, with JAX's TF32 default.",
            machine(epyc_zen, nvidia("a100-sxm4-80gb-x4"), pip_cuda_for("2.16.1"), with_tensorflow("2.16.1")),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"framework-not-installed"},
            framework="jax",
        ),
        Profile(
            "zen3-conda-tf218-python313",
            "Ryzen 9 5950X (Zen 3) without a GPU, with a conda-forge TensorFlow 2.18.0 CPU build for "
            "Python 3.13: TensorFlow's own wheels for 2.18 were tested with Python 3.9-3.12 only.",
            machine(zen3, NO_PCI_ACCELERATOR, with_tensorflow("2.18.0", cuda_build=False, python="3.13.1")),
            "float32",
            "cpu",
            frozenset({"tf-untested-python"}),
        ),
        # ------------------------------------------------ framework, CUDA, driver compatibility
        Profile(
            "rtx-5090-torch26-cu124",
            "RTX 5090 (thamada, CC 12.0, driver 570.124.06 / CUDA 12.8) with torch 2.6.0+cu124, the wheel "
            "pip installed from the cu124 index: its architecture list stops at sm_90 (torch.toml), so "
            "the card needs the 2.7 cu128 wheel. CPU: the Ryzen 9 5950X dump.",
            machine(
                zen3,
                nvidia("rtx-5090"),
                {"frameworks": {"torch": {"version": "2.6.0+cu124", "cuda": "12.4"}}},
            ),
            "float32",
            "cpu",
            frozenset({"torch-no-kernel-image"}),
            framework="torch",
        ),
        Profile(
            "rtx-5090-torch-source-build-cuda124",
            "RTX 5090 (thamada, CC 12.0, driver 570.124.06 / CUDA 12.8) with PyTorch built from a "
            "source checkout of 2.5 against CUDA 12.4 (version 2.5.0a0, the form a source build without "
            "git metadata reports; torch/version.py cuda '12.4'): CUDA 12.4 cannot compile for CC 12.0, "
            "so the build has no cubin for the card and runs there only through PTX, if it ships any "
            "(its TORCH_CUDA_ARCH_LIST is unknown). CPU: the Ryzen 9 5950X dump.",
            machine(
                zen3, nvidia("rtx-5090"), {"frameworks": {"torch": {"version": "2.5.0a0", "cuda": "12.4"}}}
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"torch-kernels-only-through-ptx"},
            framework="torch",
        ),
        Profile(
            "a100-x4-tf216-only-cuda118-libraries",
            "4x A100-SXM4-80GB (thamada, driver 555.42.02) with TensorFlow 2.16.1 (built for CUDA 12.3) "
            "installed without [and-cuda] on a host whose only CUDA is an 11.8 toolkit with cuDNN 8.9.7 "
            "on the loader path: TensorFlow finds no libcudart.so.12 and trains on the CPU.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4"),
                with_tensorflow("2.16.1", python="3.11.9"),
                libraries("11.8", "8.9.7", "loader"),
            ),
            "float32",
            "cpu",
            frozenset({"cuda-major-mismatch"}),
        ),
        Profile(
            "v100-x8-tf216-cudnn9-only",
            "8x V100-SXM2-16GB (thamada) with TensorFlow 2.16.1 (cuDNN 8 build) on a system CUDA 12.4 "
            "whose cuDNN was upgraded to 9.3: libcudnn.so.8 is gone, so TensorFlow cannot load cuDNN.",
            machine(
                broadwell,
                nvidia("v100-sxm2-16gb-x8"),
                with_tensorflow("2.16.1", python="3.11.9"),
                libraries("12.4", "9.3.0", "loader"),
            ),
            "float32",
            "cpu",
            frozenset({"cudnn-major-newer-than-build"}),
        ),
        Profile(
            "h100-tf214-ptx-jit",
            "One H100 80GB HBM3 (thamada) with TensorFlow 2.14.0 and its pip CUDA 11.8: the 2.14 wheel "
            "carries sm_35-sm_75 and PTX compute_80 only, so TensorFlow JIT-compiles its kernels for CC "
            "9.0 at start-up (tensorflow/tensorflow#60739).",
            machine(
                sapphire_rapids,
                nvidia("h100-80gb-hbm3"),
                with_tensorflow("2.14.0", python="3.11.9"),
                pip_cuda_for("2.14.0"),
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU | {"tf-ptx-jit-startup"},
        ),
        Profile(
            "a100-x4-tf211-bf16-slow",
            "4x A100-SXM4-80GB (thamada) with TensorFlow 2.11.0 and CUDA 11.2 / cuDNN 8.1 on the loader "
            "path: the GPUs have bf16 Tensor Cores, but TensorFlow 2.11 has no GPU bfloat16 kernels for "
            "most ops (tensorflow/tensorflow#59050), so mixed_float16.",
            machine(
                epyc_zen,
                nvidia("a100-sxm4-80gb-x4"),
                with_tensorflow("2.11.0", python="3.10.12"),
                libraries("11.2", "8.1.1", "loader"),
            ),
            "mixed_float16",
            "gpu",
            MIXED_ON_GPU | {"gpu-tf32-default", "tf-gpu-bf16-slow-warning"},
        ),
        Profile(
            "k80-tf215-no-kernels",
            "A Tesla K80 (CC 3.7) as nvidia-smi shows it in jax-ml/jax#15961 (driver 470.182.03, the last "
            "branch for Kepler, CUDA 11.4), given TensorFlow 2.15.0: its wheel starts at sm_50, and the "
            "driver cannot run the CUDA 12.2 it was built for either.",
            machine(
                haswell_cpu,
                {
                    "gpus": [
                        {
                            "index": 0,
                            "vendor": "nvidia",
                            "name": "Tesla K80",
                            "compute_capability": "3.7",
                            "memory_mib": 11441,
                            "mig": False,
                        }
                    ],
                    "nvidia_driver": {"version": "470.182.03", "cuda": "11.4"},
                },
                with_tensorflow("2.15.0", python="3.10.12"),
                pip_cuda_for("2.15.0"),
            ),
            "float32",
            "cpu",
            frozenset({"tf-no-kernels-for-gpu", "driver-too-old-for-framework"}),
        ),
        Profile(
            "wsl2-rtx-3080-old-windows-driver-tf218",
            "The RTX 3080 of telegraf's Windows capture under WSL2, as a support ticket gives it: the "
            "Windows driver version only (472.12, a CUDA 11.4 driver), no CUDA figure, and TensorFlow "
            "2.18.0 with its pip CUDA 12.5. The driver must be updated on Windows.",
            machine(
                zen3,
                {"os": {"system": "Linux", "wsl": True}},
                nvidia("rtx-3080-windows", driver=("472.12", None)),
                with_tensorflow("2.18.0", python="3.11.9"),
                pip_cuda_for("2.18.0"),
            ),
            "float32",
            "cpu",
            frozenset({"wsl-driver-too-old", "driver-cuda-from-table"}),
        ),
        Profile(
            "t4-torch21-cu118-fp16-api-too-old",
            "A Tesla T4 (telegraf capture: driver 515.105.01, CUDA 11.7) with torch 2.1.0+cu118, which "
            "the driver runs through CUDA 11 minor version compatibility: float16 autocast with loss "
            "scaling, but torch.amp.GradScaler('cuda') arrived in 2.3 (meta-pytorch/tnt#751, "
            "ultralytics/ultralytics#14677), so the advice names torch.cuda.amp.GradScaler() for 2.1.",
            machine(
                cascade_lake,
                nvidia("tesla-t4"),
                {"frameworks": {"torch": {"version": "2.1.0+cu118", "cuda": "11.8"}}},
            ),
            "mixed_float16",
            "gpu",
            frozenset(
                {
                    "torch-compile-no-bf16",
                    "gpu-tensor-core-shapes",
                    "framework-api-too-old",
                    "driver-older-minor-version",
                }
            ),
            framework="torch",
        ),
        Profile(
            "t4-torch21-lightning19-precision-word-too-old",
            "The T4 of the profile above (telegraf capture, torch 2.1.0+cu118) trained through "
            'pytorch-lightning 1.9.5: float16 with loss scaling is Trainer(precision="16-mixed"), a '
            "word Lightning took only from 2.0 (its CHANGELOG, #16783); 1.9 says precision=16.",
            machine(
                cascade_lake,
                nvidia("tesla-t4"),
                {
                    "frameworks": {
                        "torch": {"version": "2.1.0+cu118", "cuda": "11.8"},
                        "lightning": {"version": "1.9.5", "package": "pytorch-lightning"},
                    }
                },
            ),
            "mixed_float16",
            "gpu",
            frozenset(
                {
                    "torch-compile-no-bf16",
                    "gpu-tensor-core-shapes",
                    "framework-api-too-old",
                    "driver-older-minor-version",
                }
            ),
            framework="lightning",
        ),
        Profile(
            "t4-torch21-hf-trainer-not-installed",
            "The same T4 with torch 2.1.0+cu118 but no transformers: advice for the Hugging Face "
            "Trainer is for the hardware, and says the trainer's release could not be checked.",
            machine(
                cascade_lake,
                nvidia("tesla-t4"),
                {"frameworks": {"torch": {"version": "2.1.0+cu118", "cuda": "11.8"}}},
            ),
            "mixed_float16",
            "gpu",
            frozenset(
                {
                    "torch-compile-no-bf16",
                    "gpu-tensor-core-shapes",
                    "trainer-not-installed",
                    "driver-older-minor-version",
                }
            ),
            framework="hf-trainer",
        ),
        Profile(
            "t4-jax-cpu-only-jaxlib",
            "A Tesla T4 (telegraf capture) with jax 0.4.35 and a CPU-only jaxlib from pip (no "
            "jax-cuda12-plugin): JAX falls back to the CPU.",
            machine(
                cascade_lake,
                nvidia("tesla-t4"),
                {
                    "frameworks": {
                        "jax": {"version": "0.4.35", "jaxlib": "0.4.35", "cuda_build": False, "cuda": None}
                    }
                },
            ),
            "float32",
            "cpu",
            frozenset({"jax-cpu-only-jaxlib"}),
            framework="jax",
        ),
        Profile(
            "k80-jax049-cuda11",
            "jax-ml/jax#15961: jax 0.4.9 with jaxlib 0.4.9+cuda11.cudnn86 and CUDA 11.8 pip wheels on a "
            "Tesla K80 (CC 3.7) with driver 470.182.03 (CUDA 11.4): jaxlib has had no Kepler kernels "
            "since 0.4.4, and it JIT-compiles with CUDA 11.8, which that driver cannot load.",
            machine(
                haswell_cpu,
                {
                    "gpus": [
                        {
                            "index": 0,
                            "vendor": "nvidia",
                            "name": "Tesla K80",
                            "compute_capability": "3.7",
                            "memory_mib": 11441,
                            "mig": False,
                        }
                    ],
                    "nvidia_driver": {"version": "470.182.03", "cuda": "11.4"},
                },
                libraries("11.8", "8.6.0", "pip"),
                {
                    "frameworks": {
                        "jax": {
                            "version": "0.4.9",
                            "jaxlib": "0.4.9+cuda11.cudnn86",
                            "cuda_build": True,
                            "cuda": "11",
                        }
                    }
                },
            ),
            "float32",
            "cpu",
            frozenset({"jax-gpu-below-minimum", "jax-driver-older-than-cuda"}),
            framework="jax",
        ),
        Profile(
            "rtx-3060-laptop-unlisted",
            "An RTX 3060 Laptop GPU (NVML name as the driver prints it; CC 8.6, the GA106 Ampere chip "
            "of the desktop RTX 3060 on NVIDIA's CUDA GPUs page) that rules/knowledge/nvidia.toml does not "
            "list, driver 535.104.05 (CUDA 12.2), PyTorch 2.5.1+cu121: Ampere features are assumed from "
            "the capability, and the warning says so.",
            machine(
                {
                    "gpus": [
                        {
                            "index": 0,
                            "vendor": "nvidia",
                            "name": "NVIDIA GeForce RTX 3060 Laptop GPU",
                            "compute_capability": "8.6",
                            "memory_mib": 6144,
                            "mig": False,
                        }
                    ],
                    "nvidia_driver": {"version": "535.104.05", "cuda": "12.2"},
                },
                {"frameworks": {"torch": {"version": "2.5.1+cu121", "cuda": "12.1"}}},
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"gpu-unlisted-model"},
            framework="torch",
        ),
    ]


def _anchor_h100_profiles(sapphire_rapids: dict[str, Any]) -> list[Profile]:
    """The H100 of shared/anchors/h100.md under each framework and Keras backend it can run.

    The Sapphire Rapids dump stands in for the anchor's unrecorded 16-core host CPU: with a
    usable GPU the CPU does not change the advice.
    """

    def anchor(*parts: dict[str, Any]) -> dict[str, Any]:
        return machine(
            sapphire_rapids,
            nvidia("h100-80gb-hbm3", driver=H100_ANCHOR_DRIVER),
            libraries("13.0.96", "9.19", "pip"),
            H100_ANCHOR_FRAMEWORKS,
            *parts,
        )

    keras_on = {"gpu-tensor-core-shapes", "output-float32"}
    return [
        *_measured_profiles(anchor),
        Profile(
            "h100-anchor-torch",
            "The measured H100 (anchors/h100.md) advised for PyTorch: bfloat16 autocast, TF32 allowed.",
            anchor(),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH,
            framework="torch",
        ),
        Profile(
            "h100-anchor-no-framework-named",
            "The measured H100 with torch, JAX and Keras 3 but no TensorFlow and no KERAS_BACKEND: "
            "hwcheck assumes PyTorch and says so.",
            anchor(),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"framework-assumed"},
            framework=None,
        ),
        Profile(
            "h100-2026-11-27-jax",
            "A real H100 recorded by hwcheck report (docs/measurements/h100-2026-11-27): torch 2.11 cu130 "
            "and jax 0.11.2 with its CUDA 13 plugin, which listed the GPU; the recorded cuSPARSE is known "
            "by its soname's major alone, so JAX's library floor is a warning, not an error.",
            json.loads((Path(__file__).parent / "fixtures/facts/h100-2026-11-27.json").read_text()),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"jax-cuda-library-version-unknown", "jax-preallocate-off"},
            framework="jax",
        ),
        Profile(
            "h100-anchor-jax",
            "The measured H100 advised for JAX: bfloat16 compute over float32 parameters.",
            anchor(),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"jax-cpu-only-jaxlib"},
            framework="jax",
        ),
        Profile(
            "h100-anchor-keras-on-jax",
            "The measured H100 with KERAS_BACKEND=jax: Keras 3 on JAX (8.45 float32 against 6.63 ms/step "
            "mixed_bfloat16 in the anchor's Keras table).",
            anchor({"environment": {"KERAS_BACKEND": "jax"}}),
            "mixed_bfloat16",
            "gpu",
            frozenset({"gpu-tf32-jax", *keras_on}) | {"jax-cpu-only-jaxlib"},
            framework="keras",
        ),
        Profile(
            "h100-anchor-keras-json-torch",
            "The measured H100 whose ~/.keras/keras.json names the torch backend: Keras 3 on PyTorch, "
            "which keeps float32 matmuls out of TF32 unless told.",
            anchor(
                {
                    "frameworks": {
                        "keras": {**H100_ANCHOR_FRAMEWORKS["frameworks"]["keras"], "config_backend": "torch"}
                    }
                }
            ),
            "mixed_bfloat16",
            "gpu",
            frozenset({"gpu-tf32-torch", *keras_on}),
            framework="keras",
        ),
        Profile(
            "h100-anchor-keras-default-backend-missing",
            "The measured H100 running Keras 3 with neither KERAS_BACKEND nor keras.json: Keras takes "
            "its default backend, TensorFlow, which is not installed there, so import keras fails.",
            anchor(),
            "mixed_bfloat16",
            "gpu",
            frozenset({"keras-backend-not-installed", "gpu-tf32-default", "gpu-xla", *keras_on}),
            framework="keras",
        ),
        Profile(
            "h100-anchor-keras-numpy-backend",
            "The measured H100 with KERAS_BACKEND=numpy: Keras' numpy backend cannot train.",
            anchor({"environment": {"KERAS_BACKEND": "numpy"}}),
            "mixed_bfloat16",
            "gpu",
            frozenset({"keras-backend-unsupported", *keras_on}),
            framework="keras",
        ),
        Profile(
            "h100-anchor-torch-with-bench",
            "The measured H100 advised for PyTorch, its report carrying the anchors' torch step times "
            "(tests/fixtures/bench/h100-anchors.json): bf16 was fastest on the MLP, transformer and "
            "ResNet-50, but float32 with TF32 beat it on the LSTM (15.3 against 17.0 ms/step).",
            anchor(H100_ANCHOR_BENCH),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"bench-disagrees", "bench-agrees"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-jax-with-torch-bench",
            "The measured H100 advised for JAX, its report carrying the anchors' torch step times: "
            "a torch measurement says nothing about JAX.",
            anchor(H100_ANCHOR_BENCH),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"bench-not-applicable"} | {"jax-cpu-only-jaxlib"},
            framework="jax",
        ),
        Profile(
            "h100-anchor-torch-upgraded-with-old-bench",
            "The measured H100 after an upgrade to torch 2.14, its report still carrying the anchors' "
            "torch 2.11 step times: they belong to torch 2.11, so they are listed as stale and not used.",
            anchor({"frameworks": {"torch": {"version": "2.14.0+cu130", "cuda": "13.0"}}}, H100_ANCHOR_BENCH),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"bench-stale"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-tf32-override-off",
            "The measured H100 with NVIDIA_TF32_OVERRIDE=0 (anchors/h100.md: it turns TF32 off for every "
            "framework), advised for PyTorch.",
            anchor({"environment": {"NVIDIA_TF32_OVERRIDE": "0"}}),
            "mixed_bfloat16",
            "gpu",
            frozenset({"gpu-tf32-override-off", "gpu-tensor-core-shapes"}),
            framework="torch",
        ),
    ]


MIXED_3090_2080_SUPER = "mixed-rtx-3090-rtx-2080-super"


def _visibility_profiles(sapphire_rapids: dict[str, Any]) -> list[Profile]:
    """Recorded machines under the environment that decides which GPUs the process sees.

    The H100 cases are the traps shared/anchors/h100.md records (torch saw 0 GPUs with
    CUDA_VISIBLE_DEVICES=-1, empty or 3); UUIDs are the recordings' own.
    """

    def h100(environment: dict[str, str]) -> dict[str, Any]:
        return machine(
            sapphire_rapids,
            nvidia("h100-80gb-hbm3", driver=H100_ANCHOR_DRIVER),
            libraries("13.0.96", "9.19", "pip"),
            H100_ANCHOR_FRAMEWORKS,
            {"environment": environment},
        )

    def mixed(environment: dict[str, str]) -> dict[str, Any]:
        return machine(
            sapphire_rapids, nvidia(MIXED_3090_2080_SUPER), TORCH_CUDA, {"environment": environment}
        )

    second_uuid = recording(MIXED_3090_2080_SUPER)["devices"][1]["uuid"]
    mig_uuid = recording("h100-80gb-hbm3-mig")["devices"][0]["mig_devices"][1]["uuid"]
    cpu_bf16_torch = frozenset({"cuda-visible-devices-hides-all"})
    return [
        *[
            Profile(
                f"h100-anchor-cuda-visible-devices-{label}",
                f"The measured H100 with CUDA_VISIBLE_DEVICES={value!r}: torch saw 0 GPUs there "
                "(anchors/h100.md), so training falls to the AMX CPU and hwcheck says why.",
                h100({"CUDA_VISIBLE_DEVICES": value}),
                "mixed_bfloat16",
                "cpu",
                cpu_bf16_torch,
                framework="torch",
            )
            for label, value in (("minus-one", "-1"), ("empty", ""), ("out-of-range", "3"))
        ],
        Profile(
            "h100-anchor-cuda-visible-devices-stops-at-minus-one",
            "The measured H100 with CUDA_VISIBLE_DEVICES=0,-1: CUDA reads GPU 0 and stops at -1.",
            h100({"CUDA_VISIBLE_DEVICES": "0,-1"}),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"cuda-visible-devices-subset", "cuda-visible-devices-bad-token"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-arch-list-without-hopper",
            "The measured H100 with TORCH_CUDA_ARCH_LIST='8.0;8.6' (an Ampere build recipe): "
            "extensions built now carry no sm_90 code.",
            h100({"TORCH_CUDA_ARCH_LIST": "8.0;8.6"}),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"torch-cuda-arch-list-missing"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-jax-platforms-cpu",
            "The measured H100 advised for JAX with JAX_PLATFORMS=cpu: JAX stays off the GPU.",
            h100({"JAX_PLATFORMS": "cpu"}),
            "float32",
            "cpu",
            frozenset({"jax-platforms-no-gpu"}) | {"jax-cpu-only-jaxlib"},
            framework="jax",
        ),
        Profile(
            "h100-anchor-jax-no-preallocation-low-fraction",
            "The measured H100 advised for JAX with XLA_PYTHON_CLIENT_PREALLOCATE=false and "
            "XLA_PYTHON_CLIENT_MEM_FRACTION=.3.",
            h100({"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".3"}),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"jax-preallocate-off", "jax-mem-fraction-low"} | {"jax-cpu-only-jaxlib"},
            framework="jax",
        ),
        Profile(
            "h100-anchor-jax-mem-fraction-percent",
            "The measured H100 advised for JAX with XLA_PYTHON_CLIENT_MEM_FRACTION=90 (a percentage "
            "where a fraction belongs).",
            h100({"XLA_PYTHON_CLIENT_MEM_FRACTION": "90"}),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_JAX | {"jax-mem-fraction-invalid"} | {"jax-cpu-only-jaxlib"},
            framework="jax",
        ),
        Profile(
            "mixed-3090-2080-super-second-gpu-by-uuid",
            "The mixed RTX 3090 + RTX 2080 SUPER with CUDA_VISIBLE_DEVICES=<the 2080 SUPER's UUID>: "
            "the advice is for the Turing card alone (float16, no mixed-generations warning).",
            mixed({"CUDA_VISIBLE_DEVICES": second_uuid}),
            "mixed_float16",
            "gpu",
            frozenset({"torch-compile-no-bf16", "cuda-visible-devices-subset", "gpu-tensor-core-shapes"}),
            framework="torch",
        ),
        Profile(
            "mixed-3090-2080-super-first-gpu-by-uuid-prefix",
            "The mixed RTX 3090 + RTX 2080 SUPER with CUDA_VISIBLE_DEVICES=GPU-4aba (a UUID prefix "
            "of the RTX 3090): bfloat16 on the Ampere card alone.",
            mixed({"CUDA_VISIBLE_DEVICES": "GPU-4aba"}),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"cuda-visible-devices-subset"},
            framework="torch",
        ),
        Profile(
            "mixed-3090-2080-super-index-default-order",
            "The mixed RTX 3090 + RTX 2080 SUPER with CUDA_VISIBLE_DEVICES=1 and no CUDA_DEVICE_ORDER: "
            "CUDA numbers fastest first, so index 1 may not be nvidia-smi's GPU 1.",
            mixed({"CUDA_VISIBLE_DEVICES": "1"}),
            "mixed_float16",
            "gpu",
            frozenset(
                {
                    "torch-compile-no-bf16",
                    "cuda-device-order-ambiguous",
                    "cuda-visible-devices-subset",
                    "gpu-tensor-core-shapes",
                }
            ),
            framework="torch",
        ),
        Profile(
            "h100-mig-one-mig-device",
            "The recorded H100 in MIG mode with CUDA_VISIBLE_DEVICES=<its 2g.20gb MIG device's UUID>.",
            machine(
                sapphire_rapids,
                nvidia("h100-80gb-hbm3-mig"),
                TORCH_CUDA,
                {"environment": {"CUDA_VISIBLE_DEVICES": mig_uuid}},
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"cuda-visible-devices-subset", "gpu-mig"},
            framework="torch",
        ),
        Profile(
            "v100x8-unknown-uuid",
            "The recorded eight V100s with CUDA_VISIBLE_DEVICES=GPU-0fff, which none of their "
            "recorded UUIDs begins with: CUDA shows no GPU.",
            machine(
                sapphire_rapids,
                nvidia("v100-sxm2-16gb-x8"),
                TORCH_CUDA,
                {"environment": {"CUDA_VISIBLE_DEVICES": "GPU-0fff"}},
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"cuda-visible-devices-hides-all"}),
            framework="torch",
        ),
        Profile(
            "h100x2-uuid-not-in-facts",
            "Two H100s, the second a repeat of the recorded board without a UUID, with "
            "CUDA_VISIBLE_DEVICES=GPU-0fff: the facts cannot say which GPU that is, so the advice "
            "stays about both.",
            machine(
                sapphire_rapids,
                nvidia("h100-80gb-hbm3", boards=2),
                TORCH_CUDA,
                {"environment": {"CUDA_VISIBLE_DEVICES": "GPU-0fff"}},
            ),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"cuda-visible-devices-unresolved"},
            framework="torch",
        ),
        Profile(
            "container-nvidia-visible-devices-void",
            "A Sapphire Rapids container started with NVIDIA_VISIBLE_DEVICES=void: NVML lists no GPU.",
            machine(
                sapphire_rapids,
                {"gpus": [], "nvidia_driver": {}},
                TORCH_CPU,
                {"environment": {"NVIDIA_VISIBLE_DEVICES": "void"}},
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"nvidia-visible-devices-none"}),
            framework="torch",
        ),
    ]


from vendor_profiles import vendor_profiles  # noqa: E402  (needs Profile, defined above)


def _measured_profiles(anchor: Any) -> list[Profile]:
    """Machines whose facts carry hwcheck doctor --measure's measurements (rules/policy/bench.toml)."""
    epyc = machine(
        # The machine cpu-torch-mlp.json was recorded on, as its block names it: AVX2, no AVX-512 BF16.
        {"cpu": {"arch": "x86_64", "vendor": "AuthenticAMD", "model": "AMD EPYC", "flags": ["avx", "avx2"]}},
        NO_PCI_ACCELERATOR,
        {"frameworks": {"torch": {"version": "2.13.0+cpu", "cuda": None}}},
    )
    return [
        Profile(
            "cpu-amx-vm-torch-measured",
            "This project's Sapphire-Rapids-class VM (tests/fixtures/facts/cpu-amx-torch213-jax0102.json) "
            "with its measured torch block (bf16 1.38x float32, clear): the measurement decides.",
            {**AMX_VM_FACTS, **measured(bench_fixture("cpu-amx-torch-float32-bf16"))},
            "mixed_bfloat16",
            "cpu",
            frozenset({"bench-agrees"}),
            framework="torch",
        ),
        Profile(
            "cpu-amx-vm-jax-measured-tie",
            "The same VM advised for JAX with its measured JAX block: float32 and bf16 tie within the "
            "noise, so the tables' float32 stands and measured-tie says why.",
            {**AMX_VM_FACTS, **measured(bench_fixture("cpu-amx-jax-float32-bf16"))},
            "float32",
            "cpu",
            frozenset({"measured-tie", "bench-agrees"}),
            framework="jax",
        ),
        Profile(
            "cpu-amx-vm-jax-with-torch-measurement",
            "The same VM advised for JAX, carrying only the torch measurement: another framework's "
            "measurement decides nothing.",
            {**AMX_VM_FACTS, **measured(bench_fixture("cpu-amx-torch-float32-bf16"))},
            "float32",
            "cpu",
            frozenset({"bench-not-applicable"}),
            framework="jax",
        ),
        Profile(
            "cpu-sapphire-rapids-8480-with-another-cpus-measurement",
            "A Xeon Platinum 8480+ carrying the VM's torch measurement: measured on another CPU, so "
            "stale, and the tables decide.",
            machine(
                cpu("intel-sapphirerapids-xeon-platinum-8480plus"),
                NO_PCI_ACCELERATOR,
                {"frameworks": {"torch": {"version": "2.13.0+cpu", "cuda": None}}},
                measured(bench_fixture("cpu-amx-torch-float32-bf16")),
            ),
            "mixed_bfloat16",
            "cpu",
            frozenset({"bench-stale"}),
            framework="torch",
        ),
        Profile(
            "cpu-epyc-avx2-torch-measured-float32",
            "The AVX2-only EPYC VM with its torch block (tests/fixtures/bench/cpu-torch-mlp.json): "
            "float32 3.78 ms/step against bf16 25.7, so the measured float32.",
            {**epyc, **measured(bench_fixture("cpu-torch-mlp"))},
            "float32",
            "cpu",
            frozenset({"bench-agrees"}),
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-measured-lstm",
            "The measured H100 with the anchors' LSTM as doctor --measure's measurement: float32 with "
            "TF32 (15.3 ms/step) beat bf16 (17.0), so float32 with TF32.",
            anchor(measured(bench_fixture("h100-anchors", "lstm"))),
            "float32",
            "gpu",
            frozenset({"bench-agrees", "gpu-tf32-torch"}),
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-measured-mlp",
            "The measured H100 with the anchors' MLP as doctor --measure's measurement: bf16 (2.45 "
            "ms/step) beat float16 (3.25) and TF32 (4.9).",
            anchor(measured(bench_fixture("h100-anchors", "mlp"))),
            "mixed_bfloat16",
            "gpu",
            BF16_ON_GPU_TORCH | {"bench-agrees"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-measured-resnet50-batch256",
            "The measured H100 with the anchors' ResNet-50 at batch 256 as doctor --measure's "
            "measurement: float16 with GradScaler (54 ms/step) beat bf16 (64).",
            anchor(measured(h100_resnet50_batch256())),
            "mixed_float16",
            "gpu",
            BF16_ON_GPU_TORCH | {"bench-agrees"},
            framework="torch",
        ),
        Profile(
            "h100-anchor-torch-measured-lstm-prefer-float16",
            "The LSTM measurement with --prefer float16: the user's preference stands, and "
            "bench-disagrees names the measurement that contradicts it.",
            anchor(measured(bench_fixture("h100-anchors", "lstm"))),
            "mixed_float16",
            "gpu",
            BF16_ON_GPU_TORCH | {"bench-disagrees"},
            framework="torch",
            prefer="float16",
        ),
    ]


PROFILES: list[Profile] = _profiles() + amd_profiles(Profile, machine, cpu) + vendor_profiles(Profile)
BY_NAME: dict[str, Profile] = {profile.name: profile for profile in PROFILES}
