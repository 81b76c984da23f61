"""The Apple probe: macOS from platform.mac_ver, the chip and unified memory from a real sysctl's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, ERROR, OK, TIMEOUT
from hwcheck.probes.apple import gpu as apple

SYSCTL = FIXTURES / "sysctl"


def fake_sysctl(tmp_path: Path, text: str, *, status: int = 0, delay: float = 0) -> str:
    """An executable that prints `text` as the real sysctl printed it (and exits with `status`)."""
    path = tmp_path / "sysctl"
    data = tmp_path / "sysctl.out"
    data.write_text(text, encoding="utf-8")
    sleep = f"sleep {delay}\n" if delay else ""
    path.write_text(f"#!/bin/sh\n{sleep}cat '{data}'\nexit {status}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def recorded(name: str) -> str:
    return (SYSCTL / name).read_text(encoding="utf-8")


def test_an_m1_mac_mini_has_an_apple_gpu_with_its_unified_memory(tmp_path):
    sysctl = fake_sysctl(tmp_path, recorded("apple-m1-mac-mini.txt"))
    result = apple.probe(system="Darwin", mac_ver=lambda: "14.4.1", sysctl=sysctl)
    assert result.status == OK, result.reason
    assert result.facts == {
        "os": {"macos": "14.4.1"},
        "gpus": [
            {"index": 0, "vendor": "apple", "name": "Apple M1", "memory_mib": 8192, "unified_memory": True}
        ],
    }
    validate_facts({"schema_version": 1, **result.facts}, "apple probe")


def test_an_intel_mac_has_no_apple_gpu_but_keeps_its_macos(tmp_path):
    sysctl = fake_sysctl(tmp_path, recorded("intel-haswell-macbook-pro.txt"))
    result = apple.probe(system="Darwin", mac_ver=lambda: "10.14.6", sysctl=sysctl)
    assert result.status == ABSENT
    assert result.facts == {"os": {"macos": "10.14.6"}}
    assert "Intel(R) Core(TM) i7-4980HQ" in result.reason and "no Apple GPU" in result.reason


def test_off_macos_nothing_runs(tmp_path):
    ran = tmp_path / "ran"
    sysctl = tmp_path / "sysctl"
    sysctl.write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    sysctl.chmod(0o755)
    result = apple.probe(system="Linux", sysctl=str(sysctl))
    assert (result.status, result.facts) == (ABSENT, {})
    assert "not macOS (Linux)" in result.reason
    assert not ran.exists()


def test_the_macos_version_is_the_product_version_not_the_darwin_release(tmp_path):
    # collect_env on pytorch/pytorch#164943 prints 'OS: macOS 13.7.4 (arm64)' from platform.mac_ver();
    # uname there says Darwin 22.x, which is no macOS version.
    sysctl = fake_sysctl(tmp_path, recorded("apple-m1-mac-mini.txt"))
    result = apple.probe(system="Darwin", mac_ver=lambda: "13.7.4", sysctl=sysctl)
    assert result.facts["os"] == {"macos": "13.7.4"}


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ("Apple M1\n", "expected 2 values"),
        ("Apple M1\n８５８９９３４５９２\n", "not a whole number"),
        ("Apple M1\n8589934592\nextra\n", "expected 2 values"),
        ("", "printed nothing"),
    ],
)
def test_garbled_sysctl_output_is_an_error_with_the_reason(tmp_path, output, problem):
    result = apple.probe(system="Darwin", mac_ver=lambda: "14.0", sysctl=fake_sysctl(tmp_path, output))
    assert result.status == ERROR
    assert problem in result.reason
    assert result.facts == {"os": {"macos": "14.0"}}


def test_a_failing_sysctl_is_an_error(tmp_path):
    result = apple.probe(system="Darwin", mac_ver=lambda: "14.0", sysctl=fake_sysctl(tmp_path, "", status=3))
    assert result.status == ERROR and result.reason.startswith("sysctl ")


def test_a_hung_sysctl_is_cut_off_at_the_deadline(tmp_path):
    sysctl = fake_sysctl(tmp_path, recorded("apple-m1-mac-mini.txt"), delay=30)
    result = apple.probe(system="Darwin", mac_ver=lambda: "14.0", sysctl=sysctl, timeout=0.5)
    assert result.status == TIMEOUT
    assert result.seconds is None or result.seconds < 5


def test_an_unknown_macos_version_is_null(tmp_path):
    sysctl = fake_sysctl(tmp_path, recorded("apple-m1-mac-mini.txt"))
    result = apple.probe(system="Darwin", mac_ver=lambda: "", sysctl=sysctl)
    assert result.facts["os"] == {"macos": None}
