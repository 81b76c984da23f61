"""AMD GPUs for the rules: the ones a ROCm process sees, what they run fast, whether the build runs them.

Facts (the amd probe's GPUs, the frameworks' ROCm builds, the environment) and the tables of
rules/knowledge/amd.toml in; the `amd.*` variables out. What they mean for training is decided
by rules/policy/amd.toml.

Which GPUs a process sees (ROCm, "GPU isolation techniques",
https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html; PyTorch's mirror of it,
torch/cuda/__init__.py `_parse_visible_devices`): ROCR_VISIBLE_DEVICES (indices or GPU-
UUIDs) is applied first by the ROCm runtime; HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES,
then picks by index among those left. Each list is read as CUDA reads its own: up to the
first identifier that names no GPU (devices/cuda_visibility.py). JAX_PLATFORMS without `rocm` (or
`gpu`) keeps JAX off the GPU.
"""

from __future__ import annotations

import hwcheck.devices.cuda_visibility as visibility
from hwcheck import knowledge
from hwcheck.base.versions import major_minor, parse_version
from hwcheck.devices.record import Asked, Device, Plugin, counted, mebibytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The variables in the order the runtime applies them; the second pair is one stage (HIP's).
ROCR, HIP, CUDA = "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"
OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"
JAX_AMD_PLATFORMS = frozenset({"rocm", "gpu"})
# How fast each GPU computes, weakest first: what one policy for all of them must follow.
RANKS = ("unknown", "float32", "float16", "bfloat16")
UNKNOWN_TARGET = "unknown target"  # how messages name a GPU's gfx target nothing gave


def amd_gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The AMD GPUs of the facts in ROCm's order (the probe's index, else listed order)."""
    gpus = [gpu for gpu in facts.get("gpus") or [] if isinstance(gpu, dict) and gpu.get("vendor") == "amd"]
    return sorted(gpus, key=lambda gpu: gpu["index"] if isinstance(gpu.get("index"), int) else 1 << 30)


def amd_variables(facts: dict[str, Any], backend: str, frameworks: dict[str, Any]) -> dict[str, Any]:
    """The `amd.*` variables: visible AMD GPUs, their targets, the build and whether it runs them."""
    environment = _dict(facts.get("environment"))
    physical = tuple(amd_gpus(facts))
    seen = _visible(physical, environment, backend)
    override_value = environment.get(OVERRIDE) if isinstance(environment.get(OVERRIDE), str) else None
    override = knowledge.override_target(override_value)
    build = _build(frameworks, backend, facts)
    rocm_section = _dict(facts.get("rocm"))
    release = build["rocm"] or rocm_section.get("version")
    described = [_describe(gpu, override, release) for gpu in seen["gpus"]]
    ranked = sorted(described, key=lambda gpu: RANKS.index(gpu["rank"]))
    weakest = ranked[0] if ranked else None
    blocked = [gpu for gpu in described if gpu["support"] in ("unsupported", "unlisted")]
    standard = sorted({gpu["override"] for gpu in described if gpu["override"]})
    everyone = bool(described)
    fp8_training = knowledge.amd_fp8_training()
    return {
        "physical_count": len(physical),
        "count": len(described),
        "names": [gpu["label"] for gpu in described],
        "models": sorted({gpu["label"] for gpu in described}),
        "archs": sorted({gpu["arch"] for gpu in described}),
        "families": sorted({gpu["family"] for gpu in described if gpu["family"]}),
        "weakest": weakest["label"] if weakest else None,
        "known": everyone and all(gpu["family"] for gpu in described),
        "unknown_archs": sorted({gpu["arch"] for gpu in described if not gpu["family"]}),
        "assumed": sorted({gpu["assumed"] for gpu in described if gpu["assumed"]}),
        "matrix": everyone and all(gpu["matrix"] for gpu in described),
        "bf16": everyone and all("bfloat16" in gpu["fast"] for gpu in described),
        "fp16": everyone and all("float16" in gpu["fast"] for gpu in described),
        "fp8": everyone and all("float8" in gpu["fast"] for gpu in described),
        # FP8 training: FP8 matrix cores on a target Transformer Engine for ROCm runs FP8 on.
        "fp8_training": everyone
        and all("float8" in gpu["fast"] and gpu["arch"] in fp8_training["targets"] for gpu in described),
        "fp8_training_targets": ", ".join(fp8_training["targets"]),
        "fp8_frameworks": list(fp8_training["frameworks"]),
        "fp8_recipe": fp8_training["recipe"],
        "mixed": len({gpu["rank"] for gpu in described}) > 1,
        "memory_mib_min": min((gpu["memory_mib"] for gpu in described if gpu["memory_mib"]), default=0),
        "build": build,
        "release": release,
        "release_from": "build" if build["rocm"] else ("system" if release else ""),
        "release_known": knowledge.rocm_release(release) is not None,
        "blocked": [f"{gpu['label']}: {gpu['why']}" for gpu in blocked],
        "blocked_archs": sorted({gpu["effective"] for gpu in blocked}),
        "blocked_archs_text": ", ".join(sorted({gpu["effective"] for gpu in blocked})),
        "deprecated": sorted({gpu["label"] for gpu in described if gpu["support"] == "deprecated"}),
        # A lying override makes the runtime load code for another ISA: nothing runs right.
        "runs": build["kind"] in ("rocm", "none")
        and not blocked
        and everyone
        and not any(gpu["override_lies"] for gpu in described),
        "first_release": _first_release(blocked),
        "override": {
            "set": override_value is not None,
            "value": override_value or "",
            "target": override or "",
            "valid": override is not None,
            "lies": sorted({gpu["label"] for gpu in described if gpu["override_lies"]}),
            "standard": ", ".join(standard),
            "needed": sorted({gpu["label"] for gpu in described if gpu["override"] and override is None}),
            "unneeded": override is not None and all(gpu["native"] for gpu in described) and everyone,
        },
        "visibility": {key: value for key, value in seen.items() if key != "gpus"},
        "install": _install(backend, frameworks, release),
        "rocm": {"version": rocm_section.get("version"), "path": rocm_section.get("path")},
    }


def _visible(
    physical: tuple[dict[str, Any], ...], environment: dict[str, Any], backend: str
) -> dict[str, Any]:
    """The GPUs left after ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES)."""
    result: dict[str, Any] = {
        "gpus": list(physical),
        "variable": "",
        "value": "",
        "stopped_at": "",
        "stop_reason": "",
        "hidden_text": "",
        "available": visibility.available(physical),
    }
    current = tuple({**gpu, "physical_position": position} for position, gpu in enumerate(physical))
    stages = [(ROCR, environment.get(ROCR))]
    hip = environment.get(HIP)
    stages.append((HIP, hip) if isinstance(hip, str) else (CUDA, environment.get(CUDA)))
    common = {"order": visibility.PCI_BUS_ID, "container_devices": None}
    for name, value in stages:
        if not isinstance(value, str) or not physical:
            continue
        # cuda_visibility.py reads a list the way CUDA does; the positions map back through each stage.
        parsed = visibility._parse(value, current, {"physical": current, **common})
        current = tuple(current[gpu["physical_position"]] for gpu in parsed.gpus)
        result.update(variable=name, value=value)
        if parsed.stopped_at is not None and not parsed.unresolved:
            result.update(stopped_at=parsed.stopped_at, stop_reason=parsed.stop_reason)
    platforms = environment.get("JAX_PLATFORMS")
    if backend == "jax" and isinstance(platforms, str) and platforms.strip() and current:
        if not {name.strip().lower() for name in platforms.split(",")} & JAX_AMD_PLATFORMS:
            current = ()
            result.update(variable="JAX_PLATFORMS", value=platforms)
    kept = {gpu["physical_position"] for gpu in current}
    result["gpus"] = [physical[gpu["physical_position"]] for gpu in current]
    hidden = [visibility.describe(gpu) for position, gpu in enumerate(physical) if position not in kept]
    result["hidden_text"] = ", ".join(
        f"{hidden.count(name)}x {name}" if hidden.count(name) > 1 else name for name in dict.fromkeys(hidden)
    )
    return result


def _describe(gpu: dict[str, Any], override: str | None, release: str | None) -> dict[str, Any]:
    # A GPU known by name alone (a facts file, a report without KFD) gets its target from the table.
    named = None if gpu.get("arch") else knowledge.amd_target_by_name(gpu.get("name"))
    given = str(gpu.get("arch") or (named or {}).get("target") or "")
    arch = given.split(":", 1)[0].lower() or UNKNOWN_TARGET
    row = knowledge.amd_target(arch) or {}
    # A target no row lists is placed by the family its number belongs to, and said to be assumed.
    placed = None if row else knowledge.amd_target_family(arch)
    row = row or placed or {}
    forced = knowledge.amd_target(override) if override else None
    # Under the override the runtime loads code built for the named target instead.
    effective = override if override else arch
    lies = bool(override and (forced is None or not row or _family(forced) != _family(row)))
    support = knowledge.rocm_support(release, effective) if release else None
    if (
        support is None
        and effective == arch
        and (row.get("override") or row.get("never_shipped"))
        and placed is None
        and not knowledge.first_rocm_supporting(arch)
    ):
        # No ROCm release lists this target at all: whatever the release, nothing ships code for it.
        support = "unlisted"
    native = knowledge.rocm_support(release, arch) in ("supported", "deprecated") if release else False
    fast = list(row.get("fast") or [])
    rank = (
        "bfloat16"
        if "bfloat16" in fast
        else "float16"
        if "float16" in fast
        else "float32"
        if row
        else "unknown"
    )
    name = str(gpu.get("name") or f"AMD GPU {arch}")
    shown = f"ROCm {major_minor(release)}" if release else "ROCm unknown"
    return {
        "label": f"{name} ({arch}, {shown})",
        "arch": arch,
        "effective": effective,
        "family": row.get("family"),
        "matrix": bool(row.get("matrix")),
        "fast": fast,
        "rank": rank,
        "memory_mib": gpu.get("memory_mib") or 0,
        "support": support,
        "native": native,
        "override": row.get("override") if not native else None,
        "override_lies": lies,
        "why": _why(arch, effective, support, release),
        "assumed": (
            f"{name} ({arch}): assumed {placed['generation']} from its gfx number"
            f" (matrix types {', '.join(placed['matrix']) or 'none'})"
            if placed
            else ""
        ),
    }


def _family(row: dict[str, Any]) -> str:
    """The ISA family an override must stay in: RDNA 3.5 runs RDNA 3 code, GCN 5.1 GCN 5's."""
    return str(row.get("family") or "").split(".", 1)[0]


