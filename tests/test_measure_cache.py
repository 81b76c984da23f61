"""doctor --measure's cache: named by the kernel and usable cores, never of a run that measured nothing."""

from __future__ import annotations

import copy
import os
from types import SimpleNamespace

import pytest
from test_doctor_measure import FACTS, TORCH_BLOCK, FakeBench, measure

from hwcheck.commands import Machine
from hwcheck.facts import schema_problem
from hwcheck.measure import advice, machine_load


@pytest.fixture
def fake_bench(monkeypatch):
    """The recorded torch block for every bench, the recorded CPU for every doctor (test_doctor_measure)."""
    import hwcheck.commands.doctor
    import hwcheck.measure.session

    bench = FakeBench()
    monkeypatch.setattr(hwcheck.measure.session, "bench", bench)
    machine = Machine(copy.deepcopy(FACTS), {}, None)
    monkeypatch.setattr(hwcheck.commands.doctor, "read_machine", lambda args: machine)
    return bench


def _failed_everywhere(block: dict) -> dict:
    """The recorded block as a run in which every precision timed out would write it."""
    failed = copy.deepcopy(block)
    for result in failed["results"]:
        result.update(
            status="failed",
            reason="timed out after 10 s, while loading",
            ms_per_step=None,
            steps=0,
            rounds_ms=[],
            noise=None,
            speedup=None,
            peak_memory_mib=None,
            loss=None,
        )
    return failed


class FailingBench(FakeBench):
    """Every precision failed, as under a machine too loaded to load a framework in time."""

    def __call__(self, **options):
        self.calls.append(options)
        return _failed_everywhere(TORCH_BLOCK)


def test_the_failed_block_is_a_valid_bench_block():
    assert schema_problem(_failed_everywhere(TORCH_BLOCK), "bench") is None
    assert not advice.measured_anything(_failed_everywhere(TORCH_BLOCK))
    assert advice.measured_anything(TORCH_BLOCK)


def test_a_run_that_measured_nothing_is_not_remembered(fake_bench, capsys, monkeypatch):
    import hwcheck.measure.session

    failing = FailingBench()
    monkeypatch.setattr(hwcheck.measure.session, "bench", failing)
    first = measure(capsys)
    # Every precision failed: nothing was measured, which is said, and not taken for a tie.
    assert first["recommendation"]["measure"]["status"] == "not measured"
    assert first["recommendation"]["measure"]["reason"].startswith("nothing was measured")
    second = measure(capsys)
    assert second["recommendation"]["measure"]["status"] == "not measured"  # measured again, not reused
    assert len(failing.calls) == 2
    # A run that measured something is remembered as before.
    monkeypatch.setattr(hwcheck.measure.session, "bench", fake_bench)
    measure(capsys)
    assert measure(capsys)["recommendation"]["measure"]["status"] == "reused"
    assert len(fake_bench.calls) <= 1


@pytest.mark.parametrize("change", ["kernel", "cores", "quota"])
def test_another_kernel_or_other_usable_cores_measure_again(fake_bench, capsys, monkeypatch, change):
    measure(capsys)
    assert measure(capsys)["recommendation"]["measure"]["status"] == "reused"
    calls = len(fake_bench.calls)  # 0 or 1: an earlier test may have left this machine's entry
    if change == "kernel":
        release = os.uname().release + "-other"
        monkeypatch.setattr(os, "uname", lambda: SimpleNamespace(release=release))
    else:
        cores, quota = machine_load.usable_cores()
        changed = (
            (cores[:1] if len(cores) > 1 else [*cores, 99], quota) if change == "cores" else (cores, 0.5)
        )
        monkeypatch.setattr(machine_load, "usable_cores", lambda: changed)
    assert measure(capsys)["recommendation"]["measure"]["status"] == "measured"
    assert len(fake_bench.calls) == calls + 1
