"""The CUDA / cuDNN probe against fake install trees built from real file contents."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, OK
from hwcheck.probes.nvidia import cuda

# `nvcc --version` as printed by CUDA 12.4.1 (widely quoted, e.g. in llama.cpp bug reports)
# and by this project's development machine (CUDA 13.0).
NVCC_12_4 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Mar_28_02:18:24_PDT_2024
Cuda compilation tools, release 12.4, V12.4.131
Build cuda_12.4.r12.4/compiler.34097967_0
"""
NVCC_13_0 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""
# Header lines as the toolkits write them: cuda.h (12.4), cudnn_version.h (cuDNN 8/9 layout)
# and the cudnn.h of cuDNN 7, where the macros still lived in cudnn.h.
CUDA_H_12_4 = "/**\n * CUDA API version number\n */\n#define CUDA_VERSION 12040\n"
CUDNN_VERSION_H = (
    "#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n"
    "#define CUDNN_MAJOR {0}\n#define CUDNN_MINOR {1}\n#define CUDNN_PATCHLEVEL {2}\n\n"
    "#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n"
)
CUDNN_H_7 = (
    "#define CUDNN_MAJOR      7\n#define CUDNN_MINOR      3\n#define CUDNN_PATCHLEVEL 0\n"
    "#define CUDNN_VERSION    (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n"
)
CUDNN_H_9 = '#include "cudnn_version.h"\n#include "cudnn_graph.h"\n'


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def dist_info(site: Path, name: str, version: str) -> Path:
    """A dist-info directory as pip writes it (name with underscores, then the version)."""
    directory = site / f"{name.replace('-', '_')}-{version}.dist-info"
    return write(directory / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n").parent


def fake_nvcc(path: Path, output: str, *, delay: float = 0) -> Path:
    quoted = output.replace("'", "'\\''")
    body = f"#!/bin/sh\nsleep {delay}\n" if delay else "#!/bin/sh\n"
    write(path, body + f"printf '%s' '{quoted}'\n").chmod(0o755)
    return path


def toolkit(root: Path, *, nvcc: str | None = NVCC_12_4, cuda_h: bool = True) -> Path:
    """A /usr/local/cuda-12.4-like tree: runtime, cuDNN 8.9.7 copied in, headers, nvcc."""
    lib = root / "lib64"
    write(lib / "libcudart.so.12.4.127")
    (lib / "libcudart.so.12").symlink_to("libcudart.so.12.4.127")
    write(lib / "libcudnn.so.8.9.7")
    (lib / "libcudnn.so.8").symlink_to("libcudnn.so.8.9.7")
    if cuda_h:
        write(root / "include" / "cuda.h", CUDA_H_12_4)
    write(root / "include" / "cudnn_version.h", CUDNN_VERSION_H.format(8, 9, 7))
    write(root / "include" / "cudnn.h", CUDNN_H_9)
    if nvcc:
        fake_nvcc(root / "bin" / "nvcc", nvcc)
    return lib


def test_nothing_installed_is_absent(tmp_path):
    result = cuda.probe(site_dirs=[tmp_path], environ={"PATH": ""}, search_paths=[tmp_path / "lib"])
    assert result.status == ABSENT
    assert result.reason.startswith("no CUDA runtime or cuDNN found")
    nothing = {"version": None, "found": []}
    assert result.facts == {name: nothing for name in ("cuda", "cudnn", "cublas", "cusparse", "nccl")}


def test_pip_wheels_are_the_first_choice_and_every_copy_is_listed(tmp_path):
    site = tmp_path / "site-packages"
    # Versions TensorFlow 2.21's [and-cuda] extra requires at least (its wheel METADATA).
    runtime = dist_info(site, "nvidia-cuda-runtime-cu12", "12.5.82")
    cudnn = dist_info(site, "nvidia-cudnn-cu12", "9.3.0.75")
    lib = toolkit(tmp_path / "cuda-12.4")
    result = cuda.probe(site_dirs=[site], environ={"PATH": ""}, search_paths=[lib])
    assert result.status == OK and result.reason is None
    assert result.facts["cuda"]["version"] == "12.5.82"
    assert result.facts["cuda"]["source"] == "pip"
    assert result.facts["cuda"]["path"] == str(runtime)
    assert [(c["source"], c["version"]) for c in result.facts["cuda"]["found"]] == [
        ("pip", "12.5.82"),
        ("loader", "12.4.127"),
        ("header", "12.4"),
    ]
    assert (result.facts["cudnn"]["version"], result.facts["cudnn"]["path"]) == ("9.3.0.75", str(cudnn))
    assert [(c["source"], c["version"]) for c in result.facts["cudnn"]["found"]] == [
        ("pip", "9.3.0.75"),
        ("loader", "8.9.7"),
        ("header", "8.9.7"),
    ]
    validate_facts({"schema_version": 1, **result.facts}, "cuda probe")


def test_toolkit_without_pip_wheels_reports_where_each_copy_is(tmp_path):
    lib = toolkit(tmp_path / "cuda-12.4")
    result = cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[lib])
    assert result.facts["cuda"] | {"found": None} == {
        "version": "12.4.127",
        "source": "loader",
        "path": str(lib / "libcudart.so.12.4.127"),
        "found": None,
    }
    assert {c["path"] for c in result.facts["cudnn"]["found"]} == {
        str(lib / "libcudnn.so.8.9.7"),
        str(tmp_path / "cuda-12.4" / "include" / "cudnn_version.h"),
    }


