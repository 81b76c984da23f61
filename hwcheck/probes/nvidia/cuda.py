"""CUDA libraries probe: which CUDA runtime, cuDNN, cuBLAS, cuSPARSE and NCCL are installed and where,
and which copy each framework will load, without loading any of them."""

from __future__ import annotations

import os
import re
import sys

from hwcheck.base.inputs import joined, plain_path, read_head
from hwcheck.base.numbers import whole_or_none
from hwcheck.base.versions import version_key
from hwcheck.probes import ldcache
from hwcheck.probes.nvidia import libraries
from hwcheck.probes.nvidia.wheels import is_nvidia_wheel
from hwcheck.probes.result import ABSENT, OK, ProbeResult
from hwcheck.probes.site_packages import distributions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from hwcheck.probes.subprocesses import Running

# The first choice comes from the first of these that found a copy: pip wheels are what
# TensorFlow and PyTorch load first, then the dynamic loader's path, then the toolkit.
SOURCES = ("pip", "loader", "header", "nvcc")
NVCC_TIMEOUT = 2.0
# `nvcc --version` prints ~300 bytes; more is not an nvcc worth reading on.
NVCC_OUTPUT_CAP = 64 * 1024

COMPONENTS = ("cuda", "cudnn", "cublas", "cusparse", "nccl")
# The names are matched with string methods, not patterns: a library folder lists a
# thousand files, and a site-packages hundreds of distributions, on every doctor run.
# libcudart.so.12.4.127: the name, then the dotted version.
LIBRARIES = {
    "cuda": "libcudart.so.",
    "cudnn": "libcudnn.so.",
    "cublas": "libcublas.so.",
    "cusparse": "libcusparse.so.",
    "nccl": "libnccl.so.",
}
# Each header's stem: cuda.h, cublas_api.h, cusparse.h, nccl.h; cudnn.h, cudnn_version.h and
# Debian's cudnn_version_v9.h (cudnn_version.h points at it).
HEADERS = {"cuda": "cuda", "cudnn": "cudnn", "cublas": "cublas_api", "cusparse": "cusparse", "nccl": "nccl"}
_HEADER_NAMES = frozenset(f"{stem}.h" for stem in HEADERS.values())
# Compiled on first use (re caches them), only where a header or an nvcc was found.
CUDA_VERSION_MACRO = rb"(?m)^\s*#\s*define\s+CUDA_VERSION\s+(\d+)"
# The version macros each library's header defines, as (major, minor, patch) names.
HEADER_MACROS = {
    "cudnn": (b"CUDNN_MAJOR", b"CUDNN_MINOR", b"CUDNN_PATCHLEVEL"),
    "cublas": (b"CUBLAS_VER_MAJOR", b"CUBLAS_VER_MINOR", b"CUBLAS_VER_PATCH"),
    "cusparse": (b"CUSPARSE_VER_MAJOR", b"CUSPARSE_VER_MINOR", b"CUSPARSE_VER_PATCH"),
    "nccl": (b"NCCL_MAJOR", b"NCCL_MINOR", b"NCCL_PATCH"),
}
VERSION_MACRO = rb"(?m)^\s*#\s*define\s+([A-Z_]+)\s+(\d+)\s*$"
NVCC_RELEASE = r"release (\d+\.\d+), V(\d+(?:\.\d+)*)"
HEADER_BYTES = 64 * 1024


def probe(
    *,
    site_dirs: Sequence[str | Path] | None = None,
    environ: Mapping[str, str] | None = None,
    search_paths: Sequence[str | Path] | None = None,
    timeout: float = NVCC_TIMEOUT,
    ld_cache: Mapping[str, Sequence[str]] | None = None,
) -> ProbeResult:
    """Find every copy of the CUDA libraries (pip wheels, loader path, headers, nvcc) and the one each
    framework will load. `search_paths` replaces the usual directories and, unless `ld_cache` is
    given, the loader's cache too."""
    environ = os.environ if environ is None else environ
    if ld_cache is None:
        ld_cache = ldcache.entries(prefixes=tuple(LIBRARIES.values())) if search_paths is None else {}
    library_dirs = default_library_dirs(environ) if search_paths is None else [*map(plain_path, search_paths)]
    # Directories ldconfig was told about (ld.so.conf) hold copies the loader finds too.
    library_dirs += [os.path.dirname(p) for name, paths in ld_cache.items() for p in paths if _known(name)]
    library_dirs = _unique_dirs(library_dirs)
    problems: list[str] = []

    # Each nvcc run is a process. The one on PATH is always asked, and first, so that it
    # runs while the folders are read; a toolkit's own nvcc only when its cuda.h could not
    # tell the version.
    on_path = _nvcc_on_path(environ)
    running = _start_nvccs(on_path, timeout, problems)
    try:
        copies: dict[str, list[dict[str, Any]]] = {component: [] for component in COMPONENTS}
        for component, found in _pip_copies(site_dirs).items():
            copies[component] += found
        for component, found in _loader_copies(library_dirs).items():
            copies[component] += found
        headers = _header_copies(_include_dirs(library_dirs))
        for component, found in headers.items():
            copies[component] += found
        known = {os.path.realpath(os.path.dirname(os.path.dirname(c["path"]))) for c in headers["cuda"]}
        others = [d for d in library_dirs if os.path.realpath(os.path.dirname(d)) not in known]
        running += _start_nvccs(_toolkit_nvccs(others, on_path), timeout, problems)
    except BaseException:
        for _, child in running:
            child.close()
        raise
    copies["cuda"] += _nvcc_copies(running, problems)

    facts: dict[str, Any] = {component: _library(found) for component, found in copies.items()}
    installed: dict[str, Any] = {}
    for dist in distributions(site_dirs):
        installed.setdefault(dist.name, dist)
    loads = libraries.loaded(installed, environ, ld_cache)
    if loads:
        facts["loaded"] = loads
    if not copies["cuda"] and not copies["cudnn"]:
        problems.insert(0, "no CUDA runtime or cuDNN found (pip packages, loader path, headers, nvcc)")
        return ProbeResult(ABSENT, facts, "; ".join(problems))
    for component, name in (("cuda", "CUDA runtime"), ("cudnn", "cuDNN")):
        if not copies[component]:
            problems.append(f"no {name} found")
    return ProbeResult(OK, facts, "; ".join(problems) or None)


