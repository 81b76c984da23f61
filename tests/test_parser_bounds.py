"""Parsers that cannot run away: each one's work is bounded by its input's cap, not its content.

A forged file at a reader's cap must be read well inside the probe deadline (5 s), and a
pathological line (a 60 KB Requires-Dist, 4,000 RPATH entries naming one 1 MB string, a
3 GB dpkg line) must cost time and memory in proportion to what is read, which the caps
bound. The time bounds are ten times or more each reader's idle figure (in the comments).
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

from fakes.elf import shared_object

from hwcheck.probes import elf, ldcache
from hwcheck.probes.intel import driver
from hwcheck.probes.site_packages import distributions, requirements

PROBE_DEADLINE = 5.0


def timed(call) -> tuple[object, float]:
    started = time.perf_counter()
    value = call()
    return value, time.perf_counter() - started


def metadata(site: Path, lines: list[str]) -> None:
    folder = site / "torch-2.5.1.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n" + "\n".join(lines) + "\n"
    )


def test_a_60_kb_requires_dist_line_is_parsed_in_linear_time(tmp_path):
    # Runs of 10,000 spaces between words: the old pattern (two adjacent quantifiers that both
    # take spaces) backtracked for 51 s on this line; the hand parser takes ~1 ms.
    hostile = "Requires-Dist: nvidia-cudnn-cu12" + (" " * 10_000 + "x") * 6
    metadata(tmp_path, [hostile, "Requires-Dist: nvidia-cublas-cu12==12.4.5.8; platform_system == 'Linux'"])
    (dist,) = distributions([tmp_path])
    found, seconds = timed(lambda: requirements(dist, starting="nvidia"))
    assert seconds < 1.0
    assert ("nvidia-cublas-cu12", "==12.4.5.8", "platform_system == 'Linux'") in found
    assert ("nvidia-cudnn-cu12", ("x" + " " * 10_000) * 5 + "x", "") in found


def test_requires_dist_values_parse_as_pep_508_writes_them(tmp_path):
    metadata(
        tmp_path,
        [
            "Requires-Dist: nvidia-nccl-cu12 (==2.21.5) ; extra == 'cuda'",
            "Requires-Dist: jax[cuda12-local]>=0.4; python_version >= '3.10'",
            "Requires-Dist: Foo_Bar.baz",
            "Requires-Dist: -bad",
            "Requires-Dist: [only-extras]",
        ],
    )
    (dist,) = distributions([tmp_path])
    assert requirements(dist) == [
        ("nvidia-nccl-cu12", "==2.21.5", "extra == 'cuda'"),
        ("jax", ">=0.4", "python_version >= '3.10'"),
        ("foo-bar-baz", "", ""),
    ]


def test_4000_rpath_entries_naming_one_megabyte_string_stay_within_the_bounds(tmp_path):
    # Unbounded, this file asks for 4,000 x 250,000 = a billion folders.
    folders = ":".join(f"$ORIGIN/d{index}" for index in range(100_000))[: 1024 * 1024 - 4096]
    path = shared_object(tmp_path / "libhostile.so", rpath=folders, rpath_entries=4000)
    dynamic, seconds = timed(lambda: elf.dynamic(path))
    assert dynamic is not None and seconds < 2.0  # ~5 ms idle
    assert 0 < len(dynamic.rpath) <= elf.MAX_SEARCH_DIRS
    assert sum(map(len, dynamic.rpath)) <= elf.MAX_SEARCH_CHARS
    rpath, runpath = elf.search_dirs(dynamic, "/" + "o" * 4000)
    assert rpath and runpath == () and sum(map(len, rpath)) <= elf.MAX_SEARCH_CHARS
    assert rpath[0] == "/" + "o" * 4000 + "/d0"


def test_a_needed_name_is_cut_at_path_max(tmp_path):
    path = shared_object(tmp_path / "libx.so", needed=("lib" + "x" * 100_000,), soname="libx.so")
    dynamic = elf.dynamic(path)
    assert dynamic is not None and dynamic.soname == "libx.so"
    assert len(dynamic.needed[0]) == elf.MAX_NAME_BYTES


def _forged_cache(size: int) -> bytes:
    """A cache at `size` bytes whose MAX_ENTRIES entries point at distinct places in long strings."""
    count = ldcache.MAX_ENTRIES
    header = 48 + 24 * count
    # Strings of 4,000 bytes that are not UTF-8: each entry's name and path is a different
    # tail of one of them, decoded (with replacement characters) one by one.
    strings = b"libcudnn.so.9\0" + (b"\xff" * 3999 + b"\0") * ((size - header) // 4000)
    entries = b"".join(
        struct.pack("<iIIIQ", 0x303, header + (index * 7) % (len(strings) - 1), header + index * 13, 0, 0)
        for index in range(count)
    )
    data = b"glibc-ld.so.cache1.1" + struct.pack("<II", count, len(strings)) + bytes(20) + entries + strings
    return data[:size]


def test_a_forged_loader_cache_at_its_cap_is_read_inside_the_probe_deadline(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(_forged_cache(ldcache.MAX_CACHE_BYTES))
    # The old reader took 10 s at a quarter of this size, on a loaded VM; this one takes ~0.3 s
    # (counting what it searches and decodes stops it).
    found, seconds = timed(lambda: ldcache.entries(cache))
    assert seconds < PROBE_DEADLINE
    filtered, _ = timed(lambda: ldcache.entries(cache, prefixes=("libcudnn",)))
    assert set(filtered) <= {"libcudnn.so.9"} and set(filtered) <= set(found)
    # A tenth of the work takes about a tenth of the time (generously: not more than the whole).
    small = tmp_path / "small.cache"
    small.write_bytes(_forged_cache(ldcache.MAX_CACHE_BYTES // 10))
    _, small_seconds = timed(lambda: ldcache.entries(small))
    assert small_seconds <= seconds * 10 + 0.5


def test_the_dpkg_reader_stops_at_its_cap_without_holding_a_long_line(tmp_path, monkeypatch):
    monkeypatch.setattr(driver, "MAX_STATUS_BYTES", 1024 * 1024)
    status = tmp_path / "var" / "lib" / "dpkg" / "status"
    status.parent.mkdir(parents=True)
    first = b"Package: libze1\nStatus: install ok installed\nVersion: 1.28.2-2\n\n"
    after = b"\n\nPackage: intel-opencl-icd\nStatus: install ok installed\nVersion: 25.1\n\n"
    status.write_bytes(first + b"Description: " + b"x" * (8 * 1024 * 1024) + after)
    tracemalloc.start()
    try:
        found = driver.dpkg_versions(str(tmp_path), ["libze1", "intel-opencl-icd"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The package past the cap is not read; the 8 MB line was never held whole.
    assert found == {"libze1": "1.28.2-2"}
    assert peak < 256 * 1024
