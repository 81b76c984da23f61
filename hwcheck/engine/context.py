"""Turns facts into the variables rule conditions read: every field present, unknown as null.

Only facts and knowledge-table lookups happen here (a GPU's compute capability from
its name, features from the capability, TensorFlow's tested CUDA); what those facts
*mean* for training is decided by the rules in rules/policy/.
"""

from __future__ import annotations

import hwcheck.engine.all_gpus as all_gpus
import hwcheck.engine.compat_jax as compat_jax
import hwcheck.engine.compat_libraries as compat_libraries
import hwcheck.engine.compat_platform as compat_platform
import hwcheck.engine.compat_tensorflow as compat_tensorflow
import hwcheck.engine.compat_torch as compat_torch
import hwcheck.engine.compiled as compiled
import hwcheck.engine.measured as measured
import hwcheck.engine.node as node
import hwcheck.engine.stacks as stacks
import hwcheck.engine.unknowns as unknowns
import hwcheck.engine.verified as verified
from hwcheck import devices, knowledge
from hwcheck.base.safe import without_lone_surrogates
from hwcheck.base.versions import major_minor, version_less
from hwcheck.engine.native import labels, runtime_row, target
from hwcheck.engine.outcome import runtime_framework
from hwcheck.engine.trainers import installed as installed_trainers
from hwcheck.facts import installed, section
from hwcheck.probes import PROBE_NAMES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def build_context(
    facts: dict[str, Any],
    *,
    probes: dict[str, dict[str, Any]] | None = None,
    framework: str | None = None,
    prefer: str | None = None,
) -> dict[str, Any]:
    """The variables rule conditions and messages are evaluated against.

    `framework` is what the training script uses (keras, tensorflow, torch, jax; picked from
    the installed ones when None); `backend` the runtime that executes it.
    """
    facts = devices.complete(facts)
    frameworks = section(facts, "frameworks")
    chosen = target(facts, framework)
    # GPUs the verifying framework listed where the probes found none: the observation wins.
    facts = verified.with_observed_gpus(facts, runtime_framework(chosen.framework))
    operating_system = section(facts, "os")
    environment = dict(facts.get("environment") or {})
    # Every vendor's namespaces (gpu.*, amd.*, tpu.*, ...) are about the devices this process
    # will see (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES...): each plug-in builds its own.
    vendors = devices.variables(
        devices.Asked(facts, chosen.backend, frameworks, environment, operating_system)
    )
    # The GPUs a CUDA build runs on, for the framework builds' kernel checks.
    gpus = devices.cuda_gpus(facts, chosen.backend)
    trainers = installed_trainers(frameworks)
    # Bench results and PyTorch's builds speak for a trainer's advice as for PyTorch's.
    family = runtime_framework(chosen.framework)
    context: dict[str, Any] = {
        "framework": chosen.framework,
        "backend": chosen.backend,
        **labels(chosen.framework, chosen.backend),
        "framework_assumed": chosen.assumed_because is not None,
        "framework_assumed_because": chosen.assumed_because or "",
        "runtime": _runtime(chosen.backend),
        "prefer": prefer or "",
        "cpu": _cpu(section(facts, "cpu"), operating_system, chosen.backend),
        **vendors,
        "cuda": _library(facts, "cuda"),
        "cudnn": _library(facts, "cudnn"),
        "cublas": _library(facts, "cublas"),
        "unknown": unknowns.unknown_variable(facts, chosen.backend),
        "tf": {
            **_tensorflow(section(frameworks, "tensorflow"), operating_system),
            **_present(frameworks, "tensorflow"),
        },
        "keras": _keras(section(frameworks, "keras")),
        "torch": {**_torch(section(frameworks, "torch")), **_present(frameworks, "torch")},
        "jax": {**_present(frameworks, "jax"), "version": section(frameworks, "jax").get("version")},
        "trainers": trainers,
        # The trainer the advice is for (name empty when it is for a framework itself).
        "trainer": {"name": chosen.framework, **trainers[chosen.framework]}
        if chosen.framework in trainers
        else {"name": "", "installed": False, "version": None, "package": "", "label": "", "install": ""},
        "os": _os(operating_system),
        "python": {"version": section(facts, "python").get("version")},
        "pkg": _packages(facts),
        "env": environment,
        "probes": _probes(node.recorded_statuses(facts, probes)),
        "bench": measured.variables(facts, family, chosen.backend),
        "measure": measured.measure_variables(facts, family, chosen.backend),
        "verified": verified.variables(facts, family),
        "node": node.variables(facts, chosen.backend, environment, vendors),
    }
    # The architectures read from TensorFlow's own libraries, else its build_info list.
    built_for = compiled.arch_list(facts, "tensorflow") or section(frameworks, "tensorflow").get("arch_list")
    built_for = built_for if isinstance(built_for, list) else None
    context["tf"].update(compat_tensorflow.variables(context["tf"], gpus, built_for))
    torch_read = compiled.read_build(facts, "torch")
    aarch64 = (
        knowledge.arch_family(context["cpu"]["arch"]) == "arm"
        or knowledge.arch_family(operating_system.get("machine")) == "arm"
    )
    # A Jetson (a Tegra SoC in the facts) runs a cubin only on its own compute capability.
    torch_variables = compat_torch.variables(
        section(frameworks, "torch"), gpus, torch_read, aarch64=aarch64, tegra=bool(section(facts, "tegra"))
    )
    context["torch"].update(torch_variables)
    context["jax"] = compat_jax.variables(section(frameworks, "jax"), facts, gpus, context["driver"]["cuda"])
    context.update(devices.compat_variables(facts, context, chosen.backend))
    context["platform"] = compat_platform.variables(operating_system)
    context["libs"] = compat_libraries.variables(facts, chosen.backend, environment)
    context["gpus"] = all_gpus.variables(all_gpus.from_devices(devices.visible(facts, chosen.backend)))
    context.update(stacks.variables(facts, context, gpus))  # stacks.*, model.*, distributed.*
    # CEL cannot take a string holding a lone surrogate (a JSON "\\ud800" in a GPU name).
    return without_lone_surrogates(context)


