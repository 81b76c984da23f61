"""The CUDA architectures the installed frameworks were compiled for, read from their own libraries.

PyTorch's libtorch_cuda.so, jaxlib's CUDA plugin and TensorFlow's libraries carry their
kernels as fat binaries; fatbin.py reads which sm_XY (SASS) and compute_XY (PTX) targets they
hold, without importing the framework. What is read here is preferred over the knowledge
tables, which stay for what cannot be read (a facts file without it, an unreadable library).
"""

from __future__ import annotations

from hwcheck.base.inputs import matching_paths
from hwcheck.probes.nvidia.fatbin import cached_architectures
from hwcheck.probes.nvidia.wheels import jax_cuda_plugins
from hwcheck.probes.result import ABSENT, OK, ProbeResult, left_unread, out_of_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# framework -> (its distributions, the library files holding its CUDA kernels, relative to the
# site directory). Globs, since plugin folders carry the CUDA major (jax_cuda12_plugin). JAX's
# distributions are its CUDA plugins (rules/knowledge/jax.toml), then jaxlib: see _distributions.
LIBRARIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "torch": (("torch",), ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_cuda_cu.so")),
    "jax": (
        ("jaxlib",),
        (
            "jax_plugins/xla_cuda1[0-9]/xla_cuda_plugin.so",
            "jax_cuda1[0-9]_plugin/_*.so",
            "jaxlib/cuda/_*.so",
            "jaxlib/xla_extension.so",
        ),
    ),
    "tensorflow": (
        ("tensorflow", "tf-nightly"),
        (
            "tensorflow/libtensorflow_cc.so.2",
            "tensorflow/python/_pywrap_tensorflow_internal.so",
            "tensorflow/libtensorflow_framework.so.2",
        ),
    ),
}
MAX_FILES = 16  # per framework


def probe(site_dirs: Iterable[str] | None = None) -> ProbeResult:
    """The "compiled_arches" facts: per framework, the architectures its CUDA libraries carry."""
    from hwcheck.probes.site_packages import distributions

    folders: dict[str, list[str]] = {}
    for dist in distributions(site_dirs):
        folders.setdefault(dist.name, []).append(dist.folder)
    found: dict[str, Any] = {}
    for framework, (names, patterns) in LIBRARIES.items():
        names = _distributions(framework, names)
        sites = list(dict.fromkeys(folder for name in names for folder in folders.get(name, ())[:1]))
        read = _read(sites, patterns)
        if read:
            found[framework] = read
    if not found:
        return ProbeResult(ABSENT, {}, reason="no installed framework library carries CUDA device code")
    return ProbeResult(OK, {"compiled_arches": found})


def _distributions(framework: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """A framework's distributions to look in: for JAX its CUDA plugins first, then PJRTs, then jaxlib."""
    if framework != "jax":
        return names
    plugins = jax_cuda_plugins()
    return (*(plugin for _, plugin, _ in plugins), *(pjrt for _, _, pjrt in plugins), *names)


def _read(sites: list[str], patterns: tuple[str, ...]) -> dict[str, Any] | None:
    files = [
        path
        for site in sites
        for pattern in patterns
        for path in matching_paths(site, pattern, limit=MAX_FILES)
    ]
    sm: set[str] = set()
    ptx: set[str] = set()
    read: list[str] = []
    complete = True
    paths = list(dict.fromkeys(files))[:MAX_FILES]
    for number, path in enumerate(paths):
        if number and out_of_time():
            left_unread(f"{len(paths) - number} of {len(paths)} libraries were read")
            complete = False
            break
        carried = cached_architectures(path)
        if carried is None:
            continue
        sm.update(carried.sm)
        ptx.update(carried.ptx)
        complete = complete and carried.complete
        read.append(path)
    if not read:
        return None
    return {
        "sm": sorted(sm, key=_number),
        "ptx": sorted(ptx, key=_number),
        "files": read,
        "complete": complete,
    }


def _number(name: str) -> int:
    """sm_90 -> 90: the order sorts sm_100 after sm_90."""
    return int(name.rpartition("_")[2])
