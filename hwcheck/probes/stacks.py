"""Probe: the kernel libraries people add to a framework, and what torch.compile needs besides.

Facts `kernel_libraries`: per installed FlashAttention, xformers, bitsandbytes and Transformer
Engine distribution, its version, the torch its metadata pins, and the sm_XY/compute_XY targets
its CUDA libraries carry (read from their fat binaries, as the frameworks' own are in
nvidia/builds.py). Facts `toolchain`: the C compiler Triton builds its launcher with (CC, else
gcc or clang on PATH, as Triton looks) and a libcuda.so the loader can find (the loader cache,
TRITON_LIBCUDA_PATH, LD_LIBRARY_PATH). A path is known, "" looked for and absent; a key left
out is unknown.
"""

from __future__ import annotations

import os

from hwcheck.base.inputs import joined
from hwcheck.probes.nvidia.builds import _read as read_architectures
from hwcheck.probes.result import ABSENT, OK, ProbeResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

# The distributions of rules/knowledge/stacks.toml [[library]] (read there by the engine); the
# probe needs only their files, so it takes them from the same table.
COMPILERS = ("gcc", "clang")
# Inductor's C++ backend (torch.compile on the CPU) compiles its kernels with $CXX, else g++
# (clang++ on macOS): torch/_inductor/config.py cpp.cxx.
CXX_COMPILERS = ("g++", "clang++")
LIBCUDA = ("libcuda.so.1", "libcuda.so")
MAX_PATH_ENTRIES = 64  # folders of PATH or LD_LIBRARY_PATH looked in
# Where the driver shows itself: without it, no process can use an NVIDIA GPU and libcuda is moot.
NVIDIA_DRIVER_MARKERS = ("/proc/driver/nvidia/version", "/dev/nvidiactl")


def probe(
    site_dirs: Iterable[str] | None = None,
    environ: Mapping[str, str] | None = None,
    ld_cache: dict[str, list[str]] | None = None,
    driver: bool | None = None,
) -> ProbeResult:
    """The kernel libraries installed beside the frameworks, and the toolchain torch.compile needs."""
    from hwcheck.probes.site_packages import distributions, requirements

    environ = os.environ if environ is None else environ
    installed = {dist.name: dist for dist in distributions(site_dirs)}
    libraries: dict[str, Any] = {}
    for name, patterns in _library_files().items():
        dist = installed.get(name)
        if dist is None:
            continue
        entry: dict[str, Any] = {"version": dist.version}
        pins = [spec for req, spec, _ in requirements(dist, "torch") if req == "torch" and spec]
        if pins:
            entry["requires_torch"] = pins[0]
        read = read_architectures([dist.folder], tuple(patterns))
        if read:
            entry.update(read)
        libraries[name] = entry
    facts: dict[str, Any] = {"kernel_libraries": libraries}
    if "torch" in installed:
        facts["toolchain"] = {
            "c_compiler": _compiler(environ),
            "cxx_compiler": _compiler(environ, variable="CXX", names=CXX_COMPILERS),
        }
        if driver is None:
            driver = any(os.path.exists(marker) for marker in NVIDIA_DRIVER_MARKERS)
        if driver:
            facts["toolchain"]["libcuda"] = _libcuda(environ, ld_cache)
    if not libraries and "toolchain" not in facts:
        return ProbeResult(ABSENT, facts, reason="no kernel library and no torch installed")
    return ProbeResult(OK, facts)


def _library_files() -> dict[str, list[str]]:
    from hwcheck.base.tables import load

    files: dict[str, list[str]] = {}
    for row in load("stacks").get("library", ()):
        files.setdefault(row["distribution"], [])
        files[row["distribution"]] += [p for p in row["files"] if p not in files[row["distribution"]]]
    return files


def _compiler(environ: Mapping[str, str], variable: str = "CC", names: tuple[str, ...] = COMPILERS) -> str:
    """The compiler a build would use: $CC (or `variable`), else the first of `names` on PATH
    (gcc, then clang for Triton's C launcher); "" when none is found."""
    chosen = environ.get(variable, "").strip()
    if chosen:
        found = chosen if os.sep in chosen else _on_path(chosen, environ.get("PATH", ""))
        return found if found and os.access(found, os.X_OK) else ""
    for name in names:
        found = _on_path(name, environ.get("PATH", ""))
        if found:
            return found
    return ""


def _on_path(name: str, path: str) -> str:
    for folder in path.split(os.pathsep)[:MAX_PATH_ENTRIES]:
        candidate = joined(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return ""


def _libcuda(environ: Mapping[str, str], ld_cache: dict[str, list[str]] | None) -> str:
    """A libcuda.so Triton can find: TRITON_LIBCUDA_PATH, the loader cache, LD_LIBRARY_PATH; "" if none."""
    from hwcheck.probes import ldcache

    folders = [environ.get("TRITON_LIBCUDA_PATH", "")]
    cache = ldcache.entries(prefixes=("libcuda.so",)) if ld_cache is None else ld_cache
    for name in LIBCUDA:
        for path in cache.get(name, ()):
            if os.path.exists(path):
                return path
    folders += environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)[:MAX_PATH_ENTRIES]
    for folder in filter(None, folders):
        for name in LIBCUDA:
            candidate = joined(folder, name)
            if os.path.exists(candidate):
                return candidate
    return ""
