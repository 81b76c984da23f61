"""NVIDIA Jetson (Tegra): the probe over replayed device-tree and L4T files, and what the rules make
of a Jetson: its GPU counted, its driver's CUDA from L4T, PyPI's SBSA CUDA builds before JetPack 7."""

from __future__ import annotations

from pathlib import Path

from hwcheck import recommend_policy
from hwcheck.facts import validate_facts
from hwcheck.probes.nvidia import tegra

# The first line of /etc/nv_tegra_release of a Jetson Orin NX 16GB under JetPack 6.2 (L4T 36.4.3), as
# `cat /etc/nv_tegra_release` printed it in public issue reports, and the root compatible of an Orin NX
# device tree (Linux arch/arm64/boot/dts/nvidia/tegra234-p3768-0000+p3767-0000.dts).
ORIN_RELEASE = (
    "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
    "DATE: Wed Jan  8 01:49:37 UTC 2025\n"
)
ORIN_COMPATIBLE = b"nvidia,p3768-0000+p3767-0000\0nvidia,p3767-0000\0nvidia,tegra234\0"


def _root(tmp_path: Path, compatible: bytes | None, release: str | None, module: str | None = None) -> Path:
    if compatible is not None:
        (tmp_path / "proc/device-tree").mkdir(parents=True)
        (tmp_path / "proc/device-tree/compatible").write_bytes(compatible)
    if release is not None:
        (tmp_path / "etc").mkdir()
        (tmp_path / "etc/nv_tegra_release").write_text(release, encoding="ascii")
    if module:
        (tmp_path / "sys/module" / module).mkdir(parents=True)
    return tmp_path


def test_an_orin_is_read_from_its_device_tree_and_l4t_release(tmp_path):
    result = tegra.probe(root=_root(tmp_path, ORIN_COMPATIBLE, ORIN_RELEASE, "nvgpu"))
    assert result.status == "ok"
    assert result.facts["tegra"] == {
        "soc": "tegra234",
        "family": "Jetson Orin (Tegra234)",
        "compute_capability": "8.7",
        "gpu_name": "Orin (nvgpu)",
        "l4t": "36.4.3",
        "gpu_driver": "nvgpu",
    }
    validate_facts({"schema_version": 1, **result.facts}, "orin")


def test_a_thor_without_a_release_file_has_an_unknown_l4t(tmp_path):
    result = tegra.probe(
        root=_root(tmp_path, b"nvidia,p3971-0080+p3834-0008\0nvidia,tegra264\0", None, "nvidia")
    )
    facts = result.facts["tegra"]
    assert (facts["compute_capability"], facts["l4t"], facts["gpu_driver"]) == ("11.0", None, "nvidia")


def test_a_machine_that_is_no_jetson_is_absent(tmp_path):
    assert (
        tegra.probe(root=_root(tmp_path, b"raspberrypi,5-model-b\0brcm,bcm2712\0", None)).status == "absent"
    )
    assert tegra.probe(root=tmp_path / "nothing").status == "absent"


def _jetson(l4t: str | None, **frameworks: dict) -> dict:
    return {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "aarch64"},
        "cpu": {"arch": "aarch64", "flags": ["asimd"]},
        "tegra": {
            "soc": "tegra234",
            "family": "Jetson Orin (Tegra234)",
            "compute_capability": "8.7",
            "gpu_name": "Orin (nvgpu)",
            "l4t": l4t,
        },
        "frameworks": frameworks,
    }


def _findings(facts: dict, framework: str) -> dict[str, tuple[str, str]]:
    return {f.id: (f.severity, f.message) for f in recommend_policy(facts, framework=framework).findings}


def test_a_jetpack_torch_on_an_orin_trains_bf16_on_its_gpu():
    facts = _jetson("36.4.3", torch={"version": "2.5.0a0+872d972e41.nv24.08", "cuda": "12.6"})
    recommendation = recommend_policy(facts, framework="torch")
    assert (recommendation.policy, recommendation.device) == ("mixed_bfloat16", "gpu")
    found = _findings(facts, "torch")
    assert not [i for i, (severity, _) in found.items() if severity == "error"]
    assert "CUDA 12.6" in found["tegra-driver-cuda-from-l4t"][1]