def _why(arch: str, effective: str, support: str | None, release: str | None) -> str:
    target = arch if effective == arch else f"{effective} (HSA_OVERRIDE_GFX_VERSION on a {arch})"
    if release is None:
        return f"no ROCm release lists {target}: ROCm ships no code for it"
    if support == "unsupported":
        return f"ROCm {major_minor(release)} lists {target} as unsupported: its libraries do not serve it"
    if support == "unlisted":
        return f"ROCm {major_minor(release)} does not support {target}: its libraries carry no code for it"
    return ""


def _first_release(blocked: list[dict[str, Any]]) -> str:
    releases = [knowledge.first_rocm_supporting(gpu["arch"]) for gpu in blocked]
    known = [release for release in releases if release]
    if not blocked or len(known) < len(releases):
        return ""
    return max(known, key=lambda release: parse_version(release) or ())


def _build(frameworks: dict[str, Any], backend: str, facts: dict[str, Any]) -> dict[str, Any]:
    """The runtime's build: rocm, cuda, cpu (neither), none (not installed) or unknown; its ROCm and name."""
    section = _dict(frameworks.get(backend))
    version = section.get("version") or "(version unknown)"
    if not section:
        return {"kind": "none", "rocm": None, "text": ""}
    label = {"torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX"}.get(backend, backend)
    if section.get("rocm_build"):
        kind, rocm = "rocm", section.get("rocm")
    elif section.get("cuda_build") or (backend == "torch" and section.get("cuda")):
        kind, rocm = "cuda", None
    elif backend == "torch" or section.get("cuda_build") is False or backend == "tensorflow":
        kind, rocm = "cpu", None
    else:
        kind, rocm = "unknown", None
    package = section.get("package") or ""
    text = f"{label} {version}" + (f" ({package})" if package and package != backend else "")
    return {"kind": kind, "rocm": str(rocm) if rocm else None, "text": text}


