"""The copy of cuDNN, cuBLAS, cuSPARSE and NCCL each framework will load, and where it came from.

Files only, never a dlopen: the framework's own library names what it needs (DT_NEEDED, or the
major versions it dlopens) and where to look (DT_RPATH / DT_RUNPATH, hwcheck.probes.elf); the
search then follows ld.so(8): RPATH, LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache, the default
directories. JAX's CUDA plugin first loads NVIDIA's pip wheels by absolute path
(jax_plugins/cuda/__init__.py, _load_nvidia_libraries), so those come first for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hwcheck.probes import elf, ldcache
from hwcheck.probes.site_packages import Distribution

# Component -> the file name pattern of its library (the soname's major, then what follows).
SONAMES = {
    "cudnn": re.compile(r"^libcudnn\.so\.(\d+)$"),
    "cublas": re.compile(r"^libcublas\.so\.(\d+)$"),
    "cusparse": re.compile(r"^libcusparse\.so\.(\d+)$"),
    "nccl": re.compile(r"^libnccl\.so\.(\d+)$"),
}
# NVIDIA's pip wheels: component -> (distribution name pattern, module directory under nvidia/).
PIP = {
    "cudnn": (re.compile(r"^nvidia-cudnn(?:-cu\d+)?$"), "cudnn"),
    "cublas": (re.compile(r"^nvidia-cublas(?:-cu\d+)?$"), "cublas"),
    "cusparse": (re.compile(r"^nvidia-cusparse(?:-cu\d+)?$"), "cusparse"),
    "nccl": (re.compile(r"^nvidia-nccl(?:-cu\d+)?$"), "nccl"),
}
# What the JAX CUDA plugins load (jax_plugins/cuda/__init__.py @ cec06d11): CUDA 13's cuSPARSE
# keeps soname 12; CUDA 13 wheels put every library in nvidia/cu13/lib.
JAX_PLUGIN_SONAMES = {
    major: {"cudnn": "libcudnn.so.9", "cublas": f"libcublas.so.{major}", "cusparse": "libcusparse.so.12"}
    | {"nccl": "libnccl.so.2"}
    for major in (12, 13)
}
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
_VERSIONED = re.compile(r"\.so\.(\d+(?:\.\d+)+)$")


def loaded(
    installed: Mapping[str, Distribution],
    environ: Mapping[str, str],
    cache: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Framework -> component -> the copy its loader will find: version, path, source, why."""
    cache = ldcache.entries() if cache is None else cache
    ld_library_path = [d for d in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    found: dict[str, dict[str, Any]] = {}
    for framework, (library, wanted, preload) in _frameworks(installed).items():
        dynamic = elf.dynamic(library)
        if dynamic is None:
            continue
        rpath, runpath = elf.search_dirs(dynamic, library.parent)
        sonames = dict(wanted)
        for name in dynamic.needed:  # what the library links is the truth where it says
            component = next((c for c, pattern in SONAMES.items() if pattern.match(name)), None)
            if component:
                sonames[component] = name
        copies = {}
        for component, soname in sonames.items():
            order = [(d, f"{framework} loads the pip wheel by path") for d in preload.get(component, ())]
            order += [(Path(d), "RPATH") for d in rpath]
            order += [(Path(d), "LD_LIBRARY_PATH") for d in ld_library_path]
            order += [(Path(d), "RUNPATH") for d in runpath]
            copy = _search(soname, order, cache, installed, library.parent)
            if copy:
                copies[component] = copy
        if copies:
            found[framework] = copies
    return found


def _frameworks(
    installed: Mapping[str, Distribution],
) -> dict[str, tuple[Path, dict[str, str], dict[str, list[Path]]]]:
    """Framework -> (the library that loads CUDA's, sonames it dlopens, directories loaded first)."""
    frameworks: dict[str, tuple[Path, dict[str, str], dict[str, list[Path]]]] = {}
    torch = installed.get("torch")
    if torch:
        lib = torch.site / "torch" / "lib"
        # libtorch_cuda.so from 1.11 on; 1.9-1.10 split it into _cu and _cpp (cuDNN in _cu).
        for name in ("libtorch_cuda.so", "libtorch_cuda_cu.so"):
            if (lib / name).is_file():
                frameworks["torch"] = (lib / name, {}, {})
                break
    tensorflow = installed.get("tensorflow") or installed.get("tf-nightly")
    if tensorflow and (tensorflow.site / "tensorflow" / "libtensorflow_framework.so.2").is_file():
        # TensorFlow dlopens cuDNN and friends by their major version (build_info) at GPU set-up.
        frameworks["tensorflow"] = (tensorflow.site / "tensorflow" / "libtensorflow_framework.so.2", {}, {})
    for major in (13, 12):
        plugin = installed.get(f"jax-cuda{major}-plugin")
        library = plugin.site / f"jax_plugins/xla_cuda{major}/xla_cuda_plugin.so" if plugin else None
        pjrt = installed.get(f"jax-cuda{major}-pjrt")
        if pjrt and not (library and library.is_file()):
            library = pjrt.site / f"jax_plugins/xla_cuda{major}/xla_cuda_plugin.so"
        if library and library.is_file():
            wheels = "cu13" if major == 13 else None
            preload = {
                component: [library.parents[2] / "nvidia" / (wheels or PIP[component][1]) / "lib"]
                for component in JAX_PLUGIN_SONAMES[major]
            }
            frameworks["jax"] = (library, JAX_PLUGIN_SONAMES[major], preload)
            break
    return frameworks


def _search(
    soname: str,
    order: list[tuple[Path, str]],
    cache: Mapping[str, Sequence[str]],
    installed: Mapping[str, Distribution],
    home: Path,
) -> dict[str, Any] | None:
    steps = [*order, *((Path(p).parent, "ld.so.cache") for p in cache.get(soname, ()))]
    steps += [(Path(d), "default directories") for d in DEFAULT_DIRS]
    for directory, how in steps:
        candidate = Path(directory) / soname
        if candidate.is_file():
            return _copy(candidate, how, installed, home)
    return None


def _copy(path: Path, how: str, installed: Mapping[str, Distribution], home: Path) -> dict[str, Any]:
    """A found library: its version (real file name, else its pip wheel, else the soname) and origin.

    `source` is where the copy came from (pip, bundled with the framework, or the directory kind that
    held it); `found_by` the step of the loader's search that found it.
    """
    real = Path(os.path.realpath(path))
    match = _VERSIONED.search(real.name)
    version = match.group(1) if match else None
    wheel = _wheel(real, installed)
    if wheel and wheel.version and (version is None or len(wheel.version) > len(version)):
        version = wheel.version
    if version is None:
        major = re.search(r"\.so\.(\d+)$", path.name)
        version = major.group(1) if major else None
    if wheel:
        source = "pip"
    elif os.path.realpath(path.parent) == os.path.realpath(home):
        source = "bundled"
    else:
        source = how
    return {"version": version, "path": str(path), "source": source, "found_by": how}


def _wheel(path: Path, installed: Mapping[str, Distribution]) -> Distribution | None:
    """The NVIDIA pip wheel whose files include `path` (site-packages/nvidia/<module>/lib/...)."""
    parts = path.parts
    if "nvidia" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("nvidia")
    site, module = Path(*parts[:at]), parts[at + 1] if at + 1 < len(parts) else ""
    for name, dist in installed.items():
        if dist.site != site:
            continue
        for pattern, directory in PIP.values():
            if pattern.match(name) and directory == module:
                return dist
        if module == "cu13" and name.startswith("nvidia-") and not re.search(r"-cu\d+$", name):
            return dist if _owns(dist, path.name) else None
    return None


def _owns(dist: Distribution, filename: str) -> bool:
    # A CUDA 13 wheel installs into the shared nvidia/cu13/lib: its RECORD names its own files.
    try:
        with (dist.path / "RECORD").open("rb") as handle:
            return filename.encode() in handle.read(1024 * 1024)
    except OSError:
        return False