def _known(name: str) -> bool:
    prefixes = tuple(LIBRARIES.values())
    return name.startswith(prefixes) and any(_versioned(name, prefix) for prefix in prefixes)


def version_from_number(number: int | None) -> str | None:
    """CUDA's integer version as "major.minor": cuda.h and NVML both write 12.4 as 12040."""
    if not isinstance(number, int) or number <= 0:
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def default_library_dirs(environ: Mapping[str, str]) -> list[str]:
    """Where the CUDA libraries usually are, in the order the dynamic loader would look."""
    dirs = [plain_path(p) for p in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable):
            dirs.append(joined(environ[variable], "lib64"))
    if environ.get("CONDA_PREFIX"):
        dirs.append(joined(environ["CONDA_PREFIX"], "lib"))
    dirs += _toolkit_library_dirs("/usr/local")
    machine = os.uname().machine if hasattr(os, "uname") else ""
    dirs += [f"/usr/lib/{machine}-linux-gnu", "/usr/lib64"]
    return dirs


def _toolkit_library_dirs(prefix: str) -> list[str]:
    """PREFIX/cuda*/lib64, as a glob of that pattern finds them, in name order."""
    found = []
    for name in _listdir(prefix):  # sorted: cuda before cuda-12.4, as pathlib sorts paths
        toolkit = joined(prefix, name)
        if name.startswith("cuda") and os.path.isdir(toolkit) and os.path.exists(joined(toolkit, "lib64")):
            found.append(joined(toolkit, "lib64"))
    return found


def _pip_copies(site_dirs: Iterable[str | os.PathLike[str]] | None) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {component: [] for component in COMPONENTS}
    for dist in distributions(site_dirs):
        if not dist.name.startswith("nvidia-"):
            continue  # most of a site-packages
        for component in COMPONENTS:
            # NVIDIA publishes 0.0.x placeholder wheels under these names.
            named = is_nvidia_wheel(dist.name, component)
            if named and dist.version and not dist.version.startswith("0."):
                found[component].append(_copy(dist.version, "pip", dist.info))
    return found