def _install(backend: str, frameworks: dict[str, Any], release: str | None) -> str:
    """The command that installs a ROCm build of the runtime (PyTorch: the wheel index for its release)."""
    if backend == "torch":
        torch = _dict(frameworks.get("torch"))
        version = str(torch.get("version") or "").split("+", 1)[0]
        variants = knowledge.torch_rocm_variants(version)
        wanted = f"rocm{major_minor(release)}" if release else ""
        chosen = (
            next((variant for variant in variants if variant.startswith(wanted)), None) if wanted else None
        )
        chosen = chosen or (variants[-1] if variants else None)
        if chosen:
            return knowledge.torch_install(version, chosen)
        return (
            knowledge.torch_install(None, "rocmX.Y")
            + " (pytorch.org/get-started/locally lists the ROCm indexes)"
        )
    if backend == "tensorflow":
        return (
            "pip install tensorflow-rocm (AMD's ROCm build of TensorFlow; ROCm's TensorFlow install "
            "guide names the release that matches your ROCm)"
        )
    if backend == "jax":
        return (
            "install JAX's ROCm plugin for your ROCm release (jax-rocmNN-plugin and jax-rocmNN-pjrt; "
            "https://docs.jax.dev/en/latest/installation.html, AMD GPU)"
        )
    return ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def variables(asked: Asked) -> dict[str, Any]:
    """The `amd` namespace."""
    return {"amd": amd_variables(asked.facts, asked.backend, asked.frameworks)}


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The AMD GPUs a ROCm process sees (ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES), in its order."""
    backend = framework or "torch"
    environment = _dict(facts.get("environment"))
    seen = _visible(tuple(amd_gpus(facts)), environment, backend)
    if not seen["gpus"]:
        return []
    override_value = environment.get(OVERRIDE) if isinstance(environment.get(OVERRIDE), str) else None
    frameworks = _dict(facts.get("frameworks"))
    release = _build(frameworks, backend, facts)["rocm"] or _dict(facts.get("rocm")).get("version")
    devices = []
    for number, gpu in enumerate(seen["gpus"]):
        row = _describe(gpu, knowledge.override_target(override_value), release)
        known = row["rank"] != "unknown"
        devices.append(
            Device(
                vendor="amd",
                plugin="amd",
                number=number,
                name=str(gpu.get("name") or f"AMD GPU {row['arch']}"),
                label=row["label"],
                memory_bytes=mebibytes(gpu.get("memory_mib")),
                architecture=row["arch"] if row["arch"] != UNKNOWN_TARGET else None,
                family=row["family"],
                runtime="rocm",
                float16="float16" in row["fast"] if known else None,
                bfloat16="bfloat16" in row["fast"] if known else None,
                tf32=False,  # TF32 is an NVIDIA math mode
                fp8="float8" in row["fast"] if known else None,
                product_id=str(gpu["pci_device_id"]) if gpu.get("pci_device_id") else None,
            )
        )
    return devices


def doctor_row(facts: dict[str, Any]) -> str:
    """The amd row: the AMD GPUs (what ROCR_VISIBLE_DEVICES and kin hide) and the ROCm release."""
    physical = amd_gpus(facts)
    found = facts.get("rocm")
    rocm: dict[str, Any] = found if isinstance(found, dict) else {}
    release = ""
    if rocm.get("version"):
        release = f"ROCm {rocm['version']}" + (f" ({rocm['path']})" if rocm.get("path") else "")
    if not physical:
        return release
    names = []
    for gpu in physical:
        memory = f", {gpu['memory_mib'] / 1024:.0f} GiB" if gpu.get("memory_mib") else ""
        names.append(f"{gpu.get('name') or 'AMD GPU'} ({gpu.get('arch') or '?'}{memory})")
    text = ", ".join(counted(names))
    seen = _visible(tuple(physical), _dict(facts.get("environment")), "torch")
    if seen["variable"] and seen["hidden_text"]:
        text += f"; {seen['variable']}={seen['value']!r} hides {seen['hidden_text']}"
    return f"{text}; {release or 'no ROCm release installed (a pip wheel may bring its own)'}"


PLUGIN = Plugin(name="amd", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="amd")
