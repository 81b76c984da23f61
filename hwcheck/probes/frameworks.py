"""Frameworks probe: TensorFlow, Keras, PyTorch, JAX and PyTorch's trainers, read from their installed files.

Nothing here imports a framework: importing TensorFlow takes seconds and grabs the GPU.
Versions come from the dist-info directory names; TensorFlow's build (CUDA or not, and
the CUDA/cuDNN it was built for) from its build_info.py, and PyTorch's CUDA from
torch/version.py, both read from their syntax trees (probes/literals.py), never executed.
"""

from __future__ import annotations

import os
import re

from hwcheck.base.inputs import joined
from hwcheck.base.versions import version_key
from hwcheck.probes.literals import module_constants
from hwcheck.probes.nvidia.wheels import is_nvidia_wheel, jax_cuda_plugins
from hwcheck.probes.packages import versions as package_versions
from hwcheck.probes.result import ABSENT, OK, ProbeResult
from hwcheck.probes.site_packages import Distribution, distributions, requirements

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

# Distributions that install the `tensorflow` module, in the order to believe them:
# `tensorflow` before the others because on Windows it pulls in tensorflow-intel and on macOS
# tensorflow-macos pulls it in, and the user asked for `tensorflow`. The TPU builds come before
# it: Colab's advice installs tensorflow and then tensorflow-tpu of the same release over it
# (https://github.com/googlecolab/colabtools/issues/5228), and then the TPU build is what runs.
TENSORFLOW_PACKAGES = (
    "tensorflow-tpu",
    "tf-nightly-tpu",
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tf-nightly",
    "tf-nightly-cpu",
    "tf-nightly-gpu",
    "tensorflow-macos",
    "tensorflow-intel",
    "intel-tensorflow",
    "tensorflow-aarch64",
    "tensorflow-cpu-aws",
    "tensorflow-rocm",
)
BUILD_INFO = joined("python", "platform", "build_info.py")
# Patterns as text: re compiles each on first use and caches it (doctor's start-up, docs/benchmarks.md).
ARCH_NAME = r"(?:sm|compute)_[0-9]{2,3}"
# TensorFlow's KerasLazyLoader (tensorflow/python/util/lazy_loader.py, present from
# TF 2.15) routes tf.keras: to tf_keras when TF_USE_LEGACY_KERAS is one of these exact
# strings, else to the installed `keras` (Keras 3 by default from TF 2.16, whose wheel
# requires it; TF 2.15's requires keras 2.15). Older TF always gives Keras 2.
LEGACY_KERAS_VALUES = ("true", "True", "1")
KERAS_LAZY_LOADER_FROM_TF = (2, 15)
NOT_INSTALLED = "no ML framework installed (tensorflow, keras, torch, jax)"
# The trainers people run PyTorch through, by facts key, with the distributions that install
# each (the first installed one is believed): `lightning` and `pytorch-lightning` both install
# Lightning 2.x (import lightning.pytorch / pytorch_lightning).
TRAINER_PACKAGES = {
    "lightning": ("lightning", "pytorch-lightning"),
    "transformers": ("transformers",),
    "accelerate": ("accelerate",),
    "deepspeed": ("deepspeed",),
}


def probe(
    *, site_dirs: Sequence[str | Path] | None = None, environ: Mapping[str, str] | None = None
) -> ProbeResult:
    """TensorFlow (version, package, build), Keras and tf.keras, PyTorch and JAX versions."""
    environ = os.environ if environ is None else environ
    installed: dict[str, Distribution] = {}
    for dist in distributions(site_dirs):
        installed.setdefault(dist.name, dist)  # the first on the path is the one imported
    problems: list[str] = []
    frameworks: dict[str, Any] = {}
    tensorflow = _tensorflow(installed, problems)
    if tensorflow:
        frameworks["tensorflow"] = tensorflow
    if tensorflow or "keras" in installed or "tf-keras" in installed:
        frameworks["keras"] = _keras(installed, tensorflow, environ)
    if "torch" in installed:
        frameworks["torch"] = {
            **_torch(installed["torch"], problems),
            "ipex": _version(installed, "intel-extension-for-pytorch"),
            "xla": _version(installed, "torch-xla"),
        }
        if "torch-xla" in installed:
            # The libtpu torch_xla was built against: its [tpu] extra pins it (torch_xla[tpu]).
            frameworks["torch"]["xla_libtpu"] = libtpu_pin(installed["torch-xla"])
    if "jax" in installed or "jaxlib" in installed:
        frameworks["jax"] = {
            "version": _version(installed, "jax"),
            "jaxlib": _version(installed, "jaxlib"),
            **_jax_cuda(installed),
        }
        pin = libtpu_pin(installed["jax"]) if "jax" in installed else None
        if pin:
            frameworks["jax"]["libtpu_pin"] = pin  # the libtpu jax[tpu] installs
    for key, packages in TRAINER_PACKAGES.items():
        package = next((name for name in packages if name in installed), None)
        if package is not None:
            frameworks[key] = {"version": installed[package].version, "package": package}
    reason = "; ".join(problems) or None
    # The atlas's packages (numpy, protobuf, triton...), from the same listing.
    listed = {"packages": package_versions(installed)}
    if not frameworks:
        return ProbeResult(ABSENT, {"frameworks": {}, **listed}, NOT_INSTALLED)
    return ProbeResult(OK, {"frameworks": frameworks, **listed}, reason)


