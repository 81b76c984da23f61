"""One reader of /proc/self/cgroup for the memory limit (fit) and the CPU quota (doctor's node row).

The membership lines are the formats cgroups(7) documents ("hierarchy-ID:controller-list:path"):
a v2-only host lists "0::/path"; a v1 host one line per hierarchy, controllers joined by commas;
a hybrid (systemd's default before v2) lists both while v2 holds no controller at /sys/fs/cgroup.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwcheck.probes import memory, node

V1 = "12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n1:name=systemd:/docker/abc\n"
HYBRID = "4:memory:/user.slice\n3:cpu,cpuacct:/user.slice\n0::/user.slice/session-1.scope\n"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize(
    ("membership", "unified", "controller", "expected"),
    [
        ("0::/kubepods/pod1/box\n", True, "memory", ("/kubepods/pod1/box", None)),
        ("0::/kubepods/pod1/box\n", True, "cpu", ("/kubepods/pod1/box", None)),
        (V1, False, "memory", (None, "/docker/abc")),
        (V1, False, "cpu", (None, "/docker/abc")),  # in the cpu,cpuacct hierarchy
        (V1, False, "hugetlb", (None, None)),  # a controller the host does not mount
        (HYBRID, False, "memory", (None, "/user.slice")),  # v2 listed, not mounted at the top
        (HYBRID, True, "cpu", ("/user.slice/session-1.scope", "/user.slice")),
        ("garbage without colons\n\n", True, "memory", (None, None)),
    ],
)
def test_cgroup_paths_reads_each_documented_layout(
    tmp_path: Path, membership: str, unified: bool, controller: str, expected: tuple[str | None, str | None]
) -> None:
    write(tmp_path, "proc/self/cgroup", membership)
    if unified:
        write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n")
    assert memory.cgroup_paths(tmp_path, controller) == expected


def test_outside_any_cgroup_both_readers_say_unknown(tmp_path: Path) -> None:
    assert memory.cgroup_paths(tmp_path, "memory") == (None, None)
    assert "cgroup" not in memory.read(tmp_path)
    assert "cpu_quota" not in node.probe(tmp_path, environ={}).facts["node"]


def test_one_hybrid_host_gives_the_memory_limit_and_the_cpu_quota_from_v1(tmp_path: Path) -> None:
    write(tmp_path, "proc/self/cgroup", HYBRID)
    write(tmp_path, "sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes", "4294967296\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_quota_us", "200000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_period_us", "100000\n")
    assert memory.read(tmp_path)["cgroup"] == {"version": 1, "limit_bytes": 4294967296}
    assert node.probe(tmp_path, environ={}).facts["node"]["cpu_quota"] == {"version": 1, "cpus": 2.0}
