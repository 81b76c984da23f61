"""Which cuDNN, cuBLAS, cuSPARSE and NCCL a framework will load: ELF dynamic sections, the loader's
cache, the search order of ld.so(8), and the versions the framework was built against."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from fakes.elf import shared_object

from hwcheck.facts import validate_facts
from hwcheck.probes import elf, frameworks, ldcache
from hwcheck.probes.nvidia import cuda, libraries
from hwcheck.probes.site_packages import distributions, requirements

READELF = shutil.which("readelf")
LDCONFIG = shutil.which("ldconfig") or (
    "/usr/sbin/ldconfig" if os.path.exists("/usr/sbin/ldconfig") else None
)


def dist_info(site: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    directory = site / f"{name.replace('-', '_')}-{version}.dist-info"
    directory.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    (directory / "METADATA").write_text(
        "\n".join(lines) + "\n\nThe description.\nRequires-Dist: not-a-header\n"
    )
    return directory


def library(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF")
    return path


def installed(site: Path) -> dict:
    return {dist.name: dist for dist in distributions([site])}


# --------------------------------------------------------------------------- ELF dynamic sections


def test_the_dynamic_section_gives_needed_names_soname_and_search_paths(tmp_path):
    path = shared_object(
        tmp_path / "libtorch_cuda.so",
        needed=("libcudnn.so.9", "libcublas.so.12"),
        soname="libtorch_cuda.so",
        rpath="$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN",
    )
    dynamic = elf.dynamic(path)
    assert dynamic == elf.Dynamic(
        ("libcudnn.so.9", "libcublas.so.12"),
        "libtorch_cuda.so",
        ("$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN"),
        (),
    )
    rpath, runpath = elf.search_dirs(dynamic, "/site/torch/lib")
    assert rpath == ("/site/torch/lib/../../nvidia/cudnn/lib", "/site/torch/lib") and runpath == ()


def test_runpath_makes_the_loader_ignore_rpath():
    both = elf.Dynamic((), None, ("/rpath",), ("$ORIGIN",))
    assert elf.search_dirs(both, "/lib/here") == ((), ("/lib/here",))


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"not an elf at all" * 10, b"\x7fELF\x01\x01" + bytes(58)])
def test_what_is_not_a_64_bit_elf_object_reads_as_none(tmp_path, data):
    (tmp_path / "lib.so").write_bytes(data)
    assert elf.dynamic(tmp_path / "lib.so") is None
    assert elf.dynamic(tmp_path / "absent.so") is None


@pytest.mark.skipif(READELF is None, reason="binutils' readelf is not installed")
def test_readelf_reads_the_fake_objects_the_same_way(tmp_path):
    path = shared_object(tmp_path / "x.so", needed=("libnccl.so.2",), runpath="$ORIGIN/../lib")
    output = subprocess.run([READELF, "-d", str(path)], capture_output=True, text=True, check=True).stdout
    assert "Shared library: [libnccl.so.2]" in output and "Library runpath: [$ORIGIN/../lib]" in output


@pytest.mark.skipif(READELF is None, reason="binutils' readelf is not installed")
def test_a_real_library_of_this_machine_agrees_with_readelf():
    # libstdc++ or libz: whichever this host has; both are real ELF files laid out by ld.
    candidates = [
        p
        for p in (
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
            "/usr/lib/aarch64-linux-gnu/libstdc++.so.6",
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/lib64/libz.so.1",
        )
        if os.path.exists(p)
    ]
    if not candidates:
        pytest.skip("no system library at the usual paths")
    path = os.path.realpath(candidates[0])
    output = subprocess.run([READELF, "-d", path], capture_output=True, text=True, check=True).stdout
    needed = tuple(line.split("[", 1)[1].rstrip("]") for line in output.splitlines() if "(NEEDED)" in line)
    assert elf.dynamic(path).needed == needed


# --------------------------------------------------------------------------- /etc/ld.so.cache


def _cache_bytes(pairs: list[tuple[str, str]], *, old_prefix: bool = False) -> bytes:
    """A cache in glibc's layout (elf/cache.c): header, 24-byte entries, strings (offsets from the header)."""
    strings = bytearray()
    offsets = []
    header = 48 + 24 * len(pairs)
    for name, target in pairs:
        key = header + len(strings)
        strings.extend(name.encode() + b"\0")
        value = header + len(strings)
        strings.extend(target.encode() + b"\0")
        offsets.append((key, value))
    new = b"glibc-ld.so.cache1.1" + struct.pack("<II", len(pairs), len(strings)) + bytes(4) + bytes(16)
    new += b"".join(struct.pack("<iIIIQ", 0x303, key, value, 0, 0) for key, value in offsets) + bytes(strings)
    if not old_prefix:
        return new
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 0)  # an old table with no entries, then the new one aligned
    return old + bytes((-len(old)) % 8) + new


