"""The platform probe: OS, Python, WSL and container detection."""

from __future__ import annotations

import platform
import sys

import pytest

from hwcheck.facts import validate_facts
from hwcheck.probes import OK
from hwcheck.probes import platform as platform_probe

# /proc/version as WSL prints it, quoted in github.com/powersj/whatsthis/issues/10.
WSL1 = (
    "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) "
    "#488-Microsoft Mon Sep 01 13:43:00 PST 2020\n"
)
WSL2 = (
    "Linux version 4.19.128-microsoft-standard (oe-user@oe-host) (gcc version 8.2.0 (GCC)) "
    "#1 SMP Tue Jun 23 12:58:10 UTC 2020\n"
)
# This development VM's /proc/version.
NATIVE = (
    "Linux version 6.18.44-fc-v769 (builder@sandboxing) (gcc (GCC) 15.3.0, "
    "GNU ld (GNU Binutils) 2.46) #1 SMP PREEMPT_DYNAMIC @0\n"
)


def _root(tmp_path, version=NATIVE, markers=()):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "version").write_text(version)
    for marker in markers:
        (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / marker).touch()
    return tmp_path


def _os(tmp_path, environ=None, **root):
    result = platform_probe.probe(root=_root(tmp_path, **root), environ=environ or {}, system="Linux")
    return result.facts["os"]


def test_this_machine():
    result = platform_probe.probe()
    assert result.status == OK
    assert result.facts["python"] == {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
    }
    assert result.facts["os"]["system"] == platform.system()
    assert result.facts["os"]["machine"] == platform.machine()
    validate_facts({"schema_version": 1, **result.facts}, "this machine")


@pytest.mark.parametrize(("version", "wsl"), [(WSL1, True), (WSL2, True), (NATIVE, False)])
def test_wsl_from_proc_version(tmp_path, version, wsl):
    assert _os(tmp_path, version=version)["wsl"] is wsl


def test_wsl_from_its_environment(tmp_path):
    assert _os(tmp_path, environ={"WSL_DISTRO_NAME": "Ubuntu"})["wsl"] is True


def test_no_proc_version_is_not_wsl(tmp_path):
    result = platform_probe.probe(root=tmp_path, environ={}, system="Linux")
    assert result.facts["os"]["wsl"] is False


@pytest.mark.parametrize(
    ("markers", "environ", "container"),
    [
        ((), {}, None),
        ((".dockerenv",), {}, "docker"),
        (("run/.containerenv",), {}, "podman"),
        ((".dockerenv",), {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "kubernetes"),
        ((), {"container": "lxc"}, "lxc"),
    ],
)
def test_container(tmp_path, markers, environ, container):
    assert _os(tmp_path, environ=environ, markers=markers)["container"] == container


def test_wsl_and_containers_are_linux_only(tmp_path):
    root = _root(tmp_path, version=WSL2, markers=(".dockerenv",))
    facts = platform_probe.probe(root=root, environ={"WSL_DISTRO_NAME": "x"}, system="Darwin")
    assert facts.facts["os"]["system"] == "Darwin"
    assert (facts.facts["os"]["wsl"], facts.facts["os"]["container"]) == (False, None)


def test_live_values_match_the_platform_module():
    # The probe avoids importing platform (doctor's latency) but must say the same.
    import platform as stdlib_platform

    from hwcheck.probes.platform import probe as platform_probe

    facts = platform_probe().facts
    assert facts["os"]["system"] == stdlib_platform.system()
    assert facts["os"]["release"] == stdlib_platform.release()
    assert facts["os"]["machine"] == stdlib_platform.machine()
    assert facts["python"]["version"] == stdlib_platform.python_version()
    assert facts["python"]["implementation"] == stdlib_platform.python_implementation()


@pytest.mark.parametrize(
    ("release", "kernel"),
    [
        ("6.18.44-fc-v769", "6.18.44"),  # this development VM
        ("5.15.153.1-microsoft-standard-WSL2", "5.15.153.1"),  # WSL2's kernel
        ("4.18.0-513.el8.x86_64", "4.18.0"),  # RHEL 8
        ("weird", None),
        ("", None),
    ],
)
def test_kernel_version_is_the_releases_leading_numbers(release, kernel):
    assert platform_probe.kernel_version(release) == kernel


def test_glibc_from_the_c_library_itself(monkeypatch):
    monkeypatch.setattr(platform_probe.os, "confstr", lambda name: "glibc 2.35", raising=False)
    assert platform_probe.glibc_version() == "2.35"


def test_another_c_library_is_no_glibc_and_garbage_is_unknown(monkeypatch):
    def unknown_name(name):
        raise ValueError("unrecognized configuration name")

    monkeypatch.setattr(platform_probe.os, "confstr", unknown_name, raising=False)
    assert platform_probe.glibc_version() == ""  # musl: the name is not there
    monkeypatch.setattr(platform_probe.os, "confstr", lambda name: "glibc " + "9" * 500, raising=False)
    assert platform_probe.glibc_version() is None


def test_linux_reports_its_kernel_and_c_library(tmp_path):
    facts = _os(tmp_path)
    assert facts["kernel"] == platform_probe.kernel_version(platform_probe._uname().release)
    assert "glibc" in facts
    validate_facts({"schema_version": 1, "os": facts}, "this machine")