def _loader_copies(library_dirs: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {component: [] for component in COMPONENTS}
    seen: set[str] = set()
    prefixes = tuple(LIBRARIES.values())
    for directory in library_dirs:
        # One pass in C over a folder's ~1,200 names, then each component over the few left.
        names = [name for name in _listdir(directory) if name.startswith(prefixes)]
        for component, prefix in LIBRARIES.items():
            matches = [(name[len(prefix) :], name) for name in names if _versioned(name, prefix)]
            if not matches:
                continue
            # libcudart.so.12 is a link to libcudart.so.12.4.127: the longest name says most.
            version, name = max(matches, key=lambda match: len(version_key(match[0])))
            path = joined(directory, name)
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                found[component].append(_copy(version, "loader", path))
    return found


def _include_dirs(library_dirs: Iterable[str]) -> list[str]:
    dirs = []
    for directory in library_dirs:
        name = os.path.basename(directory)
        if name.endswith("-linux-gnu"):  # Debian multiarch: /usr/lib/<triplet>
            usr = os.path.dirname(os.path.dirname(directory))
            dirs += [joined(usr, "include"), joined(usr, "include", name)]
        else:
            dirs.append(joined(os.path.dirname(directory), "include"))
    return _unique_dirs(dirs)


def _header_copies(include_dirs: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {component: [] for component in COMPONENTS}
    seen: set[str] = set()
    for directory in include_dirs:
        # /usr/include lists thousands of headers: only a library's own names (or cuDNN's) go on.
        names = [name for name in _listdir(directory) if name in _HEADER_NAMES or name.startswith("cudnn")]
        for name in names:
            for component, stem in HEADERS.items():
                if not _header(name, stem):
                    continue
                path = joined(directory, name)
                real = os.path.realpath(path)
                if real in seen:
                    continue
                version = _header_version(component, path)
                if version:
                    seen.add(real)
                    found[component].append(_copy(version, "header", path))
    return found


def _header_version(component: str, path: str) -> str | None:
    try:
        text = read_head(path, HEADER_BYTES)
    except OSError:
        return None
    if component == "cuda":
        match = re.search(CUDA_VERSION_MACRO, text)
        return version_from_number(whole_or_none(match.group(1).decode())) if match else None
    names = HEADER_MACROS[component]
    values = {name: value.decode() for name, value in re.findall(VERSION_MACRO, text) if name in names}
    if names[0] not in values or names[1] not in values:
        return None  # cudnn.h of cuDNN 8 and later includes cudnn_version.h instead
    return ".".join(values[name] for name in names if name in values)


_NVCC = "nvcc.exe" if sys.platform.startswith("win") else "nvcc"


def _nvcc_on_path(environ: Mapping[str, str]) -> list[str]:
    # The first nvcc on PATH is the one a build would use. (shutil.which would do,
    # but importing shutil costs ~3 ms.)
    for directory in environ.get("PATH", "").split(os.pathsep):
        nvcc = joined(directory, _NVCC) if directory else ""
        if nvcc and os.path.isfile(nvcc) and os.access(nvcc, os.X_OK):
            return [nvcc]
    return []


def _toolkit_nvccs(library_dirs: Iterable[str], asked: list[str]) -> list[str]:
    # A toolkit's own nvcc sits in bin/ beside its lib64/ (and include/); each program once.
    unique: dict[str, str | None] = {os.path.realpath(nvcc): None for nvcc in asked}
    for library_dir in library_dirs:
        toolkit_nvcc = joined(os.path.dirname(library_dir), "bin", _NVCC)
        if os.path.isfile(toolkit_nvcc):
            unique.setdefault(os.path.realpath(toolkit_nvcc), toolkit_nvcc)
    return [nvcc for nvcc in unique.values() if nvcc is not None]


def _start_nvccs(candidates: list[str], timeout: float, problems: list[str]) -> list[tuple[str, Running]]:
    if not candidates:
        return []
    from hwcheck.probes import subprocesses  # only machines with an nvcc pay for it

    running = []
    for nvcc in candidates:  # started together, so several toolkits cost one wait
        try:
            running.append((nvcc, subprocesses.start([nvcc, "--version"], timeout)))
        except OSError as error:
            problems.append(f"{nvcc} could not run: {error.strerror or error}")
    return running


def _nvcc_copies(running: list[tuple[str, Running]], problems: list[str]) -> list[dict[str, Any]]:
    if not running:
        return []
    from hwcheck.probes import subprocesses

    found = []
    for nvcc, child in running:
        finished = child.wait(NVCC_OUTPUT_CAP)
        match = re.search(NVCC_RELEASE, finished.output)
        if match:
            found.append(_copy(match.group(2), "nvcc", nvcc))
        elif finished.status != subprocesses.OK:
            problems.append(f"{nvcc} --version {finished.reason}")
    return found


def _versioned(name: str, prefix: str) -> bool:
    # `prefix` and a dotted version: libcudart.so.12 or libcudart.so.12.4.127.
    return name.startswith(prefix) and all(part.isdecimal() for part in name[len(prefix) :].split("."))


def _header(name: str, stem: str) -> bool:
    # cuDNN's header is cudnn.h, optionally _version, optionally _vN; each other library has one.
    if stem != "cudnn":
        return name == f"{stem}.h"
    if not (name.startswith(stem) and name.endswith(".h")):
        return False
    rest = name[len(stem) : -len(".h")].removeprefix("_version")
    return rest == "" or (rest.startswith("_v") and rest[2:].isdecimal())


def _library(copies: list[dict[str, Any]]) -> dict[str, Any]:
    """The first choice (by SOURCES, preferring a copy that knows its minor version) and all copies."""
    newest_first = sorted(copies, key=lambda copy: version_key(copy["version"]), reverse=True)
    ranked = sorted(copies, key=lambda copy: SOURCES.index(copy["source"]))
    chosen = next((c for c in ranked if len(version_key(c["version"])) >= 2), None)
    chosen = chosen or (ranked[0] if ranked else None)
    if chosen is None:
        return {"version": None, "found": []}
    return {**chosen, "found": newest_first}


def _copy(version: str, source: str, path: str) -> dict[str, Any]:
    return {"version": version, "source": source, "path": path}


def _unique_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    unique: dict[str, str] = {}
    for entry in paths:
        path = plain_path(entry)
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def _listdir(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []
