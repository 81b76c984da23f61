"""No probe blocks on a file it opens: a FIFO where a file should be is refused at once.

Every file a probe reads is opened by base/inputs.open_regular (O_NONBLOCK, then fstat:
only a regular file is read). Each test puts a FIFO with no writer where a probe reads a
file and checks that the probe finishes quickly with its other facts intact. A probe that
blocks is released after the time bound by opening the FIFO's writing end, so a failure
here cannot hang the rest of the suite.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from test_probe_cuda import dist_info, toolkit
from test_probe_frameworks import TORCH_VERSION_PY, dist

from hwcheck.base.inputs import NotRegularFile, open_regular, read_head
from hwcheck.probes import OK, frameworks
from hwcheck.probes.apple import macho
from hwcheck.probes.nvidia import cuda, libraries
from hwcheck.probes.site_packages import distributions

# Each probe here takes well under a second idle; ten times that is the bound.
BOUND_SECONDS = 10.0


def fifo(path: Path) -> Path:
    """A FIFO (named pipe) with no writer at `path`, replacing whatever was there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def finishes(call, *pipes: Path):
    """What `call()` returns, failing the test (and releasing the probe) if it blocks."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the test below
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND_SECONDS)
    if thread.is_alive():
        for pipe in pipes:  # a writer that closes at once gives the blocked reader end-of-file
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(BOUND_SECONDS)
        pytest.fail(f"blocked for more than {BOUND_SECONDS} s on {', '.join(map(str, pipes))}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]


def torch_install(site: Path, version: str = "2.5.1+cu124", cuda_version: str | None = "12.4") -> None:
    dist(site, "torch", version)
    (site / "torch").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "version.py").write_text(TORCH_VERSION_PY.format(version=version, cuda=cuda_version))


def test_the_one_reader_refuses_a_fifo_a_directory_and_a_device_without_blocking(tmp_path):
    pipe = fifo(tmp_path / "pipe")
    for path in (pipe, tmp_path, Path("/dev/null")):
        with pytest.raises(NotRegularFile, match="not a regular file"):
            finishes(lambda path=path: open_regular(path), pipe)
    (tmp_path / "file").write_bytes(b"x" * 100)
    assert read_head(tmp_path / "file", 10) == b"x" * 10
    assert isinstance(NotRegularFile(), OSError)  # every probe's `except OSError` covers it


def test_a_fifo_as_cudnn_version_h_leaves_the_other_copies(tmp_path):
    lib = toolkit(tmp_path / "cuda-12.4")
    pipe = fifo(tmp_path / "cuda-12.4" / "include" / "cudnn_version.h")
    result = finishes(lambda: cuda.probe(site_dirs=[], environ={"PATH": ""}, search_paths=[lib]), pipe)
    assert result.facts["cuda"]["version"] == "12.4.127"
    assert {c["path"] for c in result.facts["cudnn"]["found"]} == {str(lib / "libcudnn.so.8.9.7")}


def test_a_fifo_as_torchs_metadata_leaves_its_version_and_cuda(tmp_path):
    torch_install(tmp_path)
    pipe = fifo(tmp_path / "torch-2.5.1+cu124.dist-info" / "METADATA")
    result = finishes(lambda: frameworks.probe(site_dirs=[tmp_path], environ={}), pipe)
    torch = result.facts["frameworks"]["torch"]
    assert (torch["version"], torch["cuda"]) == ("2.5.1+cu124", "12.4")


def test_a_fifo_as_a_versionless_dist_infos_metadata_is_skipped_under_the_scan_lock(tmp_path):
    torch_install(tmp_path)
    pipe = fifo(tmp_path / "mystery.dist-info" / "METADATA")
    found = finishes(lambda: distributions([tmp_path]), pipe)
    assert {(d.name, d.version) for d in found} == {("torch", "2.5.1+cu124"), ("mystery", None)}
    # The lock is free again: another probe's scan does not wait.
    assert finishes(lambda: distributions([tmp_path]), pipe) == found


def test_a_fifo_as_torch_version_py_leaves_the_version_of_its_dist_info(tmp_path):
    torch_install(tmp_path)
    pipe = fifo(tmp_path / "torch" / "version.py")
    result = finishes(lambda: frameworks.probe(site_dirs=[tmp_path], environ={}), pipe)
    assert result.facts["frameworks"]["torch"]["version"] == "2.5.1+cu124"


def test_a_fifo_as_libtorch_cpu_dylib_leaves_mps_unknown(tmp_path):
    torch_install(tmp_path, "2.6.0", None)
    pipe = fifo(tmp_path / "torch" / "lib" / "libtorch_cpu.dylib")
    with pytest.raises(OSError):
        finishes(lambda: macho.linked_libraries(pipe), pipe)
    result = finishes(lambda: frameworks.probe(site_dirs=[tmp_path], environ={}), pipe)
    assert result.status == OK
    torch = result.facts["frameworks"]["torch"]
    assert (torch["version"], torch["mps_built"]) == ("2.6.0", None)


def test_a_fifo_as_a_wheels_record_is_not_read(tmp_path):
    # A CUDA 13 wheel installs into the shared nvidia/cu13/lib: its RECORD says which files are its own.
    site = tmp_path / "site-packages"
    runtime = dist_info(site, "nvidia-cuda-runtime", "13.0.96")
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudart.so.13").write_bytes(b"")
    (runtime / "RECORD").write_text("nvidia/cu13/lib/libcudart.so.13,sha256=x,0\n")
    path = os.path.realpath(lib / "libcudart.so.13")
    installed = {dist.name: dist for dist in distributions([site])}
    assert libraries._wheel(path, installed).version == "13.0.96"
    pipe = fifo(runtime / "RECORD")
    assert finishes(lambda: libraries._wheel(path, installed), pipe) is None


def test_a_fifo_as_pci_ids_is_passed_over_for_the_next_copy(tmp_path):
    from hwcheck.probes.pci import pci_names

    pipe = fifo(tmp_path / "pci.ids")
    real = tmp_path / "usr-share-pci.ids"
    real.write_text("10de  NVIDIA Corporation\n\t2330  GH100 [H100 SXM5 80GB]\n")
    names = finishes(lambda: pci_names({"0x10de": {"0x2330"}}, files=(str(pipe), str(real))), pipe)
    assert names == {("0x10de", None): "NVIDIA Corporation", ("0x10de", "0x2330"): "GH100 [H100 SXM5 80GB]"}


def test_a_fifo_as_a_cuda_library_has_no_fatbin_read(tmp_path):
    from hwcheck.probes.nvidia import fatbin

    pipe = fifo(tmp_path / "libtorch_cuda.so")
    assert finishes(lambda: fatbin.architectures(pipe), pipe) is None