def _tensorflow(installed: dict[str, Distribution], problems: list[str]) -> dict[str, Any] | None:
    package = next((name for name in TENSORFLOW_PACKAGES if name in installed), None)
    if package is None:
        return None
    dist = installed[package]
    facts: dict[str, Any] = {
        "version": dist.version,
        "package": package,
        # Apple's PluggableDevice for Macs: its release must match TensorFlow's (rules/knowledge/apple.toml).
        "metal_plugin": _version(installed, "tensorflow-metal"),
    }
    module = joined(dist.folder, "tensorflow")
    if os.path.isdir(module):
        facts["location"] = module
    build_info = joined(module, BUILD_INFO)
    try:
        constants = module_constants(build_info)
    except FileNotFoundError:
        problems.append(f"{build_info} is missing: TensorFlow's build type is unknown")
        return facts
    except (OSError, SyntaxError, ValueError) as error:
        problems.append(f"{build_info} is unreadable ({type(error).__name__}): build type unknown")
        return facts
    # TF >= 2.3 keeps a build_info dict; older releases wrote module-level names
    # (is_cuda_build, cuda_version_number, cudnn_version_number).
    info = {**constants, **(constants.get("build_info") or {})}
    for key, fact in (("is_cuda_build", "cuda_build"), ("is_rocm_build", "rocm_build")):
        if isinstance(info.get(key), bool):
            facts[fact] = info[key]
    for keys, fact in (
        (("cuda_version", "cuda_version_number"), "cuda"),
        (("cudnn_version", "cudnn_version_number"), "cudnn"),
    ):
        value = next((info[key] for key in keys if info.get(key)), None)
        if value is not None:
            facts[fact] = str(value)
    # The SASS (sm_XY) and PTX (compute_XY) architectures the build was configured with
    # (TF_CUDA_COMPUTE_CAPABILITIES): the wheel's own record, for nightlies and local builds too.
    arches = info.get("cuda_compute_capabilities")
    if isinstance(arches, list | tuple):
        named = [str(arch) for arch in arches if isinstance(arch, str) and re.fullmatch(ARCH_NAME, arch)]
        if named:
            facts["arch_list"] = named[:64]
    return facts


def _keras(
    installed: dict[str, Distribution], tensorflow: dict[str, Any] | None, environ: Mapping[str, str]
) -> dict[str, Any]:
    keras, tf_keras = _version(installed, "keras"), _version(installed, "tf-keras")
    legacy = environ.get("TF_USE_LEGACY_KERAS") in LEGACY_KERAS_VALUES
    facts = {
        "version": keras,
        "tf_keras": tf_keras,
        "legacy": legacy,
        "tf_keras_major": _tf_keras_major(tensorflow, keras, tf_keras, legacy),
    }
    config_backend = keras_config_backend(environ)
    if config_backend is not None:
        facts["config_backend"] = config_backend
    return facts


