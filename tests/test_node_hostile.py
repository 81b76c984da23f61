"""The node reads cannot be steered or fooled: a cgroup path is read only inside the cgroup mount,
every number is a whole number within the 64-bit bound and its range, garbage is unknown (never
"no quota" or "unlimited"), a path thousands of levels deep costs one pass, and a /dev/shm that
is a link loop is unread, not absent. Whatever the input, doctor's report reads back as facts.

The membership lines are the formats cgroups(7) documents; ".." parts are what the kernel lists
for a cgroup outside the reader's cgroup namespace (cgroup_namespaces(7)).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_node import _config_with_acs, _gpu_tree

from hwcheck.facts import load_machine_file
from hwcheck.probes import memory, node, platform
from hwcheck.probes.runner import collect
from hwcheck.render.report import build_report, to_json

pytestmark = pytest.mark.skipif(os.name != "posix", reason="cgroups, /proc and symbolic links are POSIX")

LIMITS_HEADER = "Limit                     Soft Limit           Hard Limit           Units     \n"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def unified(root: Path, membership: str) -> None:
    write(root, "proc/self/cgroup", membership)
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")


def memlock(root: Path, soft: str, hard: str) -> None:
    write(root, "proc/self/limits", LIMITS_HEADER + f"Max locked memory         {soft}  {hard}  bytes\n")


def node_facts(root: Path) -> dict:
    return node.probe(root, environ={}).facts["node"]


# --------------------------------------------------------------------------- hostile fixtures
# Each writes one hostile machine under a root; the read-back test below runs every one.


def dotdot_v2(root: Path) -> None:
    """A v2 path climbing out of the mount to a planted cpu.max and memory.max."""
    unified(root, "0::/../../../planted\n")
    write(root, "planted/cpu.max", "100 100000\n")
    write(root, "planted/memory.max", "1024\n")


def dotdot_v1(root: Path) -> None:
    write(root, "proc/self/cgroup", "4:cpu,cpuacct:/../../planted\n3:memory:/../../../planted\n")
    write(root, "sys/fs/planted/cpu.cfs_quota_us", "100\n")
    write(root, "sys/fs/planted/cpu.cfs_period_us", "100000\n")
    write(root, "sys/planted/memory.limit_in_bytes", "1024\n")


def link_out(root: Path) -> None:
    """A folder of the cgroup tree that is a link out of the mount."""
    unified(root, "0::/box\n")
    write(root, "elsewhere/cpu.max", "100 100000\n")
    write(root, "elsewhere/memory.max", "1024\n")
    (root / "sys/fs/cgroup/box").symlink_to(root / "elsewhere")


def digits_5000(root: Path) -> None:
    unified(root, "0::/box\n")
    write(root, "sys/fs/cgroup/box/cpu.max", "9" * 5000 + " 100000\n")
    write(root, "sys/fs/cgroup/box/memory.max", "9" * 5000 + "\n")
    memlock(root, "9" * 5000, "unlimited")


def digits_300(root: Path) -> None:
    unified(root, "0::/box\n")
    write(root, "sys/fs/cgroup/box/cpu.max", "100000 " + "9" * 300 + "\n")
    memlock(root, "9" * 300, "9" * 300)


def negative(root: Path) -> None:
    write(root, "proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n")
    write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-5\n")
    write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    write(root, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "-4096\n")
    memlock(root, "-1", "-1")


def garbage(root: Path) -> None:
    unified(root, "0::/box\n")
    write(root, "sys/fs/cgroup/box/cpu.max", "lots of CPUs\n")
    write(root, "sys/fs/cgroup/box/memory.max", "plenty\n")
    memlock(root, "８３８８６０８", "8388608")  # fullwidth digits are no number


def zero_period(root: Path) -> None:
    unified(root, "0::/box\n")
    write(root, "sys/fs/cgroup/box/cpu.max", "100000 0\n")


def deep(root: Path) -> None:
    unified(root, "0::" + "/a" * 30_000 + "\n")


def fullwidth_link(root: Path) -> None:
    """An NVIDIA GPU whose link width is written in fullwidth digits ("１６" reads as 16 to int())."""
    _gpu_tree(root, speed="16.0 GT/s PCIe", width="１６", config=_config_with_acs(0))


def shm_loop(root: Path) -> None:
    (root / "dev").mkdir(parents=True)
    (root / "dev/shm").symlink_to(root / "dev/shm")


HOSTILE = [
    dotdot_v2,
    dotdot_v1,
    link_out,
    digits_5000,
    digits_300,
    negative,
    garbage,
    zero_period,
    deep,
    shm_loop,
]


# --------------------------------------------------------------------------- cgroup paths


@pytest.mark.parametrize("fixture", [dotdot_v2, dotdot_v1, link_out], ids=lambda f: f.__name__)
def test_a_cgroup_path_out_of_the_mount_is_unread_with_why(tmp_path, fixture):
    fixture(tmp_path)
    facts = node_facts(tmp_path)
    assert "cpu_quota" not in facts  # the planted 0.001 CPUs is not believed
    assert "cgroup mount" in facts["unread"]["cpu_quota"]
    cgroup = memory.read(tmp_path)["cgroup"]
    assert "limit_bytes" not in cgroup and "cgroup mount" in cgroup["unread"]


def test_a_cgroup_path_inside_the_mount_with_a_link_that_stays_inside_is_read(tmp_path):
    unified(tmp_path, "0::/alias/box\n")
    write(tmp_path, "sys/fs/cgroup/real/box/cpu.max", "250000 100000\n")
    (tmp_path / "sys/fs/cgroup/alias").symlink_to(tmp_path / "sys/fs/cgroup/real")
    assert node_facts(tmp_path)["cpu_quota"] == {"version": 2, "cpus": 2.5}


def test_a_30000_level_path_is_refused_in_one_pass_well_within_the_deadline(tmp_path):
    deep(tmp_path)
    started = time.perf_counter()
    facts = node_facts(tmp_path)
    cgroup = memory.read(tmp_path)["cgroup"]
    # Idle it takes milliseconds; split per level it took 16 s, past the 5 s probe deadline.
    assert time.perf_counter() - started < 2.5
    assert "PATH_MAX" in facts["unread"]["cpu_quota"] and "PATH_MAX" in cgroup["unread"]


def test_ancestors_are_each_level_deepest_first():
    assert memory.ancestors("/a/b/c") == ["a/b/c", "a/b", "a", ""]
    assert memory.ancestors("/") == [""]


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("fixture", "why"),
    [
        (digits_5000, "5000 digits is too long"),
        (digits_300, "300 digits is too long"),
        (negative, "not a whole number"),
        (garbage, "expected a quota and a period"),
        (zero_period, "a period of 0"),
    ],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_a_quota_that_is_no_number_in_range_is_unknown_never_no_quota(tmp_path, fixture, why):
    fixture(tmp_path)
    facts = node_facts(tmp_path)
    assert "cpu_quota" not in facts and why in facts["unread"]["cpu_quota"]


@pytest.mark.parametrize("fixture", [digits_5000, digits_300, negative, garbage], ids=lambda f: f.__name__)
def test_a_locked_memory_limit_that_is_no_number_is_unknown_never_unlimited(tmp_path, fixture):
    fixture(tmp_path)
    facts = node_facts(tmp_path)
    assert "memlock" not in facts and "Max locked memory" in facts["unread"]["memlock"]


@pytest.mark.parametrize("fixture", [digits_5000, negative, garbage], ids=lambda f: f.__name__)
def test_a_memory_limit_that_is_no_number_is_unknown_never_no_limit(tmp_path, fixture):
    fixture(tmp_path)
    cgroup = memory.read(tmp_path)["cgroup"]
    assert "limit_bytes" not in cgroup and cgroup["unread"]


@pytest.mark.parametrize(
    ("cpu_max", "cpus"),
    [("1000 1000000", 0.001), ("1 1000000", 1e-06), ("7 3000000", 2.33e-06), ("150000 100000", 1.5)],
)
def test_a_tiny_positive_quota_is_never_0_cpus(tmp_path, cpu_max, cpus):
    unified(tmp_path, "0::/box\n")
    write(tmp_path, "sys/fs/cgroup/box/cpu.max", cpu_max + "\n")
    assert node_facts(tmp_path)["cpu_quota"] == {"version": 2, "cpus": cpus}


def test_a_v1_quota_of_minus_one_is_no_quota_and_0_is_unknown(tmp_path):
    write(tmp_path, "proc/self/cgroup", "4:cpu:/\n")
    write(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    write(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    assert node_facts(tmp_path)["cpu_quota"] == {"version": 1, "cpus": None}
    write(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "0\n")
    assert "quota of 0" in node_facts(tmp_path)["unread"]["cpu_quota"]


def test_a_link_width_that_is_no_ascii_number_is_unknown(tmp_path):
    fullwidth_link(tmp_path)
    (link,) = node_facts(tmp_path)["pci_links"]
    assert link["current_width"] is None and link["max_width"] == 16


# --------------------------------------------------------------------------- /dev/shm


def test_a_dev_shm_link_loop_is_unread_not_absent(tmp_path):
    shm_loop(tmp_path)
    facts = node_facts(tmp_path)
    assert "shm" not in facts and "symbolic links" in facts["unread"]["shm"]


def test_a_dev_shm_link_to_nothing_is_absent(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/shm").symlink_to(tmp_path / "gone")
    assert node_facts(tmp_path)["shm"] == {"present": False}


# --------------------------------------------------------------------------- reads back


@pytest.mark.parametrize("fixture", HOSTILE, ids=lambda f: f.__name__)
def test_doctor_json_of_every_hostile_node_reads_back_as_facts(tmp_path, fixture):
    root = tmp_path / "root"
    root.mkdir()
    fixture(root)
    collected = collect(
        names=("platform", "node"),
        probes={
            "platform": lambda: platform.probe(root=root, environ={}, system="Linux"),
            "node": lambda: node.probe(root, environ={}),
        },
    )
    assert {result.status for result in collected.results.values()} == {"ok"}
    facts = node.with_probe_statuses(collected.facts, collected.statuses)
    report = tmp_path / "report.json"
    report.write_text(to_json(build_report(facts, collected.statuses, None)), encoding="utf-8")
    loaded = load_machine_file(report).facts  # the facts schema and the 64-bit bound, as --facts reads
    assert loaded["node"].get("unread") == facts["node"].get("unread")
    assert json.loads(report.read_text(encoding="utf-8"))["facts"]["memory"] == loaded["memory"]
