"""Every vendor's devices in every command: hwcheck.devices on recorded machines.

Replays tests/fixtures/facts/ (sources in its README): the 8x MI300X node (its memory from
AMD's GPU specifications), the Apple M2 Max and the Jetson Orin NX (unified memory, size not
recorded), the Intel Data Center GPU Max 1100 (48 GB from Intel's overview), the TPU v5e VM
and the A100 node. fit counts the devices with their memory, config --framework deepspeed
plans ZeRO for that many, nfd labels them by GPU Feature Discovery's names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck import devices

FACTS = FIXTURES / "facts"
MI300X = FACTS / "mi300x-x8-torch251-rocm62.json"
APPLE = FACTS / "apple-m2max-macos152-tf217-metal110.json"
JETSON = FACTS / "jetson-orin-nx-jp62-torch260-cu126.json"
MAX1100 = FACTS / "max1100-torch27-xpu.json"
TPU = FACTS / "tpu-v5e-torch-xla-libtpu-mismatch.json"
A100 = FACTS / "a100-sxm4x4-tf216.json"
GIB = 2**30


def facts_of(path: Path, **environment: str) -> dict[str, Any]:
    facts = json.loads(path.read_text(encoding="utf-8"))
    if environment:
        facts["environment"] = {**(facts.get("environment") or {}), **environment}
    return facts


@pytest.mark.parametrize(
    ("path", "count", "vendor", "runtime", "memory", "unified", "architecture"),
    [
        (MI300X, 8, "amd", "rocm", 192 * GIB, False, "gfx942"),
        (APPLE, 1, "apple", "mps", None, True, None),
        (JETSON, 1, "nvidia", "cuda", None, True, "8.7"),
        (MAX1100, 1, "intel", "xpu", 48 * GIB, False, None),
        (TPU, 8, "google", "tpu", None, False, None),
        (A100, 4, "nvidia", "cuda", 81920 * 2**20, False, "8.0"),
    ],
)
def test_visible_devices_of_each_vendor(
    path: Path,
    count: int,
    vendor: str,
    runtime: str,
    memory: int | None,
    unified: bool,
    architecture: str | None,
) -> None:
    found = devices.visible(facts_of(path))
    assert len(found) == count
    assert {(d.vendor, d.runtime, d.memory_bytes, d.unified, d.architecture) for d in found} == {
        (vendor, runtime, memory, unified, architecture)
    }
    assert [d.number for d in found] == list(range(count))


def test_device_features_are_three_valued() -> None:
    (mi300x, *_) = devices.visible(facts_of(MI300X))
    assert (mi300x.float16, mi300x.bfloat16, mi300x.tf32, mi300x.fp8) == (True, True, False, True)
    (jetson,) = devices.visible(facts_of(JETSON))
    assert (jetson.bfloat16, jetson.tf32, jetson.fp8, jetson.family) == (True, True, False, "Ampere")
    # macOS 15.2 runs bfloat16 on Metal; TF32 is an NVIDIA mode.
    (apple,) = devices.visible(facts_of(APPLE))
    assert (apple.bfloat16, apple.tf32) == (True, False)
    # A TPU's float16 speed is not claimed either way.
    assert {d.float16 for d in devices.visible(facts_of(TPU))} == {None}


def test_visibility_variables_apply_per_vendor() -> None:
    assert len(devices.visible(facts_of(MI300X, HIP_VISIBLE_DEVICES="0,1"))) == 2
    assert len(devices.visible(facts_of(MI300X, ROCR_VISIBLE_DEVICES=""))) == 0
    assert len(devices.visible(facts_of(A100, CUDA_VISIBLE_DEVICES="3"))) == 1
    # JAX_PLATFORMS=cpu hides the GPUs from JAX only.
    hidden = facts_of(MI300X, JAX_PLATFORMS="cpu")
    assert (len(devices.visible(hidden, "jax")), len(devices.visible(hidden, "torch"))) == (0, 8)


def fit(path: Path) -> dict[str, Any]:
    result = run_hwcheck("fit", "--params", "7e9", "--facts", str(path), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_fit_counts_the_mi300x_node_with_its_memory() -> None:
    document = fit(MI300X)
    assert document["plan"]["gpus"] == 8
    assert document["device_memory"] == 192 * GIB
    assert document["device"] == "AMD Instinct MI300X; 8 visible to this process"
    text = run_hwcheck("fit", "--params", "7e9", "--facts", str(MI300X)).stdout
    assert "GPU memory: 192.00 GiB per GPU (AMD Instinct MI300X; 8 visible to this process)" in text
    assert "no GPU visible" not in text


@pytest.mark.parametrize(("path", "name"), [(APPLE, "Apple M2 Max"), (JETSON, "Orin (nvgpu)")])
def test_fit_says_unified_memory_is_shared_and_its_share_unknown(path: Path, name: str) -> None:
    document = fit(path)
    assert document["plan"]["gpus"] == 1
    assert document["device_memory"] is None  # the facts recorded no memory size
    assert document["device"] == (
        f"{name}; 1 visible to this process; unified memory: the total shared with the CPU, "
        "the GPU's share unknown"
    )


def test_fit_counts_the_intel_gpu_with_its_memory() -> None:
    document = fit(MAX1100)
    assert (document["plan"]["gpus"], document["device_memory"]) == (1, 48 * GIB)


def test_config_plans_zero_for_every_visible_mi300x(tmp_path: Path) -> None:
    """30 B parameters: ZeRO-1 across eight 192 GiB GPUs; one GPU alone needs the optimizer offloaded."""
    script = tmp_path / "train.py"
    args = ("config", "--framework", "deepspeed", "--params", "30e9", "-o", str(script))
    result = run_hwcheck(*args, "--facts", str(MI300X))
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "train.deepspeed.json").read_text(encoding="utf-8"))
    assert config["zero_optimization"]["stage"] == 1
    assert "offload_optimizer" not in config["zero_optimization"]
    one = tmp_path / "one.json"
    one.write_text(json.dumps(facts_of(MI300X, HIP_VISIBLE_DEVICES="0")), encoding="utf-8")
    alone = run_hwcheck(*args[:-1], str(tmp_path / "alone.py"), "--facts", str(one))
    assert alone.returncode == 0, alone.stderr
    config = json.loads((tmp_path / "alone.deepspeed.json").read_text(encoding="utf-8"))
    assert config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def nfd(path: Path) -> dict[str, str]:
    result = run_hwcheck("nfd", "--facts", str(path), "-o", "-")
    assert result.returncode in (0, 1), result.stderr  # 1: the advice has an error finding
    prefix = "feature.node.kubernetes.io/hwcheck-"
    return dict(
        line.removeprefix(prefix).split("=", 1)
        for line in result.stdout.splitlines()
        if line.startswith(prefix)
    )


def test_nfd_labels_the_mi300x_node_by_gfd_and_amd_labeller_names() -> None:
    labels = nfd(MI300X)
    assert {key: labels[key] for key in labels if key.startswith(("gpu.", "amd-gpu."))} == {
        "gpu.count": "8",
        "gpu.product": "AMD-Instinct-MI300X",
        "gpu.memory": "196608",
        "gpu.family": "cdna3",
        # Every vendor's precision labels: MI300X matrix cores run bfloat16 and FP8 (amd.toml).
        "gpu.bf16": "true",
        "gpu.fp8": "true",
        "amd-gpu.device-id": "74a1",
        "amd-gpu.vram": "192G",
        "amd-gpu.product-name": "AMD-Instinct-MI300X",
    }


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (APPLE, {"gpu.count": "1", "gpu.product": "Apple-M2-Max", "gpu.bf16": "true", "gpu.fp8": "false"}),
        (
            MAX1100,
            {
                "gpu.count": "1",
                "gpu.product": "Intel-R-Data-Center-GPU-Max-1100",
                "gpu.memory": "49152",
                "gpu.family": "xe-hpc",
                "gpu.bf16": "true",  # XMX engines
                "gpu.fp8": "false",  # no FP8 type in PVC's XMX (intel.toml)
            },
        ),
    ],
)
def test_nfd_labels_apple_and_intel_gpus(path: Path, expected: dict[str, str]) -> None:
    labels = nfd(path)
    assert {key: labels[key] for key in labels if key.startswith("gpu.")} == expected


def test_nfd_labels_the_jetson_gpu() -> None:
    """The integrated GPU the Tegra probe found is labelled (it was a crash: NVML lists no GPU)."""
    labels = nfd(JETSON)
    assert (labels["gpu.count"], labels["gpu.product"], labels["gpu.family"]) == ("1", "Orin-nvgpu", "ampere")
    assert "gpu.memory" not in labels  # unified memory of a size the facts did not record


def test_nfd_keeps_nvidia_labels_and_adds_gfd_product() -> None:
    labels = nfd(A100)
    assert (labels["gpu.count"], labels["gpu.product"], labels["gpu.memory"]) == (
        "4",
        "NVIDIA-A100-SXM4-80GB",
        "81920",
    )
    assert "gpu.model" not in labels  # one name per fact: GFD's gpu.product


def test_nfd_gives_tpu_chips_no_gpu_labels() -> None:
    labels = nfd(TPU)
    assert (labels["tpu"], labels["tpu.type"]) == ("true", "v5e")
    assert not [key for key in labels if key.startswith("gpu.")]


def test_a_jetsons_gpu_shares_the_memory_the_facts_record() -> None:
    """A Jetson's GPU allocates from the SoC's memory: its Device holds that total, marked unified."""
    facts = facts_of(JETSON)
    facts["memory"] = {"total_bytes": 16 * GIB, "available_bytes": 12 * GIB}
    (jetson,) = devices.visible(facts)
    assert (jetson.memory_bytes, jetson.unified) == (16 * GIB, True)


def test_accelerate_config_launches_one_process_per_visible_mi300x(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    result = run_hwcheck("config", "--framework", "accelerate", "--facts", str(MI300X), "-o", str(script))
    assert result.returncode == 0, result.stderr
    assert "num_processes: 8" in (tmp_path / "train.accelerate.yaml").read_text(encoding="utf-8").splitlines()