def keras_config_backend(environ: Mapping[str, str]) -> str | None:
    """The backend Keras 3's keras.json names, found where Keras looks; None when there is none.

    Keras reads $KERAS_HOME/keras.json, else ~/.keras/keras.json (/tmp/.keras when the home
    directory is not writable); KERAS_BACKEND, recorded by the environment probe, overrides it.
    """
    import json

    from hwcheck.base.errors import InputError
    from hwcheck.base.inputs import plain_path, read_bytes

    if "KERAS_HOME" in environ:
        directory = os.path.expanduser(plain_path(environ["KERAS_HOME"]))
    elif environ.get("HOME"):
        home = plain_path(environ["HOME"])
        directory = joined(home if os.access(home, os.W_OK) else "/tmp", ".keras")
    else:
        return None  # no home to look in
    try:
        config = json.loads(
            read_bytes(joined(directory, "keras.json"), expected="Keras' keras.json", max_bytes=64 * 1024)
        )
    except (InputError, ValueError, RecursionError):
        return None  # absent or unreadable: Keras then falls back to its default too
    backend = config.get("backend") if isinstance(config, dict) else None
    return backend if isinstance(backend, str) and backend else None


def _tf_keras_major(
    tensorflow: dict[str, Any] | None, keras: str | None, tf_keras: str | None, legacy: bool
) -> int | None:
    """The Keras major version `tf.keras` gives, as TensorFlow's KerasLazyLoader decides it."""
    if tensorflow is None:
        return None
    if version_key(tensorflow.get("version"))[:2] < KERAS_LAZY_LOADER_FROM_TF:
        return 2
    if legacy:
        return 2 if tf_keras else None  # without tf_keras, tf.keras fails to import
    if keras is None:
        return None
    return 3 if keras.startswith("3.") else 2


def _torch(dist: Distribution, problems: list[str]) -> dict[str, Any]:
    from hwcheck.probes.apple.macho import torch_mps_built

    mps_built, unknown = torch_mps_built(joined(dist.folder, "torch"))
    if unknown:
        problems.append(unknown)
    path = joined(dist.folder, "torch", "version.py")
    try:
        constants = module_constants(path)
    except (OSError, SyntaxError, ValueError) as error:
        problems.append(f"{path} is unreadable ({type(error).__name__}): PyTorch's CUDA is unknown")
        return {"version": dist.version, "mps_built": mps_built}
    cuda, xpu = constants.get("cuda"), constants.get("xpu")
    version = dist.version or constants.get("__version__")
    facts = {
        "version": version,
        "cuda": str(cuda) if cuda else None,
        "mps_built": mps_built,
        # torch/version.py names the SYCL toolchain of an XPU build ("20250201"); None in the others.
        "xpu": str(xpu)[:64] if xpu else None,
    }
    # A ROCm build names its HIP (and, from 2.x, its ROCm) in version.py and tags its wheel +rocmX.Y.
    hip, rocm = constants.get("hip"), constants.get("rocm")
    tagged = re.search(TORCH_ROCM_TAG, str(version)) if "+rocm" in str(version or "") else None
    facts["hip"] = str(hip) if hip else None
    facts["rocm_build"] = bool(hip or tagged)
    facts["rocm"] = str(rocm) if rocm else (tagged.group(1) if tagged else None)
    # The CUDA libraries a wheel was built with are pinned in its METADATA (the pip-cuDNN builds:
    # nvidia-cudnn-cu12==9.1.0.70); a wheel that bundles them in torch/lib pins nothing.
    for component, pinned in _pinned(dist).items():
        facts[component] = pinned
    return facts


# PyTorch's ROCm wheels carry the ROCm release in their local version: 2.4.0+rocm6.1, 2.6.0+rocm6.2.4.
TORCH_ROCM_TAG = r"\+rocm([0-9]+(?:\.[0-9]+){0,2})"


JAX_METAL_PLUGIN = "jax-metal"
# Before the plugins (jaxlib < 0.4.30) CUDA builds were jaxlib wheels with a local version:
# "0.1.59+cuda111", "0.4.9+cuda11.cudnn86".
JAXLIB_CUDA_LOCAL = r"\+cuda(\d+)(?:\.|$)"


# JAX's ROCm plugins name the ROCm release they target: jax-rocm60-plugin (6.0), jax-rocm7-pjrt (7).
JAX_ROCM_PLUGIN = r"jax-rocm([0-9])([0-9]?)-(?:plugin|pjrt)"


