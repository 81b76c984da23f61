"""The CPU probe on real /proc/cpuinfo dumps and py-cpuinfo outputs, and its failure modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwcheck.base.errors import InputError
from hwcheck.facts import validate_facts
from hwcheck.probes import ERROR, OK, cpu

CPUINFO = Path(__file__).parent / "fixtures" / "cpuinfo"
THIS_VM = CPUINFO / "intel-sapphirerapids-class-vm-hwcheck-dev.txt"
ROOT = Path(__file__).parent.parent

# file -> (arch, vendor, model, flags it must have, flags it must not have)
DUMPS = {
    "intel-ivybridge-xeon-e5-2650v2.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) CPU E5-2650 v2 @ 2.60GHz",
        {"avx", "f16c", "sse4_2"},
        {"avx2", "fma", "avx512f"},
    ),
    "intel-haswell-xeon-e5-2680v3.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz",
        {"avx", "avx2", "fma"},
        {"avx512f", "avx512_bf16", "amx_tile"},
    ),
    "intel-broadwell-xeon-e5-2690v4.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) CPU E5-2690 v4 @ 2.60GHz",
        {"avx2", "fma", "adx"},
        {"avx512f"},
    ),
    "intel-skylake-sp-xeon-gold-6132.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) Gold 6132 CPU @ 2.60GHz",
        {"avx2", "avx512f", "avx512bw", "avx512vl"},
        {"avx512_vnni", "avx512_bf16"},
    ),
    "intel-cascadelake-xeon-platinum-8260m.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) Platinum 8260M CPU @ 2.40GHz",
        {"avx512f", "avx512_vnni"},
        {"avx512_bf16", "amx_tile"},
    ),
    "intel-sapphirerapids-xeon-platinum-8480plus.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) Platinum 8480+",
        {"avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"},
        set(),
    ),
    "intel-sapphirerapids-class-vm-hwcheck-dev.txt": (
        "x86_64",
        "GenuineIntel",
        "Intel(R) Xeon(R) Processor",
        {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"},
        {"amx_fp16"},
    ),
    "amd-k10-opteron-6136-no-avx.txt": (
        "x86_64",
        "AuthenticAMD",
        "AMD Opteron(tm) Processor 6136",
        {"sse2", "sse4a", "lm"},
        {"avx", "avx2", "fma", "sse4_1"},
    ),
    "amd-zen-epyc-7301.txt": (
        "x86_64",
        "AuthenticAMD",
        "AMD EPYC 7301 16-Core Processor",
        {"avx2", "fma"},
        {"avx512f"},
    ),
    "amd-zen3-ryzen9-5950x.txt": (
        "x86_64",
        "AuthenticAMD",
        "AMD Ryzen 9 5950X 16-Core Processor",
        {"avx2", "fma", "vaes"},
        {"avx512f", "avx512_bf16"},
    ),
    "amd-epyc-avx512bf16-vm-hwcheck-dev.txt": (
        "x86_64",
        "AuthenticAMD",
        "AMD EPYC",
        {"avx512f", "avx512_bf16", "avx512_vnni"},
        {"amx_tile", "amx_bf16", "avx512_fp16"},
    ),
    "amd-zen4-epyc-9654.txt": (
        "x86_64",
        "AuthenticAMD",
        "AMD EPYC 9654 96-Core Processor",
        {"avx512f", "avx512_bf16", "avx512_vnni"},
        {"amx_tile", "amx_bf16", "avx512_fp16"},
    ),
    "arm-graviton2-neoverse-n1.txt": (
        "aarch64",
        "ARM",
        "Neoverse-N1",
        {"asimd", "asimddp", "fphp"},
        {"sve", "bf16", "i8mm"},
    ),
    "arm-graviton3-neoverse-v1.txt": (
        "aarch64",
        "ARM",
        "Neoverse-V1",
        {"asimd", "sve", "bf16", "i8mm", "svebf16"},
        {"sve2"},
    ),
    "arm-neoverse-v2.txt": (
        "aarch64",
        "ARM",
        "Neoverse-V2",
        {"sve", "sve2", "bf16", "i8mm"},
        set(),
    ),
    "apple-m1-asahi-linux.txt": (
        "aarch64",
        "Apple",
        "Icestorm-M1",
        {"asimd", "fphp"},
        {"bf16", "sve", "i8mm"},
    ),
    "ibm-power9.txt": ("ppc64", "IBM", "POWER9, altivec supported", set(), set()),
}


def test_every_dump_in_the_folder_is_covered():
    assert {path.name for path in CPUINFO.glob("*.txt")} == set(DUMPS)


@pytest.mark.parametrize("name", sorted(DUMPS))
def test_dump_yields_its_cpu(name):
    arch, vendor, model, has, lacks = DUMPS[name]
    facts = cpu.load_cpuinfo(CPUINFO / name)
    assert (facts["arch"], facts["vendor"], facts["model"]) == (arch, vendor, model)
    assert has <= set(facts["flags"])
    assert not lacks & set(facts["flags"])
    assert facts["flags"] == sorted(set(facts["flags"]))
    assert facts["source"] == str(CPUINFO / name)
    validate_facts({"schema_version": 1, "cpu": facts}, name)


def test_this_vm_keeps_every_flag_and_counts_both_cpus():
    facts = cpu.load_cpuinfo(THIS_VM)
    flags_line = next(line for line in THIS_VM.read_text().splitlines() if line.startswith("flags"))
    assert facts["flags"] == sorted(set(flags_line.split(":", 1)[1].split()))
    assert {"constant_tsc", "hypervisor", "arch_capabilities"} <= set(facts["flags"])
    assert facts["logical_cpus"] == 2


def test_power9_has_no_flags_line_and_gives_no_flags():
    facts = cpu.load_cpuinfo(CPUINFO / "ibm-power9.txt")
    assert facts["flags"] == []
    assert facts["logical_cpus"] == 1


def test_flags_are_matched_as_whole_tokens():
    # Apple's AMX is reported as amx_version-style names: not Intel's amx_tile/amx_bf16.
    facts = cpu.parse_cpuinfo("processor\t: 0\nvendor_id\t: X\nflags\t\t: lm avx2 amx_version\n")
    assert facts["flags"] == ["amx_version", "avx2", "lm"]
    assert "amx_tile" not in facts["flags"] and "avx" not in facts["flags"]


def test_a_flag_counts_only_when_every_cpu_has_it():
    text = THIS_VM.read_text()
    first, second = text.split("\n\n", 1)
    second = second.replace(" amx_tile", "", 1)
    facts = cpu.parse_cpuinfo(first + "\n\n" + second)
    assert "amx_tile" not in facts["flags"]
    assert "amx_bf16" in facts["flags"]


def test_machine_name_overrides_the_inferred_arch():
    text = (CPUINFO / "ibm-power9.txt").read_text()
    assert cpu.parse_cpuinfo(text)["arch"] == "ppc64"
    assert cpu.parse_cpuinfo(text, machine="ppc64le")["arch"] == "ppc64le"


def test_unknown_arm_part_and_implementer_are_described_raw():
    text = (CPUINFO / "arm-graviton2-neoverse-n1.txt").read_text()
    unknown_part = cpu.parse_cpuinfo(text.replace("0xd0c", "0xfff"))
    assert (unknown_part["vendor"], unknown_part["model"]) == ("ARM", "ARM part 0xfff")
    unknown_vendor = cpu.parse_cpuinfo(text.replace("0x41", "0x99"))
    assert unknown_vendor["vendor"] is None
    assert unknown_vendor["model"] == "CPU implementer 0x99 part 0xd0c"


# --- load_cpuinfo: every way a --cpuinfo FILE can be unusable -----------------------------


def test_missing_file_is_an_input_error_naming_it(tmp_path):
    path = tmp_path / "nope.txt"
    with pytest.raises(InputError) as caught:
        cpu.load_cpuinfo(path)
    assert str(caught.value) == f"{path}: no such file"


def test_binary_file_is_an_input_error(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe" * 20)
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 8\)") as caught:
        cpu.load_cpuinfo(path)
    assert caught.value.source == str(path)


def test_empty_file_is_an_input_error(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n  \n")
    with pytest.raises(InputError, match="empty file"):
        cpu.load_cpuinfo(path)


def test_text_that_is_not_cpuinfo_is_an_input_error(tmp_path):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"schema_version": 1, "cpu": {"arch": "x86_64"}}, indent=2))
    with pytest.raises(InputError, match="not a /proc/cpuinfo dump"):
        cpu.load_cpuinfo(path)


def test_huge_file_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "MAX_CPUINFO_BYTES", 1024)
    path = tmp_path / "dataset.bin"
    path.write_text(THIS_VM.read_text())  # 2.7 kB
    with pytest.raises(InputError, match="larger than"):
        cpu.load_cpuinfo(path)


def test_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        cpu.load_cpuinfo(tmp_path)


def test_unreadable_file_is_an_input_error(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(THIS_VM.read_text())
    _deny(monkeypatch, path)
    with pytest.raises(InputError) as caught:
        cpu.load_cpuinfo(path)
    assert str(caught.value) == f"{path}: cannot read: Permission denied"


# --- probe() ----------------------------------------------------------------------------


@pytest.mark.host("proc_cpuinfo")
def test_probe_reads_this_machines_proc_cpuinfo():
    result = cpu.probe()
    assert result.status == OK
    facts = result.facts["cpu"]
    assert facts["source"] == "/proc/cpuinfo"
    assert facts["arch"] == os.uname().machine
    assert facts["flags"] == cpu.load_cpuinfo("/proc/cpuinfo")["flags"]
    assert facts["logical_cpus"] >= 1


def test_probe_reports_unreadable_cpuinfo_as_error(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(THIS_VM.read_text())
    _deny(monkeypatch, path)
    result = cpu.probe(path, system="linux")
    assert (result.status, result.facts) == (ERROR, {})
    assert result.reason == f"{path}: cannot read: Permission denied"


def test_probe_reports_missing_and_empty_cpuinfo_as_error(tmp_path):
    missing = cpu.probe(tmp_path / "cpuinfo", system="linux")
    assert (missing.status, missing.reason) == (ERROR, f"{tmp_path / 'cpuinfo'}: no such file")
    (tmp_path / "empty").write_text("")
    empty = cpu.probe(tmp_path / "empty", system="linux")
    assert empty.status == ERROR and "empty file" in empty.reason


@pytest.mark.host("linux")
def test_probe_never_imports_py_cpuinfo_on_linux():
    code = "import sys; from hwcheck.probes import cpu; cpu.probe(); print('cpuinfo' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    assert out.strip() == "False"


# --- py-cpuinfo, the fallback off Linux --------------------------------------------------


def _recorded(name):
    return json.loads((CPUINFO / name).read_text())


def test_py_cpuinfo_flags_are_renamed_to_the_kernels():
    recorded = _recorded("pycpuinfo-linux-sapphirerapids-class-vm-hwcheck-dev.json")
    facts = cpu.from_py_cpuinfo(recorded)
    kernel = set(cpu.load_cpuinfo(THIS_VM)["flags"])
    # After renaming, py-cpuinfo's CPUID names collapse onto the kernel's; only
    # osxsave (an OS bit the kernel does not list) is left over.
    assert set(facts["flags"]) - kernel == {"osxsave"}
    assert kernel <= set(facts["flags"])
    assert (facts["arch"], facts["vendor"], facts["logical_cpus"]) == ("x86_64", "GenuineIntel", 2)
    assert facts["source"] == "py-cpuinfo"


def test_py_cpuinfo_cpuid_reader_as_on_windows():
    facts = cpu.from_py_cpuinfo(_recorded("pycpuinfo-cpuid-sapphirerapids-class-vm-hwcheck-dev.json"))
    flags = set(facts["flags"])
    assert {"avx512_vnni", "avx512_vbmi2", "sha_ni", "rdrand", "tsc_deadline_timer"} <= flags
    assert not {"avx512vnni", "rdrnd", "sha"} & flags
    # Its CPUID reader has no leaf for these, so off Linux AMX stays unseen.
    assert not {"amx_tile", "amx_bf16", "avx512_bf16"} & flags
    assert "arch" not in facts and "logical_cpus" not in facts


def test_py_cpuinfo_macos_names_are_renamed():
    facts = cpu.from_py_cpuinfo(_recorded("pycpuinfo-darwin-haswell-core-i7-4980hq.json"))
    flags = set(facts["flags"])
    assert {"avx", "avx2", "fma", "pni", "sse4_1", "sse4_2", "fsgsbase", "lm", "nx"} <= flags
    assert not {"avx1.0", "sse4.1", "sse3", "em64t"} & flags
    assert facts["model"] == "Intel(R) Core(TM) i7-4980HQ CPU @ 2.80GHz"


def test_py_cpuinfo_without_flags_leaves_them_unknown():
    facts = cpu.from_py_cpuinfo({"arch_string_raw": "arm64", "brand_raw": "Apple M1 Pro", "count": 8})
    assert facts == {
        "arch": "aarch64",
        "vendor": None,
        "model": "Apple M1 Pro",
        "source": "py-cpuinfo",
        "logical_cpus": 8,
    }


def test_probe_off_linux_uses_py_cpuinfo(monkeypatch):
    import cpuinfo

    recorded = _recorded("pycpuinfo-darwin-haswell-core-i7-4980hq.json")
    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: recorded)
    result = cpu.probe(system="darwin")
    assert result.status == OK
    assert result.facts["cpu"] == cpu.from_py_cpuinfo(recorded)


def test_probe_off_linux_reports_py_cpuinfo_failure(monkeypatch):
    import cpuinfo

    def broken():
        raise RuntimeError("sysctl not found")

    monkeypatch.setattr(cpuinfo, "get_cpu_info", broken)
    result = cpu.probe(system="win32")
    assert result.status == ERROR
    assert result.reason == "py-cpuinfo failed: RuntimeError: sysctl not found"


def test_probe_off_linux_without_py_cpuinfo(monkeypatch):
    monkeypatch.setitem(sys.modules, "cpuinfo", None)  # makes `import cpuinfo` fail
    result = cpu.probe(system="darwin")
    assert result.status == ERROR
    assert "py-cpuinfo is not installed" in result.reason


def _deny(monkeypatch, denied: Path) -> None:
    """Make opening `denied` fail with EACCES, as chmod 000 does for a non-root user."""
    real_open = os.open

    def open_(path, *args, **kwargs):
        if Path(path) == denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