def _cpu(cpu: dict[str, Any], operating_system: dict[str, Any], backend: str) -> dict[str, Any]:
    arch = (cpu.get("arch") or "").lower()
    flags = sorted(set(cpu.get("flags") or []))
    family = knowledge.arch_family(arch)
    # Only a Linux release gates AMX's tile state; uname's release elsewhere is another numbering.
    linux = (operating_system.get("system") or "") == "Linux"
    release = operating_system.get("release")
    kernel = release if linux and isinstance(release, str) else None
    row = knowledge.bf16_class(flags, arch_family=family)
    evidence = row["evidence"].get(backend) or row["evidence"]["torch"]
    fast = bool(row.get("fast_bf16_training"))
    amx_floor = knowledge.kernel_floor("amx_bf16")
    return {
        "known": bool(cpu),
        "arch": arch,
        "x86": family == "x86",
        "vendor": cpu.get("vendor") or "",
        "model": cpu.get("model") or "unknown CPU",
        "flags": flags,
        "flags_known": "flags" in cpu,
        "fast_bf16": fast,
        "bf16_flag": row["flags"][0] if fast else "",
        "bf16_class": row["name"],
        "bf16_label": row["label"],
        "bf16_on": row["on"],
        "bf16_applies": row["applies"],
        "bf16_examples": row["examples"],
        "bf16_min_tf": row.get("min_tensorflow") or "",
        "bf16": {
            "verdict": evidence["verdict"],
            "measured": evidence["measured"],
            "source": evidence["source"],
            "conditions": evidence.get("conditions") or "",
        },
        "float16_flag": row.get("float16") or "",
        "kernel": kernel or "",
        # AMX in the flags under a Linux release before mainline's AMX support (a backport may enable it).
        "amx_kernel_too_old": "amx_bf16" in flags and kernel is not None and version_less(kernel, amx_floor),
    }


def _library(facts: dict[str, Any], key: str) -> dict[str, Any]:
    library = section(facts, key)
    # "known": the probe looked (the section is there), so a null version means none found.
    return {"known": key in facts, "version": library.get("version"), "source": library.get("source")}


