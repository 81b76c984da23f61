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

from hwcheck.base.inputs import joined, plain_path, read_head
from hwcheck.probes import elf, ldcache
from hwcheck.probes.nvidia.wheels import is_nvidia_wheel, jax_cuda_plugins, nvidia_wheels

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from hwcheck.probes.site_packages import Distribution

# Names are matched with string methods and paths joined as text (doctor's start-up, docs/benchmarks.md):
# component -> the soname's stem, followed by its major version (libcudnn.so.9).
SONAMES = {
    "cudnn": "libcudnn.so.",
    "cublas": "libcublas.so.",
    "cusparse": "libcusparse.so.",
    "nccl": "libnccl.so.",
}
# The libraries read from NVIDIA's pip wheels (names and folders: rules/knowledge/nvidia.toml).
PIP = ("cudnn", "cublas", "cusparse", "nccl")
# What the JAX CUDA plugins load (jax_plugins/cuda/__init__.py @ cec06d11): CUDA 13's cuSPARSE
# keeps soname 12; CUDA 13 wheels put every library in nvidia/cu13/lib.
JAX_PLUGIN_SONAMES = {
    major: {"cudnn": "libcudnn.so.9", "cublas": f"libcublas.so.{major}", "cusparse": "libcusparse.so.12"}
    | {"nccl": "libnccl.so.2"}
    for major in (12, 13)
}
DEFAULT_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
# Compiled on first use (re caches it), only where a library was found.
_VERSIONED = r"\.so\.(\d+(?:\.\d+)+)$"


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
        rpath, runpath = elf.search_dirs(dynamic, _parent(library))
        sonames = dict(wanted)
        for name in dynamic.needed:  # what the library links is the truth where it says
            component = next((c for c, stem in SONAMES.items() if _major(name, stem)), None)
            if component:
                sonames[component] = name
        copies = {}
        for component, soname in sonames.items():
            order = [(d, f"{framework} loads the pip wheel by path") for d in preload.get(component, ())]
            order += [(plain_path(d), "RPATH") for d in rpath]
            order += [(plain_path(d), "LD_LIBRARY_PATH") for d in ld_library_path]
            order += [(plain_path(d), "RUNPATH") for d in runpath]
            copy = _search(soname, order, cache, installed, _parent(library))
            if copy:
                copies[component] = copy
        if copies:
            found[framework] = copies
    return found


def _frameworks(
    installed: Mapping[str, Distribution],
) -> dict[str, tuple[str, dict[str, str], dict[str, list[str]]]]:
    """Framework -> (the library that loads CUDA's, sonames it dlopens, directories loaded first)."""
    frameworks: dict[str, tuple[str, dict[str, str], dict[str, list[str]]]] = {}
    torch = installed.get("torch")
    if torch:
        lib = joined(torch.folder, "torch", "lib")
        # libtorch_cuda.so from 1.11 on; 1.9-1.10 split it into _cu and _cpp (cuDNN in _cu).
        for name in ("libtorch_cuda.so", "libtorch_cuda_cu.so"):
            if os.path.isfile(joined(lib, name)):
                frameworks["torch"] = (joined(lib, name), {}, {})
                break
    tensorflow = installed.get("tensorflow") or installed.get("tf-nightly")
    tensorflow_library = "libtensorflow_framework.so.2"
    framework_library = joined(tensorflow.folder, "tensorflow", tensorflow_library) if tensorflow else ""
    if framework_library and os.path.isfile(framework_library):
        # TensorFlow dlopens cuDNN and friends by their major version (build_info) at GPU set-up.
        frameworks["tensorflow"] = (framework_library, {}, {})
    for major, plugin_name, pjrt_name in jax_cuda_plugins():
        if major not in JAX_PLUGIN_SONAMES:
            continue  # a CUDA major whose plugin's libraries are not recorded here
        plugin_file = f"jax_plugins/xla_cuda{major}/xla_cuda_plugin.so"
        plugin = installed.get(plugin_name)
        library = joined(plugin.folder, plugin_file) if plugin else None
        pjrt = installed.get(pjrt_name)
        if pjrt and not (library and os.path.isfile(library)):
            library = joined(pjrt.folder, plugin_file)
        if library and os.path.isfile(library):
            wheels = "cu13" if major == 13 else None
            site = _parent(_parent(_parent(library)))
            preload = {
                component: [joined(site, "nvidia", wheels or nvidia_wheels()[component][1], "lib")]
                for component in JAX_PLUGIN_SONAMES[major]
            }
            frameworks["jax"] = (library, JAX_PLUGIN_SONAMES[major], preload)
            break
    return frameworks


def _search(
    soname: str,
    order: list[tuple[str, str]],
    cache: Mapping[str, Sequence[str]],
    installed: Mapping[str, Distribution],
    home: str,
) -> dict[str, Any] | None:
    steps = [*order, *((_parent(plain_path(p)), "ld.so.cache") for p in cache.get(soname, ()))]
    steps += [(d, "default directories") for d in DEFAULT_DIRS]
    for directory, how in steps:
        candidate = joined(directory, soname)
        if os.path.isfile(candidate):
            return _copy(candidate, how, installed, home)
    return None


def _parent(path: str) -> str:
    """What Path(path).parent names."""
    return os.path.dirname(path) or "."


def _major(name: str, stem: str) -> bool:
    # `stem` and a major version: libcudnn.so.9.
    return name.startswith(stem) and name[len(stem) :].isdecimal()


def _copy(path: str, how: str, installed: Mapping[str, Distribution], home: str) -> dict[str, Any]:
    """A found library: its version (real file name, else its pip wheel, else the soname) and origin.

    `source` is where the copy came from (pip, bundled with the framework, or the directory kind that
    held it); `found_by` the step of the loader's search that found it.
    """
    real = os.path.realpath(path)
    match = re.search(_VERSIONED, os.path.basename(real))
    version = match.group(1) if match else None
    wheel = _wheel(real, installed)
    if wheel and wheel.version and (version is None or len(wheel.version) > len(version)):
        version = wheel.version
    if version is None:
        major = re.search(r"\.so\.(\d+)$", os.path.basename(path))
        version = major.group(1) if major else None
    if wheel:
        source = "pip"
    elif os.path.realpath(_parent(path)) == os.path.realpath(home):
        source = "bundled"
    else:
        source = how
    return {"version": version, "path": path, "source": source, "found_by": how}


def _wheel(path: str, installed: Mapping[str, Distribution]) -> Distribution | None:
    """The NVIDIA pip wheel whose files include `path` (site-packages/nvidia/<module>/lib/...)."""
    parts = path.split(os.sep)  # a real path: absolute, no empty or "." parts
    if "nvidia" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("nvidia")
    site, module = os.sep.join(parts[:at]) or os.sep, parts[at + 1] if at + 1 < len(parts) else ""
    for name, dist in installed.items():
        if plain_path(dist.folder) != site:
            continue
        for library in PIP:
            if is_nvidia_wheel(name, library) and nvidia_wheels()[library][1] == module:
                return dist
        # Several CUDA 13 wheels share nvidia/cu13/lib: the owner is the one whose RECORD names the
        # file, whichever order the distributions come in.
        if module == "cu13" and name.startswith("nvidia-") and not re.search(r"-cu\d+$", name):
            if _owns(dist, os.path.basename(path)):
                return dist
    return None


def _owns(dist: Distribution, filename: str) -> bool:
    # A CUDA 13 wheel installs into the shared nvidia/cu13/lib: its RECORD names its own files.
    try:
        return filename.encode() in read_head(joined(dist.info, "RECORD"), 1024 * 1024)
    except OSError:
        return False
