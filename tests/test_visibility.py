"""The GPUs the process will see: CUDA_VISIBLE_DEVICES and its kin, resolved once for every consumer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.nvml import FakeNvml, recording
from profiles import BY_NAME, MIXED_3090_2080_SUPER, machine, nvidia

from conftest import run_hwcheck
from hwcheck.devices.cuda_visibility import arch_list_missing, resolve
from hwcheck.emit.machine import precision_features
from hwcheck.inventory.nfd import node_labels
from hwcheck.probes import environment
from hwcheck.probes.nvidia import gpu as gpu_probe
from hwcheck.recommendation import recommend

MIXED = recording(MIXED_3090_2080_SUPER)
RTX_3090_UUID = MIXED["devices"][0]["uuid"]
RTX_2080_SUPER_UUID = MIXED["devices"][1]["uuid"]
V100_UUIDS = [device["uuid"] for device in recording("v100-sxm2-16gb-x8")["devices"]]
H100_MIG = recording("h100-80gb-hbm3-mig")["devices"][0]


def with_env(facts: dict[str, Any], **variables: str) -> dict[str, Any]:
    """The facts with an `environment` block holding `variables`."""
    return {**facts, "environment": variables}


def visible_names(facts: dict[str, Any], backend: str | None = None) -> list[str]:
    return [gpu["name"] for gpu in resolve(facts, backend).gpus]


def visible_uuids(facts: dict[str, Any]) -> list[str]:
    return [gpu["uuid"] for gpu in resolve(facts).gpus]


@pytest.fixture(scope="module")
def mixed() -> dict[str, Any]:
    return machine(nvidia(MIXED_3090_2080_SUPER))


@pytest.fixture(scope="module")
def v100x8() -> dict[str, Any]:
    return machine(nvidia("v100-sxm2-16gb-x8"))


@pytest.fixture(scope="module")
def h100_mig() -> dict[str, Any]:
    return machine(nvidia("h100-80gb-hbm3-mig"))


# --- the parser, against CUDA's documented rules ------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected", "stopped_at"),
    [
        (None, list(range(8)), None),  # unset: every GPU
        ("", [], ""),  # empty: none
        ("-1", [], "-1"),
        ("0,2,-1,1", [0, 2], "-1"),  # the Programming Guide's own example
        ("2,1", [2, 1], None),  # enumerated in the order given
        (" 3 , 5 ", [3, 5], None),  # spaces around identifiers
        ("7,8", [7], "8"),  # out of range stops there
        ("12", [], "12"),
        ("1,abc,2", [1], "abc"),  # a bad token hides itself and everything after it
        ("1gpu", [1], None),  # a strtoul-style read, as PyTorch's mirror of the driver does
        ("0,0", [], "0"),  # a repeated identifier leaves no GPU
        ("1,,2", [1], ""),
    ],
)
def test_index_values(v100x8, value, expected, stopped_at):
    facts = v100x8 if value is None else with_env(v100x8, CUDA_VISIBLE_DEVICES=value)
    seen = resolve(facts)
    assert visible_uuids(facts) == [V100_UUIDS[i] for i in expected]
    assert seen.stopped_at == stopped_at
    assert len(seen.physical) == 8


def test_uuid_values(v100x8, mixed):
    # A unique prefix names a GPU; the order is the order given.
    value = f"{V100_UUIDS[5][:12]},{V100_UUIDS[2]}"
    assert visible_uuids(with_env(v100x8, CUDA_VISIBLE_DEVICES=value)) == [V100_UUIDS[5], V100_UUIDS[2]]
    assert visible_names(with_env(mixed, CUDA_VISIBLE_DEVICES=RTX_2080_SUPER_UUID)) == [
        "NVIDIA GeForce RTX 2080 SUPER"
    ]
    # UUIDs and indices may be mixed; naming the same GPU twice leaves none.
    assert visible_uuids(with_env(v100x8, CUDA_VISIBLE_DEVICES=f"1,{V100_UUIDS[3]}")) == [
        V100_UUIDS[1],
        V100_UUIDS[3],
    ]
    repeated = resolve(with_env(v100x8, CUDA_VISIBLE_DEVICES=f"1,{V100_UUIDS[1]}"))
    assert repeated.gpus == () and repeated.repeated


def test_ambiguous_and_unknown_uuids_stop_parsing(v100x8):
    # Two of the eight recorded V100 UUIDs begin with GPU-0 (GPU-0eece41c..., GPU-0af026bd...).
    assert sum(uuid.startswith("GPU-0") for uuid in V100_UUIDS) == 2
    ambiguous = resolve(with_env(v100x8, CUDA_VISIBLE_DEVICES="3,GPU-0,4"))
    assert [gpu["uuid"] for gpu in ambiguous.gpus] == [V100_UUIDS[3]]
    assert "ambiguous" in ambiguous.stop_reason and ambiguous.ignored == ("GPU-0", "4")
    unknown = resolve(with_env(v100x8, CUDA_VISIBLE_DEVICES="GPU-ffff"))
    assert unknown.gpus == () and "matches no GPU UUID" in unknown.stop_reason and not unknown.unresolved


def test_uuid_the_facts_cannot_check_leaves_every_gpu():
    facts = with_env(machine(nvidia("h100-80gb-hbm3", boards=2)), CUDA_VISIBLE_DEVICES="GPU-ffff")
    seen = resolve(facts)
    assert seen.unresolved and len(seen.gpus) == 2


def test_mig_device_is_visible_with_its_parents_capability(h100_mig):
    target = H100_MIG["mig_devices"][1]
    seen = resolve(with_env(h100_mig, CUDA_VISIBLE_DEVICES=target["uuid"]))
    (device,) = seen.gpus
    assert device["compute_capability"] == "9.0"
    assert device["memory_mib"] == target["memory_total_mib"] == 20096
    assert device["mig_profile"] == "2g.20gb" and device["mig"]
    # The CUDA 11.0 form names the parent GPU, the GPU instance and the compute instance.
    legacy = f"MIG-{H100_MIG['uuid']}/{target['gpu_instance_id']}/{target['compute_instance_id']}"
    assert [g["uuid"] for g in resolve(with_env(h100_mig, CUDA_VISIBLE_DEVICES=legacy)).gpus] == [
        target["uuid"]
    ]
    # Every recorded MIG UUID of that capture begins MIG-0000000: ambiguous.
    assert resolve(with_env(h100_mig, CUDA_VISIBLE_DEVICES="MIG-0000000")).gpus == ()


def test_mixed_machine_indices_are_ambiguous_unless_pci_order(mixed, v100x8):
    assert resolve(with_env(mixed, CUDA_VISIBLE_DEVICES="1")).order_ambiguous
    assert not resolve(
        with_env(mixed, CUDA_VISIBLE_DEVICES="1", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    ).order_ambiguous
    assert not resolve(with_env(mixed, CUDA_VISIBLE_DEVICES=RTX_3090_UUID)).order_ambiguous
    assert not resolve(with_env(v100x8, CUDA_VISIBLE_DEVICES="1")).order_ambiguous  # one model
    # Resolved in nvidia-smi's (PCI) order either way.
    assert visible_names(with_env(mixed, CUDA_VISIBLE_DEVICES="1")) == ["NVIDIA GeForce RTX 2080 SUPER"]


def test_jax_platforms_hides_the_gpus_from_jax_only(mixed):
    facts = with_env(mixed, JAX_PLATFORMS="cpu")
    assert visible_names(facts, "jax") == []
    assert resolve(facts, "jax").variable == "JAX_PLATFORMS"
    assert len(visible_names(facts, "torch")) == 2
    assert len(visible_names(with_env(mixed, JAX_PLATFORMS="cuda,cpu"), "jax")) == 2


def test_nvidia_visible_devices_is_recorded_not_applied(mixed):
    seen = resolve(with_env(mixed, NVIDIA_VISIBLE_DEVICES="0"))
    assert seen.container_devices == "0" and len(seen.gpus) == 2


@pytest.mark.parametrize(
    ("arch_list", "capabilities", "missing"),
    [
        ("8.0;8.6", ["8.0", "9.0"], ["9.0"]),
        ("8.0 9.0", ["8.0", "9.0"], []),
        ("8.0+PTX", ["8.6", "9.0"], []),  # PTX is compiled for any newer GPU
        ("9.0a", ["8.0", "9.0"], ["8.0"]),  # sm_90a runs on 9.0 only
        ("7.5;8.6+PTX", ["8.0", "8.6", "9.0"], ["8.0"]),  # PTX never runs on an older GPU
    ],
)
def test_torch_cuda_arch_list(arch_list, capabilities, missing):
    assert arch_list_missing(arch_list, capabilities) == missing


# --- the Done-when cases, through `hwcheck doctor --json --facts` -------------------------


def doctor_json(tmp_path: Path, facts: dict[str, Any], *extra: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck("doctor", "--json", "--facts", str(path), *extra)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.parametrize("value", ["-1", "", "3"])
def test_h100_anchor_hidden_gpu_is_not_bf16_on_the_gpu(tmp_path, value):
    facts = with_env(BY_NAME["h100-anchor-torch"].facts, CUDA_VISIBLE_DEVICES=value)
    status, report = doctor_json(tmp_path, facts, "--framework", "torch")
    recommendation = report["recommendation"]
    assert recommendation["device"] == "cpu"
    (error,) = [f for f in recommendation["findings"] if f["severity"] == "error"]
    assert error["id"] == "cuda-visible-devices-hides-all"
    assert f"CUDA_VISIBLE_DEVICES='{value}'" in error["message"]
    assert "unset CUDA_VISIBLE_DEVICES" in error["remedy"]
    assert H100_UUID in error["remedy"]  # the identifiers the user can list
    assert status == 1
    assert len(report["facts"]["gpus"]) == 1  # the facts stay what was found


H100_UUID = recording("h100-80gb-hbm3")["devices"][0]["uuid"]


@pytest.mark.parametrize(
    ("uuid", "policy", "weakest"),
    [
        (RTX_2080_SUPER_UUID, "mixed_float16", "RTX 2080 SUPER"),
        (RTX_3090_UUID[:8], "mixed_bfloat16", "RTX 3090"),
    ],
)
def test_one_gpu_of_a_mixed_machine_by_uuid(tmp_path, mixed, uuid, policy, weakest):
    facts = with_env(BY_NAME["mixed-3090-2080-super-second-gpu-by-uuid"].facts, CUDA_VISIBLE_DEVICES=uuid)
    status, report = doctor_json(tmp_path, facts, "--framework", "torch")
    recommendation = report["recommendation"]
    ids = {finding["id"] for finding in recommendation["findings"]}
    assert recommendation["policy"] == policy and recommendation["device"] == "gpu"
    assert "gpu-mixed-generations" not in ids  # one GPU is visible, so no mix
    (subset,) = [f for f in recommendation["findings"] if f["id"] == "cuda-visible-devices-subset"]
    assert f"cuda:0 = NVIDIA GeForce {weakest}" in subset["message"]
    assert status == 0
    assert len(report["facts"]["gpus"]) == 2


def test_doctor_text_shows_the_visible_gpus_and_what_hid_the_others(tmp_path):
    path = tmp_path / "facts.json"
    path.write_text(
        json.dumps(
            with_env(BY_NAME["mixed-3090-2080-super-second-gpu-by-uuid"].facts, CUDA_VISIBLE_DEVICES="1")
        )
    )
    result = run_hwcheck("doctor", "--facts", str(path), "--framework", "torch", env={"COLUMNS": "300"})
    gpu_line = next(line for line in result.stdout.splitlines() if " gpu " in line)
    assert "NVIDIA GeForce RTX 2080 SUPER (CC 7.5)" in gpu_line
    assert "CUDA_VISIBLE_DEVICES='1' hides NVIDIA GeForce RTX 3090" in gpu_line
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in result.stdout  # the ambiguity warning's remedy


# --- the other consumers see the same GPUs ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "bf16"), [(RTX_3090_UUID, True), (RTX_2080_SUPER_UUID, False), (None, False)]
)
def test_nfd_labels_and_emitted_features_follow_the_visible_gpus(mixed, value, bf16):
    facts = mixed if value is None else with_env(mixed, CUDA_VISIBLE_DEVICES=value)
    recommendation = recommend(facts, framework="torch")
    labels = node_labels(facts, recommendation)
    assert labels["gpu.count"] == ("2" if value is None else "1")
    assert labels["gpu.bf16"] == ("true" if bf16 else "false")
    assert ("gpu.mixed" in labels) == (value is None)
    assert precision_features(facts, "gpu")["bfloat16"] is bf16


def test_nfd_labels_without_visible_gpus(mixed):
    facts = with_env(mixed, CUDA_VISIBLE_DEVICES="-1")
    labels = node_labels(facts, recommend(facts, framework="torch"))
    assert "gpu.count" not in labels and labels["device"] == "cpu"


def test_emitted_torch_script_uses_the_visible_gpus_precision(tmp_path):
    base = BY_NAME["mixed-3090-2080-super-second-gpu-by-uuid"].facts
    scripts = {}
    for name, value in (("ampere", RTX_3090_UUID), ("turing", RTX_2080_SUPER_UUID)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(with_env(base, CUDA_VISIBLE_DEVICES=value)))
        result = run_hwcheck("config", "--facts", str(path), "--framework", "torch", "-o", "-")
        assert result.returncode == 0, result.stderr
        scripts[name] = result.stdout
    assert 'POLICY = "mixed_bfloat16"' in scripts["ampere"]
    # The Turing card alone: float16, and its guard falls back to float32 (no bfloat16 there).
    assert 'POLICY = "mixed_float16"' in scripts["turing"]
    assert 'FALLBACK_POLICY = "float32"' in scripts["turing"]


# --- the live environment path ------------------------------------------------------------


def test_live_environment_gives_the_same_gpus_as_the_facts_block(monkeypatch, mixed):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", RTX_2080_SUPER_UUID)
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    probed = environment.probe()
    assert probed.facts["environment"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    live = {**mixed, **probed.facts}
    block = with_env(
        mixed, CUDA_VISIBLE_DEVICES=RTX_2080_SUPER_UUID, CUDA_DEVICE_ORDER="PCI_BUS_ID", JAX_PLATFORMS="cuda"
    )
    assert resolve(live, "jax") == resolve(block, "jax")
    assert visible_names(live) == ["NVIDIA GeForce RTX 2080 SUPER"]


def test_environment_probe_reads_the_framework_variables():
    variables = {
        "JAX_PLATFORMS": "cpu",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5",
        "TORCH_CUDA_ARCH_LIST": "8.0;9.0",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "UNRELATED": "x",
    }
    found = environment.probe(variables).facts["environment"]
    assert found == {name: value for name, value in variables.items() if name != "UNRELATED"}


# --- the GPU probe records MIG devices ------------------------------------------------------


def test_gpu_probe_lists_mig_devices_with_their_uuids():
    result = gpu_probe.probe(nvml=FakeNvml("h100-80gb-hbm3-mig"))
    (gpu,) = result.facts["gpus"]
    recorded = H100_MIG["mig_devices"]
    assert [d["uuid"] for d in gpu["mig_devices"]] == [d["uuid"] for d in recorded]
    assert [d["profile"] for d in gpu["mig_devices"]] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert [d["gpu_instance_id"] for d in gpu["mig_devices"]] == [2, 3, 9, 10]
    # Empty slots (seven on an H100, four in use) are skipped, not errors.
    assert result.reason is None


def test_gpu_probe_without_mig_lists_no_mig_devices():
    (gpu,) = gpu_probe.probe(nvml=FakeNvml("h100-80gb-hbm3")).facts["gpus"]
    assert "mig_devices" not in gpu


def test_gpu_probe_mig_devices_survive_nvml_refusing_the_query():
    fake = FakeNvml("h100-80gb-hbm3-mig", not_supported=("nvmlDeviceGetMaxMigDeviceCount",))
    (gpu,) = gpu_probe.probe(nvml=fake).facts["gpus"]
    assert gpu["mig"] is True and gpu["mig_devices"] == []
