"""Doctor's vendor rows: each vendor's row is drawn by its device plug-in, there where the vendor
has something to say (render/device_rows.py); the gpu row says "no GPU" only where no plug-in
sees one.

The machines are recorded replays (tests/fixtures/facts/README.md and tests/corpus/cases.toml name
each source); the probe statuses are the ones a live probe reports.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, ROOT
from hwcheck import devices
from hwcheck.cli import main
from hwcheck.render.device_rows import vendor_row

CASES = ROOT / "tests/corpus/cases"
FILE = {"status": "file", "reason": "read from a file"}


def replay(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_built_in_vendor_draws_its_own_row():
    built_in = [plugin for plugin in devices.PLUGINS if plugin.name in devices.BUILT_IN]
    assert all(plugin.doctor_row is not None and plugin.doctor_label for plugin in built_in)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # An MI300X node: the AMD GPUs on the amd row, and no gpu row saying NVIDIA has none.
        (
            FIXTURES / "facts/mi300x-x8-torch251-rocm62.json",
            {"amd": "8× AMD Instinct MI300X (gfx942, 192 GiB)"},
        ),
        (FIXTURES / "facts/apple-m2max-macos152-tf217-metal110.json", {"apple": "Apple M2 Max; macOS 15.2"}),
        (FIXTURES / "facts/max1100-torch27-xpu.json", {"intel": "Intel(R) Data Center GPU Max 1100"}),
        # A Jetson's integrated GPU is the NVIDIA plug-in's, though NVML lists none.
        (FIXTURES / "facts/jetson-orin-nx-jp62-torch260-cu126.json", {"gpu": "Orin (nvgpu) (CC 8.7)"}),
        # A CPU machine whose GPU probe found none: one plain statement.
        (CASES / "cpu-celeron-n4505-no-avx-tf212.json", {"gpu": "no GPU"}),
    ],
)
def test_each_vendor_with_devices_has_its_row_and_no_other(path, expected):
    facts = replay(path)
    drawn = {name: vendor_row(name, facts, FILE) for name in ("gpu", "amd", "apple", "intel")}
    shown = {name: text for name, text in drawn.items() if text}
    assert shown.keys() == expected.keys()
    for name, start in expected.items():
        assert shown[name].startswith(start)


def test_a_probe_that_failed_says_why_on_its_row():
    facts = replay(FIXTURES / "facts/h100-anchor-torch211.json")
    failed = {"status": "error", "reason": "KFD topology unreadable: permission denied"}
    assert vendor_row("amd", facts, failed) == "KFD topology unreadable: permission denied"
    assert vendor_row("amd", facts, {"status": "absent", "reason": "no /sys/class/kfd"}) == ""


def test_the_gpu_probes_reason_is_kept_only_where_no_plug_in_sees_a_gpu():
    absent = {"status": "absent", "reason": "no NVIDIA GPU (NVML: libnvidia-ml.so.1 not found)"}
    cpu = replay(CASES / "cpu-celeron-n4505-no-avx-tf212.json")
    assert vendor_row("gpu", cpu, absent) == absent["reason"]
    assert vendor_row("gpu", replay(FIXTURES / "facts/mi300x-x8-torch251-rocm62.json"), absent) == ""
    # Not read at all: unknown, so nothing is claimed.
    assert vendor_row("gpu", {k: v for k, v in cpu.items() if k != "gpus"}, FILE) == ""


def test_a_gpu_of_a_vendor_without_a_plug_in_is_listed_on_the_gpu_row():
    facts = replay(CASES / "cpu-celeron-n4505-no-avx-tf212.json")
    # No recorded machine has one: the vendor key is one no plug-in claims, which is the point.
    facts["gpus"] = [{"index": 0, "vendor": "unclaimed", "name": "Unclaimed GPU"}] * 2
    assert vendor_row("gpu", facts, FILE) == "2× Unclaimed GPU"


def test_the_doctor_report_draws_the_rows(capsys):
    assert main(["doctor", "--facts", str(FIXTURES / "facts/mi300x-x8-torch251-rocm62.json")]) == 0
    labels = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("≡ ")]
    assert "amd" in labels and "gpu" not in labels and "tpu" not in labels