@pytest.mark.parametrize("old_prefix", [False, True])
def test_the_cache_maps_names_to_paths(tmp_path, old_prefix):
    pairs = [
        ("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
        ("libcudnn.so.9", "/opt/libcudnn.so.9"),
    ]
    (tmp_path / "cache").write_bytes(_cache_bytes(pairs, old_prefix=old_prefix))
    assert ldcache.entries(tmp_path / "cache") == {
        "libcudnn.so.9": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "/opt/libcudnn.so.9"]
    }


@pytest.mark.parametrize("old_prefix", [False, True])
def test_the_cache_read_for_some_names_keeps_only_those(tmp_path, old_prefix):
    pairs = [
        ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
        ("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
        ("libcublasLt.so.12", "/usr/lib/x86_64-linux-gnu/libcublasLt.so.12"),
        ("libcublas.so.12", "/usr/lib/x86_64-linux-gnu/libcublas.so.12"),
        ("libcudnn.so.9", "/opt/libcudnn.so.9"),
    ]
    (tmp_path / "cache").write_bytes(_cache_bytes(pairs, old_prefix=old_prefix))
    everything = ldcache.entries(tmp_path / "cache")
    wanted = ("libcudnn.so.", "libcublas.so.")
    assert ldcache.entries(tmp_path / "cache", prefixes=wanted) == {
        name: paths for name, paths in everything.items() if name.startswith(wanted)
    }
    assert set(everything) == {"libc.so.6", "libcudnn.so.9", "libcublasLt.so.12", "libcublas.so.12"}
    assert ldcache.entries(tmp_path / "cache", prefixes=()) == {}


@pytest.mark.skipif(LDCONFIG is None or not os.path.exists("/etc/ld.so.cache"), reason="no ldconfig or cache")
def test_this_machines_cache_read_for_cuda_names_is_the_full_read_filtered():
    from hwcheck.probes.nvidia.cuda import LIBRARIES

    prefixes = tuple(LIBRARIES.values())
    everything = ldcache.entries()
    assert ldcache.entries(prefixes=prefixes) == {
        name: paths for name, paths in everything.items() if name.startswith(prefixes)
    }


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"glibc-ld.so.cache1.1",
        b"glibc-ld.so.cache1.1" + struct.pack("<II", 10**9, 0) + bytes(24),
        b"ld.so-1.7.0",
    ],
)
def test_a_truncated_or_hostile_cache_reads_as_empty(tmp_path, data):
    (tmp_path / "cache").write_bytes(data)
    assert ldcache.entries(tmp_path / "cache") == {}
    assert ldcache.entries(tmp_path / "absent") == {}


