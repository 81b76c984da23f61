"""/etc/ld.so.cache at its cap of 200,000 entries: read, and searched by the CUDA probe, inside
the 5 s probe deadline.

A forged cache listing one library name 200,000 times (each at another folder) once handed the
CUDA probe 96,000 folders to search (11 s on a 2-core VM); ldconfig lists a name a handful of
times at most, so at most MAX_PATHS_PER_NAME paths are kept per name, the first ones (ld.so
takes the first that fits).
"""

from __future__ import annotations

import struct

import pytest
from test_parser_bounds import PROBE_DEADLINE, timed

from hwcheck.probes import ldcache
from hwcheck.probes.nvidia import cuda


def one_name_everywhere(count: int) -> bytes:
    """A glibc-ld.so.cache1.1 cache whose `count` entries all name libcudnn.so.9, each in its own folder."""
    header = 48 + 24 * count
    strings = bytearray(b"libcudnn.so.9\0")
    entries = []
    for index in range(count):
        entries.append(struct.pack("<iIIIQ", 0x303, header, header + len(strings), 0, 0))
        strings += f"/opt/l{index}/libcudnn.so.9\0".encode()
    counts = struct.pack("<II", count, len(strings))
    return b"glibc-ld.so.cache1.1" + counts + bytes(20) + b"".join(entries) + bytes(strings)


def test_at_the_cap_the_cache_and_the_cuda_probe_fit_the_deadline(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(one_name_everywhere(ldcache.MAX_ENTRIES))
    found, read_seconds = timed(lambda: ldcache.entries(cache, prefixes=tuple(cuda.LIBRARIES.values())))
    assert found == {"libcudnn.so.9": [f"/opt/l{n}/libcudnn.so.9" for n in range(ldcache.MAX_PATHS_PER_NAME)]}
    result, probe_seconds = timed(lambda: cuda.probe(ld_cache=found, environ={}, search_paths=[tmp_path]))
    assert result.status in ("ok", "absent")
    # Measured on a loaded 2-core VM: 0.34 s and 0.02 s; the deadline is the probe's own.
    assert read_seconds + probe_seconds < PROBE_DEADLINE


def test_just_over_the_cap_the_cache_is_not_read(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(one_name_everywhere(ldcache.MAX_ENTRIES + 1))
    assert ldcache.entries(cache) == {}


@pytest.mark.parametrize("listed", [1, ldcache.MAX_PATHS_PER_NAME, ldcache.MAX_PATHS_PER_NAME + 1])
def test_a_name_keeps_its_first_paths_in_order_without_repeats(tmp_path, listed):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(one_name_everywhere(listed))
    paths = ldcache.entries(cache)["libcudnn.so.9"]
    assert paths == [f"/opt/l{n}/libcudnn.so.9" for n in range(min(listed, ldcache.MAX_PATHS_PER_NAME))]