def _jax(version: str, plugin: str, cuda: str) -> dict:
    return {"version": version, "jaxlib": version, "cuda_build": True, "plugin": plugin, "cuda": cuda}


def test_pypi_jax_on_an_orin_is_an_error_never_bf16_on_the_gpu():
    # jax-ml/jax#40487: jaxlib 0.11.1's aarch64 CUDA 12 plugin carries sm_80 but no sm_87, and a Jetson
    # runs no cubin of another minor (jax-ml/jax#40492 measured sm_80 failing, sm_87 running on Orin).
    recommendation = recommend_policy(
        _jetson("36.4.3", jax=_jax("0.11.1", "jax-cuda12-plugin", "12")), framework="jax"
    )
    assert recommendation.device == "cpu"
    [error] = [f for f in recommendation.findings if f.severity == "error"]
    assert "Orin (nvgpu)" in error.message and "sm_80" in error.message


def test_pypi_jax_with_a_thor_cubin_runs_on_a_thor():
    facts = _jetson("38.2.0", jax=_jax("0.10.2", "jax-cuda13-plugin", "13"))
    facts["tegra"].update(soc="tegra264", family="Jetson Thor (Tegra264)", compute_capability="11.0")
    facts["tegra"].pop("gpu_name")
    recommendation = recommend_policy(facts, framework="jax")
    assert recommendation.device == "gpu"
    assert not [f for f in recommendation.findings if f.severity == "error"]


def test_an_unknown_l4t_is_a_warning_that_says_what_to_run_not_an_error():
    found = _findings(_jetson(None, torch={"version": "2.5.0a0+872d972e41.nv24.08", "cuda": "12.6"}), "torch")
    assert found["tegra-l4t-unknown"][0] == "warning"
    assert not [i for i, (severity, _) in found.items() if severity == "error"]


def test_a_thor_under_a_cuda_13_torch_gets_no_kernel_or_driver_error():
    # x86 cu130 wheels carry sm_100 and sm_120, nothing for 11.0; the aarch64 builds carry their own.
    facts = _jetson("38.2.0", torch={"version": "2.9.1+cu130", "cuda": "13.0"})
    facts["tegra"].update(soc="tegra264", family="Jetson Thor (Tegra264)", compute_capability="11.0")
    facts["tegra"].pop("gpu_name")
    found = _findings(facts, "torch")
    assert not [i for i, (severity, _) in found.items() if severity == "error"], found
    assert "torch-kernels-only-through-ptx" in found  # unknown, said so


def test_a_cuda_13_torch_on_jetpack_6_needs_a_newer_driver():
    facts = _jetson("36.4.3", torch={"version": "2.9.1+cu130", "cuda": "13.0"})
    found = _findings(facts, "torch")
    assert found["driver-too-old-for-framework"][0] == "error"


def test_a_cpu_torch_on_a_jetson_or_a_grace_is_told_where_the_cuda_builds_are():
    jetson = _jetson("36.4.3", torch={"version": "2.7.1+cpu", "cuda": None})
    [finding] = [
        f for f in recommend_policy(jetson, framework="torch").findings if f.id == "torch-cpu-only-build"
    ]
    assert "JetPack 6.1" in finding.remedy and "install-pytorch-jetson-platform" in finding.remedy
    grace = {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "aarch64"},
        "cpu": {"arch": "aarch64"},
        "gpus": [{"index": 0, "vendor": "nvidia", "name": "NVIDIA GH200 480GB"}],
        "nvidia_driver": {"version": "550.54.15", "cuda": "12.4"},
        "frameworks": {"torch": {"version": "2.2.2", "cuda": None}},
    }
    [finding] = [
        f for f in recommend_policy(grace, framework="torch").findings if f.id == "torch-cpu-only-build"
    ]
    assert "--index-url https://download.pytorch.org/whl/cu126" in finding.remedy


def test_inventory_counts_the_jetsons_gpu_in_its_hardware_class():
    from hwcheck.inventory.classes import hardware_class

    orin = hardware_class(_jetson("36.4.3"))
    assert (orin.gpu_count, orin.gpu_text()) == (1, "1× Orin (nvgpu)")