@pytest.mark.skipif(LDCONFIG is None, reason="ldconfig is not installed")
def test_a_cache_written_by_ldconfig_is_read(tmp_path):
    lib = tmp_path / "lib"
    shared_object(lib / "libcudnn.so.9.1.0", soname="libcudnn.so.9")
    (tmp_path / "ld.so.conf").write_text(f"{lib}\n")
    run = subprocess.run(
        [LDCONFIG, "-C", str(tmp_path / "cache"), "-f", str(tmp_path / "ld.so.conf")],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        pytest.skip(f"ldconfig could not write a cache here: {run.stderr.strip()[:200]}")
    assert str(lib / "libcudnn.so.9") in ldcache.entries(tmp_path / "cache")["libcudnn.so.9"]


@pytest.mark.skipif(LDCONFIG is None or not os.path.exists("/etc/ld.so.cache"), reason="no ldconfig or cache")
def test_this_machines_cache_agrees_with_ldconfig_p():
    listed = subprocess.run([LDCONFIG, "-p"], capture_output=True, text=True).stdout
    names = {line.split()[0] for line in listed.splitlines()[1:] if "=>" in line}
    assert set(ldcache.entries()) == names


# --------------------------------------------------------------------------- the copy each framework loads


def test_a_pip_cudnn_torch_wheel_loads_its_pip_copy_before_ld_library_path(tmp_path):
    # torch 2.x pip-cuDNN wheels: DT_RPATH $ORIGIN/../../nvidia/cudnn/lib (pytorch/builder #1150).
    site = tmp_path / "site"
    dist_info(site, "torch", "2.4.1")
    dist_info(site, "nvidia-cudnn-cu12", "9.1.0.70")
    library(site / "nvidia/cudnn/lib/libcudnn.so.9")
    shared_object(
        site / "torch/lib/libtorch_cuda.so",
        needed=("libcudnn.so.9",),
        rpath="$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN",
    )
    old = library(tmp_path / "opt/cudnn-9.0/lib/libcudnn.so.9.0.0")
    (old.parent / "libcudnn.so.9").symlink_to(old.name)
    found = libraries.loaded(installed(site), {"LD_LIBRARY_PATH": str(old.parent)}, {})
    assert found["torch"]["cudnn"] == {
        "version": "9.1.0.70",
        "path": str(site / "torch/lib/../../nvidia/cudnn/lib/libcudnn.so.9"),
        "source": "pip",
        "found_by": "RPATH",
    }


def test_a_bundled_cudnn_is_shadowed_by_ld_library_path(tmp_path):
    # pytorch/pytorch#80637: torch 1.12 cu113 ships cuDNN in torch/lib with DT_RUNPATH $ORIGIN, and a
    # cuDNN 8.0.3 directory first on LD_LIBRARY_PATH wins.
    site = tmp_path / "site"
    dist_info(site, "torch", "1.12.0+cu113")
    library(site / "torch/lib/libcudnn.so.8")
    shared_object(site / "torch/lib/libtorch_cuda.so", needed=("libcudnn.so.8",), runpath="$ORIGIN")
    old = library(tmp_path / "public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64/libcudnn.so.8.0.3")
    (old.parent / "libcudnn.so.8").symlink_to(old.name)
    environ = {"LD_LIBRARY_PATH": f"{old.parent}:/public/apps/cuda/11.0/lib64"}
    shadowed = libraries.loaded(installed(site), environ, {})["torch"]["cudnn"]
    assert (shadowed["version"], shadowed["found_by"], shadowed["source"]) == (
        "8.0.3",
        "LD_LIBRARY_PATH",
        "LD_LIBRARY_PATH",
    )
    own = libraries.loaded(installed(site), {}, {})["torch"]["cudnn"]
    assert (own["version"], own["source"], own["found_by"]) == ("8", "bundled", "RUNPATH")


def test_the_loader_cache_and_default_directories_come_last(tmp_path):
    site = tmp_path / "site"
    dist_info(site, "torch", "2.5.0a0")
    shared_object(
        site / "torch/lib/libtorch_cuda.so", needed=("libnccl.so.2", "libc10.so"), runpath="$ORIGIN"
    )
    nccl = library(tmp_path / "usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5")
    (nccl.parent / "libnccl.so.2").symlink_to(nccl.name)
    cache = {"libnccl.so.2": [str(nccl.parent / "libnccl.so.2")]}
    found = libraries.loaded(installed(site), {}, cache)["torch"]["nccl"]
    assert (found["version"], found["found_by"]) == ("2.21.5", "ld.so.cache")
    assert libraries.loaded(installed(site), {}, {}) == {}  # nothing anywhere: nothing loads


def test_the_jax_plugin_loads_nvidias_wheels_by_path_first(tmp_path):
    site = tmp_path / "site"
    dist_info(site, "jax-cuda12-plugin", "0.4.26")
    dist_info(site, "nvidia-cusparse-cu12", "12.3.1.170")
    library(site / "nvidia/cusparse/lib/libcusparse.so.12")
    shared_object(
        site / "jax_plugins/xla_cuda12/xla_cuda_plugin.so", runpath="$ORIGIN/../../nvidia/cublas/lib"
    )
    system = library(tmp_path / "cuda-12.0/lib64/libcusparse.so.12.0.2.55")
    (system.parent / "libcusparse.so.12").symlink_to(system.name)
    found = libraries.loaded(installed(site), {"LD_LIBRARY_PATH": str(system.parent)}, {})["jax"]
    assert (found["cusparse"]["version"], found["cusparse"]["source"]) == ("12.3.1.170", "pip")
    assert found["cusparse"]["found_by"] == "jax loads the pip wheel by path"
    # without the wheel, LD_LIBRARY_PATH's copy is the one
    shutil.rmtree(site / "nvidia")
    alone = libraries.loaded(installed(site), {"LD_LIBRARY_PATH": str(system.parent)}, {})["jax"]["cusparse"]
    assert (alone["version"], alone["found_by"]) == ("12.0.2.55", "LD_LIBRARY_PATH")


def test_the_probe_records_the_loaded_copies_in_valid_facts(tmp_path):
    site = tmp_path / "site"
    dist_info(site, "torch", "1.12.0+cu113")
    library(site / "torch/lib/libcudnn.so.8")
    shared_object(site / "torch/lib/libtorch_cuda.so", needed=("libcudnn.so.8",), runpath="$ORIGIN")
    result = cuda.probe(site_dirs=[site], environ={"PATH": ""}, search_paths=[], ld_cache={})
    assert result.facts["loaded"]["torch"]["cudnn"]["source"] == "bundled"
    validate_facts({"schema_version": 1, **result.facts}, "cuda probe")


# --------------------------------------------------------------------------- what the build wants


def test_torch_pins_are_the_libraries_it_was_built_with(tmp_path):
    # Requires-Dist lines as torch 2.4.1's wheel METADATA writes them.
    marker = 'platform_system == "Linux" and platform_machine == "x86_64"'
    dist_info(
        tmp_path,
        "torch",
        "2.4.1",
        (
            f"nvidia-cudnn-cu12==9.1.0.70; {marker}",
            f"nvidia-cublas-cu12==12.1.3.1; {marker}",
            f"nvidia-nccl-cu12==2.20.5; {marker}",
            "sympy",
        ),
    )
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch/version.py").write_text("__version__ = '2.4.1'\ncuda = '12.1'\n")
    torch = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]
    # The other keys (ROCm, MPS, XPU builds) are the probe's own; sympy pins nothing.
    assert {key: torch.get(key) for key in ("version", "cuda", "cudnn", "cublas", "nccl")} == {
        "version": "2.4.1",
        "cuda": "12.1",
        "cudnn": "9.1.0.70",
        "cublas": "12.1.3.1",
        "nccl": "2.20.5",
    }
    # A CUDA wheel: no HIP, no ROCm, no MPS or XPU build.
    assert torch["rocm_build"] is False and torch["hip"] is None and torch["xpu"] is None
    assert "sympy" not in torch


