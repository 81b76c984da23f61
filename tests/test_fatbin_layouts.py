"""The fat binary walker on a real plugin's section layout, and its header budget at the cap.

jax-cuda12-pjrt's aarch64 plugin separates its fat binaries by up to 248 bytes of zeros
(tests/fixtures/fatbin/jax-cuda12-pjrt-0.7.1-aarch64-layout.json); the walker once searched
only 64 bytes ahead and read 1 of 40. Every header read counts against MAX_HEADERS, a fat
binary's as much as an entry's: ten million empty fat binaries cannot pass a cap on entries.
"""

from __future__ import annotations

import json
import struct

import pytest
from fakes.fatbin import ELF, FATBIN_MAGIC, PTX, elf_with_section, entry, fatbin, laid_out

from conftest import FIXTURES
from hwcheck.probes.nvidia import fatbin as reader

LAYOUT = json.loads((FIXTURES / "fatbin" / "jax-cuda12-pjrt-0.7.1-aarch64-layout.json").read_text())


def test_every_fat_binary_of_the_aarch64_plugin_is_read(tmp_path):
    found = reader.architectures(laid_out(tmp_path / "xla_cuda_plugin.so", LAYOUT))
    assert found is not None and found.complete
    assert found.entries == sum(len(binary[4]) for binary in LAYOUT["fat_binaries"]) == 320
    assert found.sm == ("sm_50", "sm_60", "sm_70", "sm_80", "sm_90", "sm_100", "sm_120")
    assert found.ptx == ("compute_120",)
    gaps = [
        b[0] - (a[0] + a[2] + a[3])
        for a, b in zip(LAYOUT["fat_binaries"], LAYOUT["fat_binaries"][1:], strict=False)
    ]
    assert max(gaps) == 248  # the padding the walker must look past


def test_padding_of_any_length_is_looked_past_and_junk_is_not(tmp_path):
    one = fatbin([entry(ELF, 80)])
    two = fatbin([entry(PTX, 90)])
    for gap in (0, 8, 64, 112, 248, 70_000):
        found = reader.architectures(elf_with_section(tmp_path / f"{gap}.so", one + bytes(gap) + two))
        assert (
            found is not None and found.complete and found.sm == ("sm_80",) and found.ptx == ("compute_90",)
        )
    junk = one + b"\x01" * 112 + two
    found = reader.architectures(elf_with_section(tmp_path / "junk.so", junk))
    assert found is not None and found.ptx == ("compute_90",) and not found.complete


def _empty_fat_binaries(count: int) -> bytes:
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, 0) * count


@pytest.mark.parametrize(("count", "complete"), [(reader.MAX_HEADERS, True), (reader.MAX_HEADERS + 1, False)])
def test_empty_fat_binaries_count_against_the_header_budget(tmp_path, count, complete):
    section = fatbin([entry(ELF, 90)]) + _empty_fat_binaries(count - 2)  # its header and entry are 2
    found = reader.architectures(elf_with_section(tmp_path / "lib.so", section))
    assert found is not None and found.sm == ("sm_90",) and found.complete is complete


def test_the_entries_count_against_the_same_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_HEADERS", 11)
    section = fatbin([entry(ELF, 80 + n) for n in range(10)])  # 1 fat binary header + 10 entries
    assert reader.architectures(elf_with_section(tmp_path / "cap.so", section)).complete
    section = fatbin([entry(ELF, 80 + n) for n in range(11)])
    found = reader.architectures(elf_with_section(tmp_path / "over.so", section))
    assert not found.complete and found.entries == 10


@pytest.mark.parametrize("shape", ["entries", "fat-binaries", "sparse"])
def test_at_its_deadline_the_walk_returns_what_it_read_marked_partial(tmp_path, monkeypatch, shape):
    import time

    from hwcheck.probes.result import OK, TIMEOUT, ProbeResult, as_partial, start_clock

    # 400,000 entries in one fat binary, 400,000 empty fat binaries, or a run of zeros standing
    # in for a sparse 8 GB section (read in 64 KiB blocks): each looks at the clock as it goes.
    monkeypatch.setattr(reader, "CLOCK_EVERY", 4)  # looked at every 4 headers or blocks, not 1,024
    first = fatbin([entry(ELF, 90)])
    rest = {
        "entries": fatbin([entry(PTX, 80)] * (reader.MAX_HEADERS - 3)),
        "fat-binaries": _empty_fat_binaries(reader.MAX_HEADERS - 2),
        "sparse": bytes(reader._SEARCH_BLOCK * 4 * 2) + fatbin([entry(PTX, 80)]),
    }[shape]
    path = elf_with_section(tmp_path / "lib.so", first + rest)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(cache))
    # file_signature refuses a file changed in the last two seconds: look from later on.
    monkeypatch.setattr("hwcheck.base.tables._now_ns", lambda: time.time_ns() + 10**10)
    start_clock(time.perf_counter())  # this probe's share of its deadline is used up
    found = reader.cached_architectures(str(path))
    # What was read before the clock was looked at is kept; the rest is not guessed.
    assert found is not None and found.sm == ("sm_90",) and not found.complete
    assert list(cache.iterdir()) == []  # a walk the deadline cut short is not cached as the file's answer
    marked = as_partial(ProbeResult(OK, {"compiled_arches": {"torch": {"sm": list(found.sm)}}}))
    assert marked.status == TIMEOUT and f"the fat binaries of {path} were read whole" in marked.reason
    assert marked.facts["compiled_arches"]["torch"]["sm"] == ["sm_90"]
    start_clock(None)
    again = reader.cached_architectures(str(path))  # with time: the whole walk, cached
    assert again is not None and again.complete and len(list(cache.glob("*.json"))) == 1
