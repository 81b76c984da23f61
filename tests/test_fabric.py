"""The fabric between nodes and the topology inside one: probes/fabric.py and the placement of
probes/sysfs.py over faked /sys trees (tmp folders laid out like sysfs, hostile values among them),
engine/fabric.py's reading of NCCL's interface lists, devices/nvidia_topology.py's links in
nvidia-smi topo -m's words, and the rules of rules/policy/fabric.toml over replays of public
threads (tests/fixtures/facts/README.md names each source)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from hwcheck.devices import nvidia_topology
from hwcheck.engine import fabric as engine_fabric
from hwcheck.facts import load_machine_file
from hwcheck.probes import fabric, node
from hwcheck.probes.nvidia import links, node_nvml
from hwcheck.probes.sysfs import placement
from hwcheck.recommendation import recommend
from hwcheck.render import node_rows
from tests.conftest import run_hwcheck

FACTS = Path(__file__).parent / "fixtures" / "facts"
UNRECORDED = Path(__file__).parent / "fixtures" / "rules" / "fabric-unrecorded.toml"
DOCKER0 = FACTS / "horovod310-nccl-socket-ifname-docker0.json"
ROUTABLE = FACTS / "horovod310-nccl-socket-ifname-routable.json"
PORT_DOWN = FACTS / "rdma-mlx5-port-down-hdr.json"
PORTS_ACTIVE = FACTS / "rdma-mlx5-ports-active-edr.json"
NIC_FAR = FACTS / "nccl634-4gpu-nics-across-socket.json"
NIC_NEAR = FACTS / "nccl1453-h100x8-nic-per-gpu.json"
FABRIC_RULES = ("fabric-", "topology-")


def _facts(path: Path) -> dict:
    return load_machine_file(path).facts


def _fabric_findings(facts: dict, **options) -> dict:
    found = recommend(facts, framework="torch", **options).findings
    return {finding.id: finding for finding in found if finding.id.startswith(FABRIC_RULES)}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _pci_device(root: Path, host: str, chain: list[str], numa: str = "0", cpus: str = "0-15") -> Path:
    """A PCI device folder under sys/devices/HOST/CHAIN..., with its NUMA node and local CPUs."""
    folder = root / "sys/devices" / host
    for part in chain:
        folder = folder / part
    folder.mkdir(parents=True)
    (folder / "numa_node").write_text(numa + "\n")
    (folder / "local_cpulist").write_text(cpus + "\n")
    return folder


def _interface(root: Path, name: str, **files: str) -> Path:
    folder = root / "sys/class/net" / name
    folder.mkdir(parents=True)
    for key, value in files.items():
        (folder / key).write_text(value + "\n")
    return folder


def _node_tree(root: Path) -> None:
    """A node with a physical NIC (eth0, the default route), docker0, a veth, lo and two HCAs."""
    nic = _pci_device(root, "pci0000:16", ["0000:16:02.0", "0000:17:00.0"], numa="1", cpus="16-31")
    eth0 = _interface(root, "eth0", operstate="up", speed="100000", mtu="9000", type="1")
    os.symlink(nic, eth0 / "device")
    docker0 = _interface(root, "docker0", operstate="up", speed="-1", mtu="1500", type="1")
    (docker0 / "bridge").mkdir()
    _interface(root, "veth1a2b3c", operstate="up", mtu="1500", type="1")
    _interface(root, "lo", operstate="unknown", mtu="65536", type="772")
    _write(
        root / "proc/net/route",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        "docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
        "eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n",
    )
    for name, state, rate in (
        ("mlx5_0", "4: ACTIVE", "200 Gb/sec (4X HDR)"),
        ("mlx5_1", "1: DOWN", "10 Gb/sec (4X SDR)"),
    ):
        port = root / "sys/class/infiniband" / name / "ports/1"
        _write(port / "state", state + "\n")
        _write(port / "rate", rate + "\n")
        _write(port / "link_layer", "InfiniBand\n")
    os.symlink(nic, root / "sys/class/infiniband/mlx5_0/device")
    (root / "sys/module/nvidia_peermem").mkdir(parents=True)


# --------------------------------------------------------------------------- the probe


def test_the_probe_reads_interfaces_the_default_route_rdma_ports_and_peermem(tmp_path):
    _node_tree(tmp_path)
    found = node.probe(tmp_path, environ={}).facts["node"]["fabric"]
    by_name = {interface["name"]: interface for interface in found["interfaces"]}
    assert found["default_route"] == "eth0" and found["interfaces_total"] == 4
    eth0 = by_name["eth0"]
    assert (eth0["operstate"], eth0["speed_mbps"], eth0["mtu"], eth0["kind"]) == (
        "up",
        100000,
        9000,
        "physical",
    )
    assert eth0["default_route"] is True
    assert eth0["pci"] == {
        "address": "0000:17:00.0",
        "numa_node": 1,
        "local_cpus": "16-31",
        "host_bridge": "pci0000:16",
        "path": ["0000:16:02.0"],
    }
    assert by_name["docker0"]["kind"] == "bridge" and by_name["docker0"]["speed_mbps"] is None
    assert by_name["veth1a2b3c"]["kind"] == "veth" and by_name["lo"]["kind"] == "loopback"
    ports = {device["name"]: device["ports"][0] for device in found["rdma"]}
    assert ports["mlx5_0"] == {"port": 1, "state": "ACTIVE", "rate_gbps": 200.0, "link_layer": "InfiniBand"}
    assert ports["mlx5_1"]["state"] == "DOWN"
    assert found["rdma"][0]["pci"]["numa_node"] == 1
    assert found["peermem"] is True and "nvidia_open_module" not in found  # no NVIDIA driver: unknown


def test_a_root_without_sysfs_says_absent_for_rdma_and_unknown_for_peermem(tmp_path):
    found = fabric.read(str(tmp_path), {})["fabric"]
    assert found["interfaces"] == [] and found["rdma"] == []
    assert "peermem" not in found and "default_route" not in found
    _write(tmp_path / "proc/modules", "nvidia_uvm 1 0 - Live 0x0\nmlx5_ib 4 0 - Live 0x0\n")
    assert fabric.read(str(tmp_path), {})["fabric"]["peermem"] is False  # listed, and not there


def test_hostile_sysfs_values_are_left_unknown_never_trusted(tmp_path):
    folder = _interface(tmp_path, "eth0", operstate="\x00\x01up", speed="fast", mtu="0")
    (folder / "device").symlink_to(folder / "device")  # a link loop
    _interface(tmp_path, "eth1", speed="99999999999999999999", mtu="-5")
    os.mkfifo(_interface(tmp_path, "eth2") / "speed")  # a FIFO is refused, not waited on
    port = tmp_path / "sys/class/infiniband/mlx5_0/ports/1"
    _write(port / "state", "9: EXPLODED\n")
    _write(port / "rate", "lots Gb/sec\n")
    _write(port / "link_layer", "Carrier pigeon\n")
    found = fabric.read(str(tmp_path), {})["fabric"]
    eth0, eth1, eth2 = found["interfaces"]
    assert eth0["operstate"] is None and eth0["speed_mbps"] is None and eth0["mtu"] is None
    assert "pci" not in eth0
    assert eth1["speed_mbps"] is None and eth1["mtu"] is None and eth2["speed_mbps"] is None
    assert found["rdma"][0]["ports"] == [{"port": 1, "state": None, "rate_gbps": None, "link_layer": None}]


def test_a_hundred_thousand_interfaces_are_capped(tmp_path, monkeypatch):
    # 5,000 folders stand in for 100,000: the cap is on what is listed, whatever lies beyond it.
    net = tmp_path / "sys/class/net"
    net.mkdir(parents=True)
    for number in range(5000):
        (net / f"veth{number:05d}").mkdir()
    found = fabric.read(str(tmp_path), {})["fabric"]
    assert found["interfaces_total"] == fabric.MAX_LISTED
    assert len(found["interfaces"]) == fabric.MAX_INTERFACES


def test_placement_leaves_a_numa_node_of_minus_one_and_a_garbage_cpulist_unknown(tmp_path):
    device = _pci_device(
        tmp_path, "pci0000:00", ["0000:00:01.0", "0000:01:00.0"], numa="-1", cpus="all of them"
    )
    where = placement(str(device))
    assert where == {
        "numa_node": None,
        "local_cpus": None,
        "host_bridge": "pci0000:00",
        "path": ["0000:00:01.0"],
    }


def test_each_nvidia_gpu_link_records_where_it_sits(tmp_path):
    gpu = _pci_device(tmp_path, "pci0000:80", ["0000:80:01.0", "0000:81:00.0"], numa="1", cpus="36-71")
    (gpu / "class").write_text("0x030200\n")
    driver = tmp_path / "sys/bus/pci/drivers/nvidia"
    driver.mkdir(parents=True)
    (driver / "0000:81:00.0").symlink_to(gpu)
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    (tmp_path / "sys/bus/pci/devices/0000:81:00.0").symlink_to(gpu)
    found = links.read(str(tmp_path), {})["pci_links"][0]
    assert found["numa_node"] == 1 and found["local_cpus"] == "36-71"
    assert found["host_bridge"] == "pci0000:80" and found["path"] == ["0000:80:01.0"]


def test_nvml_names_the_far_end_of_each_active_nvlink():
    class Nvml:
        NVMLError = RuntimeError

        def nvmlDeviceGetNvLinkState(self, handle, link):  # noqa: N802 - NVML's name
            return 1 if link < 2 else 0

        def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):  # noqa: N802
            return 0 if link == 0 else 2

        def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle, link):  # noqa: N802
            return SimpleNamespace(busId=b"00000000:07:00.0")

        def __getattr__(self, name):
            raise AttributeError(name)

    state = node_nvml.read(Nvml(), [(0, "h0")])["gpus"][0]
    assert state["nvlinks_active"] == 2
    assert state["nvlink_remotes"] == [
        {"type": "gpu", "bus_id": "00000000:07:00.0"},
        {"type": "switch", "bus_id": "00000000:07:00.0"},
    ]


# --------------------------------------------------------------------------- NCCL's lists


@pytest.mark.parametrize(
    ("value", "chosen"),
    [
        ("eth", ["eth0", "eth1"]),
        ("=eth0", ["eth0"]),
        ("=eth", []),
        ("^docker,lo", ["eth0", "eth1", "ib0"]),
        ("^=docker0", ["eth0", "eth1", "ib0", "lo"]),
        ("docker0", ["docker0"]),
        ("ib0:1,eth1", ["eth1", "ib0"]),
    ],
)
def test_nccl_interface_lists_select_as_the_nccl_user_guide_says(value, chosen):
    names = ["docker0", "eth0", "eth1", "ib0", "lo"]
    assert sorted(engine_fabric.selected(value, names)) == chosen


def test_a_bridge_carrying_the_default_route_is_not_a_container_interface():
    assert engine_fabric.container({"name": "br0", "kind": "bridge", "default_route": False})
    assert not engine_fabric.container({"name": "br0", "kind": "bridge", "default_route": True})
    assert engine_fabric.container({"name": "docker0", "kind": "physical"})


# --------------------------------------------------------------------------- topology


@pytest.mark.parametrize(
    ("first", "second", "level"),
    [
        (
            {"host_bridge": "pci0000:40", "path": ["a", "b", "c"]},
            {"host_bridge": "pci0000:40", "path": ["a", "b", "d"]},
            "PIX",
        ),
        (
            {"host_bridge": "pci0000:40", "path": ["a", "b", "c", "e"]},
            {"host_bridge": "pci0000:40", "path": ["a", "f", "g"]},
            "PXB",
        ),
        ({"host_bridge": "pci0000:40", "path": ["a"]}, {"host_bridge": "pci0000:40", "path": ["b"]}, "PHB"),
        (
            {"host_bridge": "pci0000:00", "numa_node": 0},
            {"host_bridge": "pci0000:20", "numa_node": 0},
            "NODE",
        ),
        ({"host_bridge": "pci0000:00", "numa_node": 0}, {"host_bridge": "pci0000:80", "numa_node": 1}, "SYS"),
        (
            {"host_bridge": "pci0000:00", "numa_node": None},
            {"host_bridge": "pci0000:80", "numa_node": 1},
            None,
        ),
        ({"host_bridge": None}, {"host_bridge": "pci0000:80"}, None),
    ],
)
def test_the_link_between_two_pci_devices_is_named_as_nvidia_smi_topo_names_it(first, second, level):
    assert nvidia_topology.relation(first, second) == level


def test_the_recorded_matrices_come_out_of_their_replays():
    far = _facts(NIC_FAR)
    found = nvidia_topology.variables(far, far["gpus"])
    assert found["pairs"] == "every GPU pair NV4"
    assert found["gpus"] == "GPU 0, 1 NUMA 0 (CPUs 0-35); GPU 2, 3 NUMA 1 (CPUs 36-71)"
    assert found["nics"].endswith("GPU 2, 3: mlx5_0, mlx5_1, mlx5_2, mlx5_3 SYS")
    near = _facts(NIC_NEAR)
    found = nvidia_topology.variables(near, near["gpus"])
    assert found["pairs"] == "every GPU pair NV18" and "GPU 0: NIC8 PIX" in found["nics"]
    assert found["nic_far"] == ""


def test_a_gpu_hidden_by_cuda_visible_devices_leaves_the_topology():
    far = _facts(NIC_FAR)
    found = nvidia_topology.variables(far, far["gpus"][:2])
    assert found["nic_far"] == "" and "GPU 2" not in found["gpus"]


# --------------------------------------------------------------------------- the advice


def test_a_container_bridge_in_nccl_socket_ifname_warns_and_the_routable_twin_does_not():
    finding = _fabric_findings(_facts(DOCKER0))["fabric-socket-ifname-container"]
    assert finding.severity == "warning" and "docker0" in finding.message
    assert "NCCL_SOCKET_IFNAME" in finding.remedy and "--network=host" in finding.remedy
    assert _fabric_findings(_facts(ROUTABLE)) == {}


def test_the_remedy_names_the_default_route_interface_where_it_is_known():
    facts = _facts(DOCKER0)
    facts["node"]["fabric"]["interfaces"][1]["default_route"] = True
    remedy = _fabric_findings(facts)["fabric-socket-ifname-container"].remedy
    assert remedy.startswith("export NCCL_SOCKET_IFNAME==enp159s0")


def test_an_hca_whose_port_is_down_warns_and_active_ports_do_not():
    finding = _fabric_findings(_facts(PORT_DOWN))["fabric-rdma-port-down"]
    assert "mlx5_7 port 1 DOWN" in finding.message and "TCP sockets" in finding.message
    assert "ibstat" in finding.remedy
    assert _fabric_findings(_facts(PORTS_ACTIVE)) == {}


def test_a_port_outside_nccl_ib_hca_is_not_warned_of():
    facts = _facts(PORT_DOWN)
    facts["node"]["fabric"]["rdma"].append({"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE"}]})
    facts["node"]["nccl_variables"] = {"NCCL_IB_HCA": "=mlx5_0"}
    assert "fabric-rdma-port-down" not in _fabric_findings(facts)


def test_gpus_whose_every_nic_is_across_the_socket_warn_and_a_nic_per_gpu_does_not():
    finding = _fabric_findings(_facts(NIC_FAR))["topology-nic-across-socket"]
    assert finding.message.startswith("GPU 2, GPU 3: every RDMA NIC is across the socket")
    assert "nvidia-smi topo -m" in finding.remedy
    assert _fabric_findings(_facts(NIC_NEAR)) == {}


def test_facts_without_the_fabric_say_nothing_of_it():
    facts = _facts(NIC_FAR)
    del facts["node"]["fabric"], facts["node"]["pci_links"]
    assert _fabric_findings(facts, rule_files=[UNRECORDED]) == {}


def test_the_unrecorded_checks_fire_on_the_facts_they_name():
    facts = _facts(PORTS_ACTIVE)
    facts["node"]["nccl_variables"] = {"NCCL_IB_HCA": "mlx4", "NCCL_SOCKET_IFNAME": "=eth0"}
    facts["node"]["fabric"]["interfaces"] = [{"name": "eno1", "operstate": "up", "kind": "physical"}]
    found = _fabric_findings(facts, rule_files=[UNRECORDED])
    assert "eno1" in found["fabric-socket-ifname-missing"].message
    assert "mlx5_0, mlx5_1" in found["fabric-ib-hca-missing"].message
    facts["node"]["nccl_variables"] = {"NCCL_IB_DISABLE": "1"}
    assert (
        "mlx5_0:1 100 Gb/s" in _fabric_findings(facts, rule_files=[UNRECORDED])["fabric-ib-disabled"].message
    )
    far = _facts(NIC_FAR)
    far["node"]["fabric"].update({"peermem": False, "nvidia_open_module": False})
    far["node"]["fabric"]["rdma"][0]["ports"] = [{"port": 1, "state": "ACTIVE"}]
    far["node"]["nvml"]["gpus"][3]["nvlink_remotes"] = far["node"]["nvml"]["gpus"][3]["nvlink_remotes"][:8]
    far["node"]["nvml"]["gpus"][3]["nvlinks_active"] = 8
    found = _fabric_findings(far, rule_files=[UNRECORDED])
    assert "modprobe nvidia_peermem" in found["fabric-gpudirect-rdma-missing"].remedy
    assert found["topology-nvlink-down"].message == "NVLink down: GPU 3 8 of 12 NVLinks active. " + (
        "Traffic on the missing links goes over the remaining ones or PCIe, slower."
    )
    far["node"]["fabric"]["peermem"] = True
    assert "fabric-gpudirect-rdma-missing" not in _fabric_findings(far, rule_files=[UNRECORDED])


# --------------------------------------------------------------------------- doctor


@pytest.mark.parametrize("path", [DOCKER0, PORT_DOWN, NIC_FAR, NIC_NEAR], ids=lambda path: path.stem)
def test_doctor_shows_the_fabric_and_topology_rows_within_80_columns(path):
    done = run_hwcheck("doctor", "--facts", str(path), "--framework", "torch", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert any(line.startswith(("✓  fabric", "≡  fabric")) for line in lines)


def test_doctor_json_carries_the_topology_in_its_node_part():
    done = run_hwcheck("doctor", "--facts", str(NIC_FAR), "--framework", "torch", "--json")
    report = json.loads(done.stdout)
    assert report["node"]["topology"]["nic_far"] == "GPU 2, GPU 3"
    assert "topology-nic-across-socket" in report["node"]["warnings"]
    assert report["facts"]["node"]["fabric"]["rdma"][0]["name"] == "mlx5_0"


def test_the_rows_say_what_was_read_and_nothing_when_nothing_was():
    assert node_rows.rows({}) == []
    rows = dict(node_rows.rows(_facts(PORT_DOWN)))
    assert rows == {"fabric": "mlx5_7:1 DOWN 200 Gb/s InfiniBand"}


def test_a_name_longer_than_the_kernel_makes_is_skipped_never_cut(tmp_path):
    _interface(tmp_path, "eth0", operstate="up")
    _interface(tmp_path, "x" * 65, operstate="up")
    found = fabric.read(str(tmp_path), {})["fabric"]
    assert [interface["name"] for interface in found["interfaces"]] == ["eth0"]
