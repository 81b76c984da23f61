"""The memory probe's reads never block and keep only figures the facts can carry.

memory.max and the other cgroup files are read with base/inputs.read_head (O_NONBLOCK, regular
files only): a FIFO in their place is an unreadable file, not a hung platform probe. Numbers
are ASCII digits within the 64-bit bound (base/numbers), at the cap and just over it.
"""

from __future__ import annotations

import os

import pytest
from test_nonblocking_reads import fifo, finishes

from hwcheck.base.numbers import MAX_INTEGER
from hwcheck.probes import memory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIFOs and cgroups are POSIX")


def write(root, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def v2(tmp_path, limit: str = "8589934592\n"):
    write(tmp_path, "proc/meminfo", "MemTotal: 24684092 kB\nMemAvailable: 22775716 kB\n")
    write(tmp_path, "proc/self/cgroup", "0::/pod/box\n")
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "memory\n")
    write(tmp_path, "sys/fs/cgroup/pod/memory.max", limit)
    write(tmp_path, "sys/fs/cgroup/pod/box/memory.max", "max\n")


def test_a_fifo_as_memory_max_is_unreadable_and_the_rest_stands(tmp_path):
    v2(tmp_path)
    pipe = fifo(tmp_path / "sys/fs/cgroup/pod/box/memory.max")
    facts = finishes(lambda: memory.read(tmp_path), pipe)
    assert facts["total_bytes"] == 24684092 * 1024
    assert facts["cgroup"] == {"version": 2, "limit_bytes": 8589934592}


def test_a_fifo_as_meminfo_or_the_membership_is_unreadable(tmp_path):
    v2(tmp_path)
    pipes = [fifo(tmp_path / "proc/meminfo"), fifo(tmp_path / "proc/self/cgroup")]
    assert finishes(lambda: memory.read(tmp_path), *pipes) == {}


@pytest.mark.parametrize(
    ("limit", "read"),
    [
        (str(MAX_INTEGER), MAX_INTEGER),  # the cap
        ("max", None),  # none set anywhere along the path: no limit (known)
    ],
    ids=["cap", "max"],
)
def test_a_limit_is_read_within_the_integer_bound(tmp_path, limit, read):
    v2(tmp_path, limit + "\n")
    assert memory.read(tmp_path)["cgroup"]["limit_bytes"] == read


@pytest.mark.parametrize(
    ("limit", "why"),
    [
        (str(MAX_INTEGER + 1), "too large"),  # just over: no limit this probe can carry
        ("９９９", "not a whole number"),  # fullwidth digits are not a number
        ("1" * 5000, "5000 digits is too long"),
        ("-1", "not a whole number"),
        ("unlimited", "not a whole number"),  # v2 writes "max", nothing else, for none
    ],
    ids=["just-over", "fullwidth", "5000-digits", "negative", "garbage"],
)
def test_a_limit_that_is_no_number_is_unknown_with_why_never_no_limit(tmp_path, limit, why):
    v2(tmp_path, limit + "\n")
    cgroup = memory.read(tmp_path)["cgroup"]
    assert "limit_bytes" not in cgroup and why in cgroup["unread"]
    assert memory.usable({"total_bytes": 1 << 40, "cgroup": cgroup}) == (None, None)


def test_meminfo_figures_beyond_the_bound_are_left_out(tmp_path):
    at_cap = MAX_INTEGER // 1024
    write(tmp_path, "proc/meminfo", f"MemTotal: {at_cap} kB\nMemAvailable: {at_cap + 1} kB\n")
    assert memory.read(tmp_path) == {"total_bytes": at_cap * 1024}
