"""The architectures of a CUDA library, read from its fat binaries: a real nvcc-built library, laid-out
ones, damaged ones, the cache, the probe, and what the kernel checks make of a list read from files."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fakes.fatbin import ELF, PTX, elf_with_section, entry, fatbin

from hwcheck import recommend_policy
from hwcheck.base import tables
from hwcheck.probes.nvidia import builds
from hwcheck.probes.nvidia.fatbin import architectures, cached_architectures

FIXTURES = Path(__file__).parent / "fixtures" / "fatbin"
# nvcc 13.0 -shared -cudart none -gencode arch=compute_80,code=sm_80 -gencode arch=compute_87,code=sm_87
# -gencode arch=compute_90,code=compute_90 scale.cu, then strip (tests/fixtures/fatbin/README.md).
REAL = FIXTURES / "nvcc13-sm80-sm87-compute90.so"


def test_a_real_nvcc_library_gives_its_gencode_targets():
    read = architectures(REAL)
    assert read is not None
    assert (read.sm, read.ptx, read.complete) == (("sm_80", "sm_87"), ("compute_90",), True)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc to compile a library here")
def test_a_library_compiled_here_gives_the_targets_it_was_compiled_for(tmp_path):
    source = FIXTURES / "scale.cu"
    library = tmp_path / "libscale.so"
    flags = [
        "-gencode",
        "arch=compute_75,code=sm_75",
        "-gencode",
        "arch=compute_120,code=[sm_120,compute_120]",
    ]
    done = subprocess.run(
        [
            "nvcc",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-cudart",
            "none",
            *flags,
            "-o",
            str(library),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"nvcc could not build here: {done.stderr[-200:]}")
    read = architectures(library)
    assert read is not None and (read.sm, read.ptx) == (("sm_75", "sm_120"), ("compute_120",))


def test_the_laid_out_library_reads_as_the_real_one_does(tmp_path):
    # Several fat binaries, 8-byte padding between them, as the linker packs translation units.
    section = fatbin([entry(ELF, 80), entry(ELF, 87)]) + bytes(8) + fatbin([entry(PTX, 90)])
    read = architectures(elf_with_section(tmp_path / "lib.so", section))
    assert read == architectures(REAL)._replace(entries=3)


def test_sm_100_sorts_after_sm_90(tmp_path):
    section = fatbin([entry(ELF, 100), entry(ELF, 90), entry(ELF, 120), entry(PTX, 120)])
    read = architectures(elf_with_section(tmp_path / "lib.so", section))
    assert read is not None and read.sm == ("sm_90", "sm_100", "sm_120")


@pytest.mark.parametrize(
    "section",
    [
        fatbin([entry(ELF, 80)], fat_size=2**62),  # a size far beyond the section
        fatbin([entry(ELF, 5000)]),  # not an SM version
        fatbin([entry(ELF, 80)]) + b"\x55" * 200,  # garbage after it, not padding
    ],
    ids=["huge-size", "bad-arch", "garbage"],
)
def test_damage_gives_an_incomplete_list_never_a_crash(tmp_path, section):
    read = architectures(elf_with_section(tmp_path / "lib.so", section))
    assert read is not None and read.complete is False


def test_files_without_device_code_give_none(tmp_path):
    assert architectures(elf_with_section(tmp_path / "a.so", b"\0" * 16, name=b".text")) is None
    (tmp_path / "b.so").write_bytes(b"not an ELF file at all")
    assert architectures(tmp_path / "b.so") is None
    assert architectures(tmp_path / "missing.so") is None


def test_the_walk_is_cached_by_the_files_signature(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(tmp_path / "cache"))
    # file_signature refuses a file changed in the last two seconds: look from later on.
    monkeypatch.setattr(tables, "_now_ns", lambda: time.time_ns() + 10**10)
    library = elf_with_section(tmp_path / "lib.so", fatbin([entry(ELF, 86)]))
    (tmp_path / "cache").mkdir(mode=0o700)
    assert cached_architectures(str(library)).sm == ("sm_86",)
    calls = []
    monkeypatch.setattr("hwcheck.probes.nvidia.fatbin.architectures", lambda path: calls.append(path))
    assert cached_architectures(str(library)).sm == ("sm_86",)
    assert calls == []  # answered from the cache
    elf_with_section(library, fatbin([entry(ELF, 89), entry(ELF, 90)]))  # reinstalled: a new signature
    cached_architectures(str(library))
    assert calls == [str(library)]


def test_the_probe_reads_torch_from_its_site_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    site = tmp_path / "site"
    (site / "torch-2.9.0.dist-info").mkdir(parents=True)
    (site / "torch-2.9.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.9.0\n")
    (site / "torch" / "lib").mkdir(parents=True)
    shutil.copy(REAL, site / "torch" / "lib" / "libtorch_cuda.so")
    result = builds.probe([str(site)])
    assert result.status == "ok"
    read = result.facts["compiled_arches"]["torch"]
    assert (read["sm"], read["ptx"], read["complete"]) == (["sm_80", "sm_87"], ["compute_90"], True)
    assert builds.probe([str(tmp_path / "empty")]).status == "absent"


# --- the kernel checks prefer the list read from the files ----------------------------------------


def _orin(torch_version: str, compiled: dict | None) -> dict:
    facts = {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "aarch64"},
        "cpu": {"arch": "aarch64"},
        "gpus": [{"index": 0, "vendor": "nvidia", "name": "Orin (nvgpu)", "compute_capability": "8.7"}],
        "nvidia_driver": {"version": "540.4.0", "cuda": "12.6"},
        "frameworks": {"torch": {"version": torch_version, "cuda": "12.6"}},
    }
    if compiled is not None:
        facts["compiled_arches"] = {"torch": compiled}
    return facts


def _errors(facts: dict) -> dict[str, str]:
    return {
        f.id: f.message for f in recommend_policy(facts, framework="torch").findings if f.severity == "error"
    }


def test_a_list_read_from_the_files_that_carries_the_gpu_clears_the_table_verdict():
    # An RTX 5090 (12.0) under 2.6.0+cu126: the table's wheel carries nothing for 12.x; a build whose
    # files carry sm_120 (a local rebuild keeping the version) runs there.
    facts = _orin("2.6.0+cu126", None)
    facts.update(os={"system": "Linux", "machine": "x86_64"}, cpu={"arch": "x86_64"})
    facts["gpus"][0].update(name="NVIDIA GeForce RTX 5090", compute_capability="12.0")
    facts["nvidia_driver"] = {"version": "575.51.03", "cuda": "12.9"}
    assert "torch-no-kernel-image" in _errors(facts)
    facts["compiled_arches"] = {
        "torch": {"sm": ["sm_90", "sm_120"], "ptx": [], "files": ["x"], "complete": True}
    }
    assert "torch-no-kernel-image" not in _errors(facts)


def test_a_list_read_from_the_files_without_the_gpu_is_an_error_citing_the_files():
    read = {"sm": ["sm_90", "sm_100"], "ptx": [], "files": ["x"], "complete": True}
    message = _errors(_orin("2.8.0", read))["torch-no-kernel-image"]
    assert "read from the files" in message and "sm_87" in message


def test_an_incomplete_list_is_not_used():
    read = {"sm": ["sm_90"], "ptx": [], "files": ["x"], "complete": False}
    assert "torch-no-kernel-image" not in _errors(_orin("2.8.0", read))


def test_the_probe_reads_jaxs_cuda_plugin_and_tensorflows_libraries(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    site = tmp_path / "site"
    for dist in ("jax_cuda12_pjrt-0.6.0", "tensorflow-2.18.0"):
        (site / f"{dist}.dist-info").mkdir(parents=True)
    plugin = site / "jax_plugins" / "xla_cuda12" / "xla_cuda_plugin.so"
    plugin.parent.mkdir(parents=True)
    elf_with_section(plugin, fatbin([entry(ELF, 80), entry(ELF, 90), entry(PTX, 120)]))
    library = site / "tensorflow" / "libtensorflow_cc.so.2"
    library.parent.mkdir(parents=True)
    elf_with_section(library, fatbin([entry(ELF, 60), entry(ELF, 70), entry(ELF, 90), entry(PTX, 90)]))
    read = builds.probe([str(site)]).facts["compiled_arches"]
    assert (read["jax"]["sm"], read["jax"]["ptx"]) == (["sm_80", "sm_90"], ["compute_120"])
    assert (read["tensorflow"]["sm"], read["tensorflow"]["ptx"]) == (
        ["sm_60", "sm_70", "sm_90"],
        ["compute_90"],
    )
    assert "torch" not in read


def test_tensorflows_list_read_from_its_files_decides_before_its_build_info():
    facts = {
        "schema_version": 1,
        "os": {"system": "Linux", "machine": "x86_64"},
        "cpu": {"arch": "x86_64"},
        "gpus": [
            {"index": 0, "vendor": "nvidia", "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}
        ],
        "nvidia_driver": {"version": "575.51.03", "cuda": "12.9"},
        "frameworks": {
            "tensorflow": {
                "version": "2.20.0",
                "package": "tensorflow",
                "cuda_build": True,
                "cuda": "12.5.1",
                "cudnn": "9",
                "arch_list": ["sm_60", "sm_70", "sm_80", "sm_89", "sm_120", "compute_120"],
            }
        },
    }
    recommendation = recommend_policy(facts, framework="tensorflow")
    assert not [f for f in recommendation.findings if f.severity == "error"]
    # The libraries themselves carry no sm_120 and no PTX at all: nothing runs on the RTX 5090.
    facts["compiled_arches"] = {
        "tensorflow": {"sm": ["sm_60", "sm_70", "sm_80", "sm_89"], "ptx": [], "complete": True}
    }
    errors = [f for f in recommend_policy(facts, framework="tensorflow").findings if f.severity == "error"]
    assert any("RTX 5090" in f.message and "sm_89" in f.message for f in errors), [f.message for f in errors]