def test_cuda_13_wheel_without_suffix_and_placeholder_wheels(tmp_path):
    site = tmp_path / "site-packages"
    dist_info(site, "nvidia-cuda-runtime", "13.0.96")
    # NVIDIA's name-squatting placeholders are not CUDA.
    dist_info(site, "nvidia-cudnn", "0.0.1.dev5")
    dist_info(site, "nvidia-cudnn-frontend", "1.14.0")
    result = cuda.probe(site_dirs=[site], environ={"PATH": ""}, search_paths=[])
    assert result.facts["cuda"]["version"] == "13.0.96"
    assert result.facts["cudnn"] == {"version": None, "found": []}
    assert result.reason == "no cuDNN found"


def test_version_from_metadata_when_the_directory_name_has_none(tmp_path):
    site = tmp_path / "site-packages"
    pkg_info = "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n"
    write(site / "nvidia_cudnn_cu12.egg-info" / "PKG-INFO", pkg_info)
    result = cuda.probe(site_dirs=[site], environ={"PATH": ""}, search_paths=[])
    assert result.facts["cudnn"]["version"] == "9.1.0.70"


def test_loader_path_from_the_environment_comes_first(tmp_path):
    lib = toolkit(tmp_path / "conda", nvcc=None)
    environ = {"LD_LIBRARY_PATH": f"{lib}{os.pathsep}", "PATH": ""}
    result = cuda.probe(site_dirs=[], environ=environ)
    assert result.facts["cuda"]["source"] == "loader"
    assert result.facts["cuda"]["path"] == str(lib / "libcudart.so.12.4.127")


def test_debian_multiarch_cudnn_and_its_alternatives_link_count_once(tmp_path):
    usr = tmp_path / "usr"
    lib = usr / "lib" / "x86_64-linux-gnu"
    write(lib / "libcudnn.so.9.1.0")
    header = usr / "include" / "x86_64-linux-gnu" / "cudnn_version_v9.h"
    write(header, CUDNN_VERSION_H.format(9, 1, 0))
    (usr / "include" / "cudnn_version.h").symlink_to(header)
    result = cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[lib])
    found = result.facts["cudnn"]["found"]
    assert [(c["source"], c["version"]) for c in found] == [("loader", "9.1.0"), ("header", "9.1.0")]


def test_cudnn_7_keeps_its_version_in_cudnn_h(tmp_path):
    root = tmp_path / "cuda-10.0"
    write(root / "include" / "cudnn.h", CUDNN_H_7)
    result = cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[root / "lib64"])
    assert result.facts["cudnn"]["version"] == "7.3.0"
    assert result.facts["cudnn"]["path"] == str(root / "include" / "cudnn.h")


def test_nvcc_on_path_and_beside_a_toolkit_without_cuda_h(tmp_path):
    lib = toolkit(tmp_path / "cuda-12.4", cuda_h=False)
    fake_nvcc(tmp_path / "bin" / "nvcc", NVCC_13_0)
    result = cuda.probe(site_dirs=[], environ={"PATH": str(tmp_path / "bin")}, search_paths=[lib])
    nvccs = [(c["version"], c["path"]) for c in result.facts["cuda"]["found"] if c["source"] == "nvcc"]
    assert nvccs == [
        ("13.0.88", str(tmp_path / "bin" / "nvcc")),
        ("12.4.131", str(tmp_path / "cuda-12.4" / "bin" / "nvcc")),
    ]
    assert result.facts["cuda"]["found"][0]["version"] == "13.0.88"  # newest first


def test_toolkit_with_cuda_h_needs_no_nvcc_run(tmp_path):
    lib = toolkit(tmp_path / "cuda-12.4", nvcc=None)
    ran = tmp_path / "nvcc-ran"
    write(tmp_path / "cuda-12.4" / "bin" / "nvcc", f"#!/bin/sh\ntouch {ran}\n").chmod(0o755)
    result = cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[lib])
    assert not ran.exists()
    assert [c["source"] for c in result.facts["cuda"]["found"]] == ["loader", "header"]


def test_hung_nvcc_is_cut_off_and_named(tmp_path):
    fake_nvcc(tmp_path / "bin" / "nvcc", NVCC_13_0, delay=60)
    started = time.perf_counter()
    result = cuda.probe(site_dirs=[], environ={"PATH": str(tmp_path / "bin")}, search_paths=[], timeout=0.2)
    assert time.perf_counter() - started < 10  # ~0.25 s idle; the fake nvcc answers only after 60 s
    assert result.status == ABSENT
    assert f"{tmp_path / 'bin' / 'nvcc'} --version gave no answer within 0.2 s" in result.reason


def test_unversioned_soname_counts_but_a_header_is_preferred(tmp_path):
    # Wheel-built toolkits ship only libcudart.so.13; the header still knows 13.0.
    root = tmp_path / "cuda-13.0"
    write(root / "lib64" / "libcudart.so.13")
    write(root / "include" / "cuda.h", "#define CUDA_VERSION 13000\n")
    result = cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[root / "lib64"])
    assert (result.facts["cuda"]["version"], result.facts["cuda"]["source"]) == ("13.0", "header")
    assert [c["version"] for c in result.facts["cuda"]["found"]] == ["13.0", "13"]


@pytest.mark.skipif(not os.path.isfile("/usr/local/cuda/include/cuda.h"), reason="no CUDA toolkit here")
def test_this_machines_toolkit_agrees_with_itself():
    result = cuda.probe(site_dirs=[])
    assert result.status == OK
    by_source = {}
    for copy in result.facts["cuda"]["found"]:
        by_source.setdefault(copy["source"], copy["version"])
    assert "header" in by_source
    if shutil.which("nvcc") and "nvcc" in by_source:
        # nvcc 13.0.88 and cuda.h's 13000 describe the same toolkit.
        assert by_source["nvcc"].startswith(by_source["header"] + ".")