def _tensorflow(tensorflow: dict[str, Any], operating_system: dict[str, Any]) -> dict[str, Any]:
    version = tensorflow.get("version")
    cuda = tensorflow.get("cuda")
    tested = (knowledge.tensorflow_build(version) if version else None) or {}
    minimum = (knowledge.cuda_driver_minimum(cuda) if cuda else None) or {}
    windows = (operating_system.get("system") or "").lower() == "windows"
    # A release whose official x86-64 wheels need more than AVX (rules/knowledge/tensorflow.toml).
    cpu_release = knowledge.tensorflow_cpu_release(version) or {}
    return {
        "version": version,
        "version_mm": major_minor(version),
        "package": tensorflow.get("package") or "tensorflow",
        "cuda_build": bool(tensorflow.get("cuda_build")),
        "rocm_build": bool(tensorflow.get("rocm_build")),
        "cuda": cuda,
        "cuda_mm": major_minor(cuda),
        "cudnn": tensorflow.get("cudnn"),
        "tested_cuda": tested.get("cuda"),
        "tested_cudnn": tested.get("cudnn"),
        "tested_python": list(tested.get("python") or []),
        "min_driver": minimum.get("windows" if windows else "linux"),
        "min_driver_minor_compat": minimum.get("minor_compat_windows" if windows else "minor_compat_linux"),
        "cpu_requires": list(cpu_release.get("requires") or []),
        "cpu_fixed_in": cpu_release.get("fixed_in"),
    }


def _keras(keras: dict[str, Any]) -> dict[str, Any]:
    return {
        "installed": bool(keras.get("version")),
        "version": keras.get("version"),
        "tf_keras": keras.get("tf_keras"),
        "legacy": bool(keras.get("legacy")),
        "major": keras.get("tf_keras_major") or 0,
        "keras3": str(keras.get("version") or "").startswith("3."),
        "config_backend": keras.get("config_backend"),
    }


def _torch(torch: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": torch.get("version"),
        "cuda": torch.get("cuda"),
        "cuda_build": torch_cuda_build(torch),
        "mps_built": torch.get("mps_built"),
        "xpu": torch.get("xpu"),
        "xla": torch.get("xla"),
    }


def torch_cuda_build(torch: dict[str, Any]) -> bool | None:
    """Whether torch is a CUDA build: True, False (the CUDA it names is null) or None (unknown)."""
    if isinstance(torch.get("cuda_build"), bool):
        return bool(torch["cuda_build"])
    if torch.get("cuda"):
        return True
    if "+cu" in str(torch.get("version") or ""):
        return True  # the wheel's local version names its CUDA (2.5.1+cu124)
    return False if "cuda" in torch else None


def _present(frameworks: dict[str, Any], name: str) -> dict[str, bool]:
    # The probe writes a section only for an installed package: `"torch": {}` is a torch whose
    # version could not be read (facts.installed), not an absent one.
    return {"installed": installed(frameworks, name)}


def _runtime(backend: str) -> dict[str, Any]:
    row = runtime_row(backend) or {}
    return {
        "known": bool(row),
        "install": row.get("install") or "",
        "install_gpu": row.get("install_gpu") or "",
    }


def _os(operating_system: dict[str, Any]) -> dict[str, Any]:
    system = operating_system.get("system") or ""
    return {
        "system": system,
        "windows": system.lower() == "windows",
        "wsl": bool(operating_system.get("wsl")),
        "container": operating_system.get("container"),
        "macos": operating_system.get("macos"),
        # The atlas's rules: null unknown, "" glibc not the C library (os.glibc), else the version.
        "kernel": _text_or_none(operating_system.get("kernel")),
        "glibc": _text_or_none(operating_system.get("glibc")),
    }


def _packages(facts: dict[str, Any]) -> dict[str, str | None]:
    """pkg.NAME: the installed version of each distribution of packages.toml, "" none, null unknown."""
    found = facts.get("packages")
    found = found if isinstance(found, dict) else {}
    return {variable: _text_or_none(found.get(name)) for name, variable in knowledge.package_variables()}


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _probes(probes: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    given = probes or {}
    return {
        name: {
            "status": (given.get(name) or {}).get("status") or "unknown",
            "reason": (given.get(name) or {}).get("reason") or "",
        }
        for name in (*PROBE_NAMES, *given)
    }
