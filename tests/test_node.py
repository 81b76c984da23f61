"""The node in doctor: /dev/shm, cgroup and locked-memory limits, PCIe links, GPU states from NVML and
peer-to-peer between GPUs, read by probes/node.py, probes/nvidia/links.py and node_nvml.py, judged by
rules/policy/node.toml. Hardware that is not here is replayed from recorded values (named per fixture
in tests/fixtures/facts/README.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwcheck import recommend_policy
from hwcheck.devices import nvidia_node
from hwcheck.engine.context import build_context
from hwcheck.facts import load_machine_file
from hwcheck.probes import PROBE_NAMES, node
from hwcheck.probes.nvidia import links, node_nvml
from hwcheck.recommendation import recommend
from tests.conftest import ROOT, run_hwcheck

FACTS = Path(__file__).parent / "fixtures" / "facts"
RTX4090X2 = FACTS / "rtx4090x2-driver525-torch201.json"
A100X2 = FACTS / "a100-sxm4x2-driver555-torch231.json"
SHM64 = FACTS / "cpu-docker-shm64m-torch213.json"
# The node rules that no recorded machine shows yet, loaded as site rules.
UNRECORDED = Path(__file__).parent / "fixtures" / "rules" / "node-unrecorded.toml"


def _facts(path: Path) -> dict:
    return load_machine_file(path).facts


def _ids(recommendation) -> dict[str, object]:
    return {finding.id: finding for finding in recommendation.findings}


# --------------------------------------------------------------------------- the probe


def test_the_probe_reads_shm_cpu_quota_and_nccl_variables_under_a_root(tmp_path):
    (tmp_path / "dev/shm").mkdir(parents=True)
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/kubepods/pod1/c1\n")
    (tmp_path / "sys/fs/cgroup/kubepods/pod1/c1").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cgroup.controllers").write_text("cpu memory\n")
    (tmp_path / "sys/fs/cgroup/kubepods/cpu.max").write_text("max 100000\n")
    (tmp_path / "sys/fs/cgroup/kubepods/pod1/cpu.max").write_text("400000 100000\n")
    (tmp_path / "sys/fs/cgroup/kubepods/pod1/c1/cpu.max").write_text("150000 100000\n")
    result = node.probe(tmp_path, environ={"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO", "PATH": "/bin"})
    facts = result.facts["node"]
    assert result.status == "ok"
    assert facts["shm"]["present"] is True and facts["shm"]["size_bytes"] > 0
    assert facts["cpu_quota"] == {"version": 2, "cpus": 1.5}  # the lowest quota along the path
    assert facts["nccl_variables"] == {"NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1"}
    assert "memlock" not in facts  # a tree copied without /proc/self/limits: unknown
    assert facts["iommu"] == {"groups": 0}


def test_a_v1_cgroup_without_quota_and_a_root_without_shm(tmp_path):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("4:cpu,cpuacct:/docker/abc\n")
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us").write_text("100000\n")
    facts = node.probe(tmp_path, environ={}).facts["node"]
    assert facts["shm"] == {"present": False}
    assert facts["cpu_quota"] == {"version": 1, "cpus": None}  # looked for, none set


def test_the_locked_memory_limit_is_read_from_proc_self_limits(tmp_path):
    # The lines of this project's VM's /proc/self/limits (Docker's 8 MiB memlock), and unlimited.
    (tmp_path / "proc/self").mkdir(parents=True)
    limits = tmp_path / "proc/self/limits"
    limits.write_text(
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max locked memory         8388608              8388608              bytes     \n"
    )
    assert node.probe(tmp_path, environ={}).facts["node"]["memlock"] == {
        "soft_bytes": 8388608,
        "hard_bytes": 8388608,
    }
    limits.write_text("Max locked memory         unlimited            unlimited            bytes\n")
    unlimited = node.probe(tmp_path, environ={}).facts["node"]["memlock"]
    assert unlimited == {"soft_bytes": None, "hard_bytes": None}


def test_a_hostile_environment_cannot_flood_the_nccl_variables():
    environ = {f"NCCL_X{number:03d}": "v" * 10_000 for number in range(500)}
    variables = node.nccl_variables(environ)
    assert len(variables) == node.MAX_VARIABLES
    assert all(len(value) == node.VALUE_CHARS for value in variables.values())


def test_the_live_probe_reads_memlock_and_runs_no_program(monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", None)  # any program started would fail the probe
    facts = node.probe().facts["node"]
    assert "memlock" in facts and "soft_bytes" in facts["memlock"]


def _gpu_tree(tmp_path: Path, *, speed: str, width: str, config: bytes) -> Path:
    """A sysfs tree with one NVIDIA GPU below a switch port, as the kernel links it."""
    devices = tmp_path / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    gpu = devices / "0000:02:00.0"
    gpu.mkdir(parents=True)
    for folder, vendor, klass in ((gpu, "0x10de", "0x030200"), (devices, "0x10b5", "0x060400")):
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "device").write_text("0x2684\n")
        (folder / "class").write_text(klass + "\n")
    (gpu / "current_link_speed").write_text(f"{speed}\n")
    (gpu / "max_link_speed").write_text("16.0 GT/s PCIe\n")
    (gpu / "current_link_width").write_text(f"{width}\n")
    (gpu / "max_link_width").write_text("16\n")
    (devices / "config").write_bytes(config)
    bus = tmp_path / "sys/bus/pci/devices"
    bus.mkdir(parents=True)
    (bus / "0000:02:00.0").symlink_to(gpu)
    (bus / "0000:01:00.0").symlink_to(devices)
    driver = tmp_path / "sys/bus/pci/drivers/nvidia"
    driver.mkdir(parents=True)
    (driver / "0000:02:00.0").symlink_to(gpu)
    (driver / "module").mkdir()  # the driver's folder holds more than its devices
    return tmp_path


def _config_with_acs(control: int) -> bytes:
    """A 4 KiB configuration space whose extended capabilities are AER (0x0001) then ACS (0x000d)."""
    space = bytearray(4096)
    space[0x100:0x104] = (0x0001 | 1 << 16 | 0x140 << 20).to_bytes(4, "little")
    space[0x140:0x144] = (0x000D | 1 << 16).to_bytes(4, "little")
    space[0x146:0x148] = control.to_bytes(2, "little")
    return bytes(space)


def test_links_read_a_narrow_link_and_acs_redirect_on_the_switch_port(tmp_path):
    root = _gpu_tree(tmp_path, speed="2.5 GT/s PCIe", width="8", config=_config_with_acs(0x001D))
    unread: dict[str, str] = {}
    found = links.read(str(root), unread)
    assert unread == {}
    (link,) = found["pci_links"]
    assert link["address"] == "0000:02:00.0"
    assert (link["current_gen"], link["max_gen"], link["current_width"], link["max_width"]) == (1, 4, 8, 16)
    assert link["bridges"][0] == {"address": "0000:01:00.0", "acs_redirect": True}


def test_acs_without_redirect_and_a_header_only_config_space():
    assert links.acs_redirect_in(_config_with_acs(0x0001)) is False  # source validation only
    assert links.acs_redirect_in(bytes(64)) is None  # not root: the extended space is unreadable
    looping = bytearray(4096)
    looping[0x100:0x104] = (0x0001 | 0x100 << 20).to_bytes(4, "little")  # points at itself
    assert links.acs_redirect_in(bytes(looping)) is False


class FakeNvml:
    """NVML's answers for two GeForce RTX 4090s on driver 525.105.17: P2P not supported, persistence
    off (the recorded values of tests/fixtures/facts/rtx4090x2-driver525-torch201.json); a query
    this board does not support raises NVMLError as nvidia-ml-py does."""

    class NVMLError(Exception):
        pass

    def nvmlDeviceGetP2PStatus(self, first, second, index):
        return 5  # NVML_P2P_STATUS_NOT_SUPPORTED

    def nvmlDeviceGetTopologyCommonAncestor(self, first, second):
        return 50  # NVML_TOPOLOGY_SYSTEM

    def nvmlDeviceGetPersistenceMode(self, handle):
        return 0

    def nvmlDeviceGetComputeMode(self, handle):
        return 0

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return 1

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle):
        return 3

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle):
        return 4

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return 0x1  # GpuIdle

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle):
        raise self.NVMLError("Not Supported")


def test_nvml_reads_pairs_and_states_leaving_what_it_cannot_answer_null():
    found = node_nvml.read(FakeNvml(), [(0, "h0"), (1, "h1")])
    assert found["pairs"] == [
        {"gpus": [0, 1], "topology": "SYS", "p2p_read": "not_supported", "p2p_write": "not_supported"}
    ]
    first = found["gpus"][0]
    assert first["persistence_mode"] is False and first["compute_mode"] == 0
    assert first["link"] == {
        "current_gen": 1,
        "max_gen": 3,
        "gpu_max_gen": 4,
        "current_width": None,
        "max_width": None,
    }
    assert first["retired_pages_pending"] is None and first["nvlinks_active"] is None


# --------------------------------------------------------------------------- the advice


def test_two_rtx_4090s_with_torch_get_a_finding_naming_p2p_and_nccl_p2p_disable():
    found = _ids(recommend(_facts(RTX4090X2), framework="torch"))
    finding = found["node-p2p-unsupported-class"]
    assert finding.severity == "warning"
    assert "peer-to-peer" in finding.message and "NCCL_P2P_DISABLE=1" in finding.remedy
    assert "not supported" in finding.message  # what the driver reported for the pair


def test_two_rtx_4090s_with_p2p_disabled_are_not_warned():
    facts = _facts(RTX4090X2)
    facts["node"]["nccl_variables"] = {"NCCL_P2P_DISABLE": "1"}
    assert "node-p2p-unsupported-class" not in _ids(recommend(facts, framework="torch"))


def test_rtx_4090s_whose_driver_reports_peer_to_peer_are_not_warned():
    # The thamada_gls RTX4090 capture (eight RTX 4090 on driver 550.127.05): its deviceQuery prints
    # "Peer access from ... (GPU0) -> ... (GPU1) : Yes" for every pair. The observation wins.
    facts = _facts(RTX4090X2)
    facts["node"]["nvml"]["pairs"][0]["p2p_read"] = "ok"
    assert not [f for f in _ids(recommend(facts, framework="torch")) if f.startswith("node-p2p")]


def test_one_visible_rtx_4090_needs_no_peer_to_peer():
    facts = {**_facts(RTX4090X2), "environment": {"CUDA_VISIBLE_DEVICES": "0"}}
    assert not [f for f in _ids(recommend(facts, framework="torch")) if f.startswith("node-p2p")]


def test_two_a100_sxm_get_no_peer_to_peer_finding_and_the_recorded_pending_remap():
    recommendation = recommend(_facts(A100X2), framework="torch")
    found = _ids(recommendation)
    assert not [name for name in found if name.startswith(("node-p2p", "node-acs", "node-pcie"))]
    # GPU 1 of the recorded A100 node had a row remapping pending (nvidia-smi -q: Pending: Yes).
    assert "GPU 1: memory rows are pending remapping" in found["node-gpu-state-warning"].message
    assert not recommendation.has_errors


def test_a_prohibited_gpu_is_an_error_and_doctor_exits_1(tmp_path):
    # Not shipped until a recorded machine shows it: the rule is a site rule here.
    facts = _facts(A100X2)
    facts["node"]["nvml"]["gpus"][0]["compute_mode"] = 2
    found = _ids(recommend(facts, framework="torch", rule_files=[UNRECORDED]))
    assert found["node-gpu-state-error"].severity == "error"
    assert "sudo nvidia-smi -i 0 -c DEFAULT" in found["node-gpu-state-error"].remedy
    assert "node-gpu-state-error" not in _ids(recommend(facts, framework="torch"))
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck(
        "doctor", "--facts", str(path), "--framework", "torch", "--json", "--rules", str(UNRECORDED)
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["node"]["ready"] is False and "node-gpu-state-error" in report["node"]["failing"]


def test_acs_unread_on_a_switched_pair_and_translated_dma_are_said_by_the_site_rules():
    facts = _facts(A100X2)
    facts["gpus"][0]["pci_bus_id"], facts["gpus"][1]["pci_bus_id"] = "00000000:68:00.0", "00000000:9E:00.0"
    facts["node"]["nvml"]["pairs"][0]["topology"] = "PXB"
    facts["node"]["pci_links"] = [
        {
            "address": "0000:68:00.0",
            "iommu_type": "DMA",
            "bridges": [{"address": "0000:67:00.0", "acs_redirect": None}],
        },
        {"address": "0000:9e:00.0", "iommu_type": "identity", "bridges": []},
    ]
    found = _ids(recommend(facts, framework="torch", rule_files=[UNRECORDED]))
    assert "sudo lspci -vvv | grep -i ACSCtl" in found["node-acs-unknown"].remedy
    assert "0000:68:00.0" in found["node-iommu-translated"].message
    facts["node"]["pci_links"][0]["bridges"][0]["acs_redirect"] = True
    found = _ids(recommend(facts, framework="torch", rule_files=[UNRECORDED]))
    assert "node-acs-unknown" not in found and "0000:67:00.0" in found["node-acs-redirect"].message


def test_unread_nvml_is_a_warning_that_names_the_command_never_an_error():
    facts = _facts(A100X2)
    del facts["node"]["nvml"]
    facts["node"]["probes"]["gpu"] = {"status": "timeout", "reason": "no answer within 5 s"}
    recommendation = recommend(facts, framework="torch")
    finding = _ids(recommendation)["node-nvml-unread"]
    assert finding.severity == "warning" and "nvidia-smi topo -m" in finding.remedy
    assert "no answer within 5 s" in finding.message
    assert not recommendation.has_errors


def test_a_narrow_busy_link_warns_and_an_idle_slow_one_is_only_information():
    facts = _facts(A100X2)
    gpus = facts["node"]["nvml"]["gpus"]
    gpus[0]["link"] = {**gpus[0]["link"], "current_width": 8}
    gpus[1]["link"] = {**gpus[1]["link"], "current_gen": 1}  # clock_event_reasons 1: idle
    found = _ids(recommend(facts, framework="torch"))
    assert "GPU 0 x8 of x16" in found["node-pcie-link-narrow"].message
    assert "node-pcie-link-slow" not in found and found["node-pcie-link-idle"].severity == "info"
    gpus[1]["clock_event_reasons"] = 0  # not idle, but in no computing performance state: not judged
    assert "node-pcie-link-slow" not in _ids(recommend(facts, framework="torch"))
    gpus[1]["performance_state"] = 0  # P0 without the Idle reason: busy
    assert "GPU 1 Gen1 of Gen4" in _ids(recommend(facts, framework="torch"))["node-pcie-link-slow"].message
    del gpus[1]["performance_state"]
    gpus[1]["utilization_gpu"] = 100  # a kernel ran all the last sample period: busy
    assert "GPU 1 Gen1 of Gen4" in _ids(recommend(facts, framework="torch"))["node-pcie-link-slow"].message


def test_an_idle_board_that_leaves_the_idle_reason_off_is_not_a_degraded_link():
    # The thamada_gls A10_smi__q.txt capture (tests/fixtures/nvml's source collection): an A10 in
    # P8 at 0 % utilization, clocks event reasons Idle "Not Active", SW Power Cap "Active" (0x4),
    # its link at Gen1 of Gen4 x16.
    state = {
        "index": 0,
        "link": {"current_gen": 1, "max_gen": 4, "gpu_max_gen": 4, "current_width": 16, "max_width": 16},
        "clock_event_reasons": 0x4,
        "performance_state": 8,
        "utilization_gpu": 0,
    }
    assert nvidia_node.busy(state) is False
    facts = {
        "gpus": [{"index": 0, "vendor": "nvidia", "name": "NVIDIA A10", "memory_mib": 23028}],
        "node": {"nvml": {"gpus": [state], "pairs": []}},
    }
    found = _ids(recommend(facts, framework="torch"))
    assert "node-pcie-link-slow" not in found
    assert "GPU 0 Gen1 of Gen4" in found["node-pcie-link-idle"].message


def test_the_recorded_64_mib_shm_warns_naming_the_size_for_torch_only():
    facts = _facts(SHM64)
    finding = _ids(recommend(facts, framework="torch"))["node-shm-small"]
    assert finding.severity == "warning" and "64 MiB" in finding.message and "--shm-size" in finding.remedy
    # TensorFlow on one device uses no DataLoader workers and no NCCL: nothing to say.
    assert "node-shm-small" not in _ids(recommend(facts, framework="tensorflow"))
    facts["node"]["shm"]["size_bytes"] = 8 * 1024**3
    assert "node-shm-small" not in _ids(recommend(facts, framework="torch"))


def test_a_facts_file_without_a_node_part_gets_no_node_findings():
    facts = _facts(A100X2)
    del facts["node"]
    assert not [
        f for f in _ids(recommend(facts, framework="torch")) if f.startswith("node-") and "p2p" not in f
    ]


def test_the_node_facts_and_probe_statuses_replay_as_they_were_read(tmp_path):
    recorded = run_hwcheck("doctor", "--facts", str(SHM64), "--framework", "torch", "--json")
    report = json.loads(recorded.stdout)
    assert report["facts"]["node"]["probes"]["gpu"]["status"] == "absent"
    path = tmp_path / "report.json"
    path.write_text(recorded.stdout)
    replayed = json.loads(
        run_hwcheck("doctor", "--facts", str(path), "--framework", "torch", "--json").stdout
    )
    assert replayed["recommendation"]["findings"] == report["recommendation"]["findings"]
    assert (
        replayed["node"] == report["node"] == {"ready": True, "failing": [], "warnings": ["node-shm-small"]}
    )


# --------------------------------------------------------------------------- a real /dev/shm


def _unshare() -> list[str]:
    """unshare with a private mount namespace: as root directly, else in a user namespace too."""
    own = ["-m"] if hasattr(os, "geteuid") and os.geteuid() == 0 else ["-r", "-m"]
    return ["unshare", *own]


def _in_mount_namespace(shm_size: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = f'mount -t tmpfs -o size={shm_size} tmpfs /dev/shm && exec "$0" -m hwcheck "$@"'
    return subprocess.run(
        [*_unshare(), "sh", "-c", command, sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def _unshare_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        [*_unshare(), "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"a private /dev/shm cannot be mounted here: {probe.stderr.strip()}"
    return None


def test_doctor_in_a_namespace_with_a_64_mb_shm_warns_and_names_the_size():
    problem = _unshare_problem()
    if problem:
        pytest.skip(problem)
    small = _in_mount_namespace("64m", "doctor", "--framework", "torch")
    assert small.returncode in (0, 1), small.stderr
    assert "/dev/shm holds only 64 MiB" in small.stdout
    # A /dev/shm of the size a container is advised to get (a tmpfs size is a bound, not memory).
    large = json.loads(_in_mount_namespace("2g", "doctor", "--framework", "torch", "--json").stdout)
    assert large["facts"]["node"]["shm"]["size_bytes"] == 2 * 1024**3
    assert "node-shm-small" not in [f["id"] for f in large["recommendation"]["findings"]]


def test_the_public_api_sees_the_node_too():
    recommendation = recommend_policy(facts=_facts(RTX4090X2), framework="torch")
    assert "node-p2p-unsupported-class" in {f.id for f in recommendation.findings}


def test_a_replay_gives_the_rules_what_each_probe_reported_on_the_machine():
    # cpu-no-dev-shm-torch213.json was recorded live: its GPU probe found no NVML there.
    facts = _facts(FACTS / "cpu-no-dev-shm-torch213.json")
    replayed = {name: {"status": "file", "reason": "from a file", "seconds": None} for name in PROBE_NAMES}
    context = build_context(facts, probes=replayed, framework="torch")
    gpu = context["probes"]["gpu"]
    assert gpu == {"status": "absent", "reason": "NVIDIA driver library (NVML) not found"}
    assert context["probes"]["cpu"]["status"] == "ok"
    # A file that recorded no statuses keeps the replay's own.
    del facts["node"]["probes"]
    assert build_context(facts, probes=replayed, framework="torch")["probes"]["gpu"]["status"] == "file"