def _jax_cuda(installed: dict[str, Distribution]) -> dict[str, Any]:
    """Whether jaxlib can drive NVIDIA or AMD GPUs: a CUDA or ROCm plugin, a +cuda jaxlib, or neither."""
    # JAX's CUDA plugins, newest CUDA first: jax[cudaNN] installs the plugin and its PJRT runtime.
    found = next(
        ((major, name, names) for major, *names in jax_cuda_plugins() for name in names if name in installed),
        None,
    )
    if found is not None:
        major, plugin, (plugin_name, pjrt_name) = found
        facts: dict[str, Any] = {"cuda_build": True, "cuda": str(major), "plugin": plugin}
        for kind, name in (("plugin", plugin_name), ("pjrt", pjrt_name)):
            dist = installed.get(name)
            if dist and dist.version:
                facts[f"{kind}_version"] = dist.version
        source = installed.get(plugin_name) or installed[plugin]
        minimums = _minimums(source)
        if minimums:
            facts["requires"] = minimums
        return facts
    rocm_plugins = (name for name in sorted(installed) if name.startswith("jax-rocm"))
    rocm = next((match for name in rocm_plugins if (match := re.fullmatch(JAX_ROCM_PLUGIN, name))), None)
    if rocm is not None:
        release = rocm.group(1) + (f".{rocm.group(2)}" if rocm.group(2) else "")
        return {"rocm_build": True, "rocm": release, "plugin": rocm.group(0)}
    metal = installed.get(JAX_METAL_PLUGIN)
    if metal is not None:  # Apple's PJRT plugin: jaxlib itself stays a CPU build
        return {
            "cuda_build": False,
            "cuda": None,
            "plugin": JAX_METAL_PLUGIN,
            "plugin_version": metal.version,
        }
    jaxlib = installed.get("jaxlib")
    match = re.search(JAXLIB_CUDA_LOCAL, jaxlib.version or "") if jaxlib else None
    if match:
        digits = match.group(1)
        # "cuda111" is CUDA 11.1; "cuda11" / "cuda12" name only the major version.
        cuda = digits if len(digits) <= 2 else f"{digits[:-1]}.{digits[-1]}"
        return {"cuda_build": True, "cuda": cuda}
    if jaxlib is None or _bundles_cuda(jaxlib):
        return {}  # no jaxlib, or a build (conda-forge's) whose CUDA version the metadata does not say
    return {"cuda_build": False, "cuda": None}


def _bundles_cuda(jaxlib: Distribution) -> bool:
    # conda-forge's CUDA jaxlib keeps an unsuffixed version but ships its CUDA extensions inside.
    try:
        names = os.listdir(joined(jaxlib.folder, "jaxlib", "cuda"))
    except OSError:
        return False
    return any(name.endswith((".so", ".pyd")) for name in names)


# The libraries hwcheck compares with what a framework was built with (their NVIDIA wheels' names:
# rules/knowledge/nvidia.toml [pip_wheels]).
_COMPARED = ("cudnn", "cublas", "cusparse", "nccl")
_PIN = r"==\s*([0-9][0-9.]*)"
_MINIMUM = r">=\s*([0-9][0-9.]*)"


def _pinned(dist: Distribution) -> dict[str, str]:
    """Library -> the exact version a distribution's METADATA pins for NVIDIA's wheel of it."""
    pins = {}
    for name, specifiers, _ in requirements(dist, starting="nvidia"):
        for component in _COMPARED:
            match = re.fullmatch(_PIN, specifiers) if is_nvidia_wheel(name, component) else None
            if match:
                pins[component] = match.group(1)
    return pins


def _minimums(dist: Distribution) -> dict[str, str]:
    """Library -> the lowest version a distribution's METADATA allows for NVIDIA's wheel of it."""
    floors = {}
    for name, specifiers, _ in requirements(dist, starting="nvidia"):
        for component in _COMPARED:
            match = re.search(_MINIMUM, specifiers) if is_nvidia_wheel(name, component) else None
            if match:
                floors[component] = match.group(1)
    return floors


# libtpu==0.0.15.* (jax[tpu]), libtpu==0.0.7.1 or libtpu-nightly==0.1.dev20240612 (torch_xla[tpu]).
_LIBTPU_PIN = r"==\s*([0-9][0-9A-Za-z.+*]*)"


def libtpu_pin(dist: Distribution) -> str | None:
    """The libtpu release a distribution's METADATA pins (its [tpu] extra), None when it pins none."""
    for name, specifiers, _ in requirements(dist, starting="libtpu"):
        match = re.search(_LIBTPU_PIN, specifiers) if name in ("libtpu", "libtpu-nightly") else None
        if match:
            return match.group(1)[:64]
    return None


def _version(installed: dict[str, Distribution], name: str) -> str | None:
    dist = installed.get(name)
    return dist.version if dist else None