def test_requirements_starting_with_a_name_are_those_of_the_full_read(tmp_path):
    marker = 'platform_system == "Linux"'
    dist_info(
        tmp_path,
        "torch",
        "2.4.1",
        (
            "filelock",
            f"NVIDIA_cudnn_cu12 == 9.1.0.70 ; {marker}",
            f"nvidia-nccl-cu12==2.20.5; {marker}",
            "nvidiax",
            "sympy",
        ),
    )
    (dist,) = distributions([tmp_path])
    everything = requirements(dist)
    assert [entry[0] for entry in everything] == [
        "filelock",
        "nvidia-cudnn-cu12",
        "nvidia-nccl-cu12",
        "nvidiax",
        "sympy",
    ]
    assert requirements(dist, starting="nvidia") == [e for e in everything if e[0].startswith("nvidia")]
    assert requirements(dist, starting="nvidia")[0] == ("nvidia-cudnn-cu12", "== 9.1.0.70", marker)


def test_the_jax_plugin_version_its_runtime_and_its_library_floors(tmp_path):
    dist_info(tmp_path, "jax", "0.9.0.1")
    dist_info(tmp_path, "jaxlib", "0.9.0.1")
    dist_info(tmp_path, "jax-cuda12-pjrt", "0.9.2")
    dist_info(
        tmp_path,
        "jax-cuda12-plugin",
        "0.9.2",
        (
            "jax-cuda12-pjrt==0.9.2",
            'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"',
            'nvidia-cusparse-cu12>=12.5.4.2; extra == "with-cuda"',
        ),
    )
    jax = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["jax"]
    assert jax["plugin_version"] == "0.9.2" and jax["pjrt_version"] == "0.9.2"
    assert jax["requires"] == {"cudnn": "9.8", "cusparse": "12.5.4.2"}
    validate_facts({"schema_version": 1, "frameworks": {"jax": jax}}, "frameworks probe")


def test_cuda13_wheels_sharing_one_folder_each_give_their_own_version(tmp_path):
    # Recorded on an H100 (torch 2.11.0+cu130, jax 0.11.2 with jax-cuda13-plugin, 2026-11-27,
    # docs/measurements/h100-2026-11-27/): nvidia-cublas 13.1.0.3 and nvidia-cusparse 12.6.3.3 both
    # install into nvidia/cu13/lib, and cuSPARSE was read as its soname's "12" because the search
    # stopped at the first CUDA 13 wheel that did not own the file.
    site = tmp_path / "site"
    dist_info(site, "jax-cuda13-plugin", "0.11.2")
    for name, version, filename in (
        ("nvidia-cublas", "13.1.0.3", "libcublas.so.13"),
        ("nvidia-cusparse", "12.6.3.3", "libcusparse.so.12"),
    ):
        record = dist_info(site, name, version) / "RECORD"
        record.write_text(f"nvidia/cu13/lib/{filename},sha256=x,1\n")
        library(site / "nvidia/cu13/lib" / filename)
    shared_object(site / "jax_plugins/xla_cuda13/xla_cuda_plugin.so")
    found = libraries.loaded(installed(site), {}, {})["jax"]
    assert (found["cublas"]["version"], found["cublas"]["source"]) == ("13.1.0.3", "pip")
    assert (found["cusparse"]["version"], found["cusparse"]["source"]) == ("12.6.3.3", "pip")
