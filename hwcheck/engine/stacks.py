"""Rule variables for what stops or slows training beyond the precision: torch.compile's needs
(stacks.torch_compile, stacks.toolchain), the kernel libraries beside the framework
(stacks.libraries.*), the named model's own precision (model.*) and the observed distributed
check (distributed.*).

Only facts and knowledge-table lookups happen here; rules/policy/stacks.toml,
model_precision.toml and distributed.toml decide what they mean.
"""

from __future__ import annotations

from hwcheck.base.versions import parse_version, version_less
from hwcheck.engine.distributed import variables as distributed_variables
from hwcheck.facts import section
from hwcheck.knowledge import KernelBuild, gpu_kernels
from hwcheck.knowledge.stacks import kernel_library, library_variables, model_precision, torch_compile_needs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(facts: dict[str, Any], context: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The `stacks`, `model` and `distributed` variables, from the facts and the GPUs the process sees."""
    seen = visible_gpus(gpus)
    libraries = _libraries(facts, context, seen)
    return {
        "stacks": {
            "torch_compile": _torch_compile(facts, context, seen),
            "toolchain": _toolchain(facts),
            "libraries": libraries,
            # The installed libraries that run on none or not all of these GPUs, in one sentence each.
            "unsupported": [key for key, row in libraries.items() if row["unsupported"]],
            "unsupported_text": "; ".join(row["why"] for row in libraries.values() if row["unsupported"]),
            "unsupported_remedy": " ".join(
                row["remedy"] + "." for row in libraries.values() if row["unsupported"]
            ),
            # The installed libraries whose kernels run on a GPU only (knowledge: gpu_only).
            "gpu_only": [row["named"] for row in libraries.values() if row["installed"] and row["gpu_only"]],
            "gpu_only_text": " and ".join(
                row["named"] for row in libraries.values() if row["installed"] and row["gpu_only"]
            ),
        },
        "model": _model(facts),
        "distributed": distributed_variables(facts),
    }


def visible_gpus(gpus: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(label, compute capability) of each NVIDIA GPU the process sees: the one read of them here."""
    return [(str(gpu["label"]), gpu.get("compute_capability")) for gpu in gpus]


def _below(seen: list[tuple[str, str | None]], floor: str) -> list[str]:
    """The labels of the GPUs below `floor`, each model once (eight alike are one name)."""
    return list(dict.fromkeys(label for label, cc in seen if cc and version_less(cc, floor)))


def _torch_compile(
    facts: dict[str, Any], context: dict[str, Any], seen: list[tuple[str, str | None]]
) -> dict[str, Any]:
    needs = torch_compile_needs()
    torch = section(section(facts, "frameworks"), "torch")
    version = torch.get("version") if isinstance(torch.get("version"), str) else None
    # A torch whose version could not be read may have torch.compile (2.0 and newer): the rules say so.
    has_compile = bool(torch) and (version is None or not version_less(version, needs["min_torch"]))
    cuda_runtime = not torch.get("hip") and not torch.get("rocm_build")
    applies = context["backend"] == "torch" and has_compile and cuda_runtime and bool(seen)
    too_old = _below(seen, needs["min_cc"])
    return {
        "applies": applies,
        # torch.compile exists for the torch backend (on the CPU it runs Inductor's C++ backend).
        "available": context["backend"] == "torch" and has_compile,
        "torch_version": version or "",
        "min_cc": needs["min_cc"],
        "too_old": too_old,
        "no_bf16": [label for label in _below(seen, needs["bf16_min_cc"]) if label not in too_old],
        "source": needs["source"],
        "bf16_source": needs["bf16_source"],
        "libcuda_source": needs["libcuda_source"],
        "compiler_source": needs["compiler_source"],
    }


def _toolchain(facts: dict[str, Any]) -> dict[str, Any]:
    toolchain = section(facts, "toolchain")
    compiler, libcuda = toolchain.get("c_compiler"), toolchain.get("libcuda")
    cxx = toolchain.get("cxx_compiler")
    return {
        "compiler_known": isinstance(compiler, str),
        "compiler": compiler if isinstance(compiler, str) else "",
        "cxx_known": isinstance(cxx, str),
        "cxx": cxx if isinstance(cxx, str) else "",
        "libcuda_known": isinstance(libcuda, str),
        "libcuda": libcuda if isinstance(libcuda, str) else "",
    }


def _libraries(
    facts: dict[str, Any], context: dict[str, Any], seen: list[tuple[str, str | None]]
) -> dict[str, Any]:
    installed = section(facts, "kernel_libraries")
    keys = library_variables()
    found = {key: _absent() for key in keys.values()}
    for distribution, key in keys.items():
        entry = installed.get(distribution)
        if isinstance(entry, dict) and not found[key]["installed"]:
            found[key] = _library(distribution, entry, context, seen)
    return found


def _absent() -> dict[str, Any]:
    return {
        "installed": False,
        "version": "",
        "label": "",
        "named": "",
        "unsupported": [],
        "unsupported_text": "",
        "supported": "",
        "why": "",
        "remedy": "",
        "source": "",
        "torch_pin": "",
        "torch_pin_mismatch": False,
        "gpu_only": False,
    }


def _library(
    distribution: str, entry: dict[str, Any], context: dict[str, Any], seen: list[tuple[str, str | None]]
) -> dict[str, Any]:
    version = entry.get("version") if isinstance(entry.get("version"), str) else ""
    row = kernel_library(distribution, version) or {}
    floor = row.get("min_cc")
    reasons: list[str] = []
    unsupported: list[str] = []
    sm = [a for a in entry.get("sm") or [] if isinstance(a, str)]
    ptx = [a for a in entry.get("ptx") or [] if isinstance(a, str)]
    build = (
        KernelBuild(tuple(sm), tuple(ptx), "its files", (), None) if entry.get("complete") is True else None
    )
    for label, cc in dict.fromkeys(seen):
        if cc and floor and version_less(cc, floor):
            unsupported.append(label)
            reasons.append(f"{label}: below compute capability {floor}")
            continue
        kernels = gpu_kernels(build, cc) if build is not None and (sm or ptx) else None
        if kernels is not None and kernels.path == "none":
            unsupported.append(label)
            reasons.append(f"{label}: its CUDA libraries carry no kernels for it ({' '.join(sm + ptx)})")
    label = row.get("label") or distribution
    named = f"{label} {version}".strip()
    everyone = len(unsupported) == len(dict.fromkeys(seen))
    where = "no GPU the process sees is one" if everyone else "not every GPU the process sees is one"
    why = f"{named} runs on {row.get('supported') or 'other GPUs'}, and {where} ({'; '.join(reasons)})"
    why += f": {row['fails_with']}" if row.get("fails_with") else ""
    pin = str(entry.get("requires_torch") or "")
    torch_version = context["torch"].get("version") if context["torch"]["installed"] else None
    return {
        "installed": True,
        "version": version,
        "label": label,
        "named": named,
        "unsupported": unsupported,
        "unsupported_text": "; ".join(reasons),
        "supported": row.get("supported", ""),
        "why": why if unsupported else "",
        "remedy": row.get("remedy", ""),
        "source": row.get("source", ""),
        "torch_pin": pin,
        "torch_pin_mismatch": _pin_mismatch(pin, torch_version),
        "gpu_only": bool(row.get("gpu_only")),
    }


def _pin_mismatch(pin: str, torch_version: Any) -> bool:
    """True when the library pins one torch release (==X) and the installed torch is another."""
    if not pin.startswith("==") or not isinstance(torch_version, str):
        return False
    wanted = parse_version(pin[2:].split(",")[0].strip())
    have = parse_version(torch_version.split("+")[0])
    return wanted is not None and have is not None and wanted[:3] != have[:3]


def _model(facts: dict[str, Any]) -> dict[str, Any]:
    model = section(facts, "model")
    model_type = model.get("model_type") if isinstance(model.get("model_type"), str) else ""
    family = model_precision(model_type) if model_type else None
    return {
        "named": bool(model),
        "source": str(model.get("source") or ""),
        "model_type": model_type,
        "torch_dtype": str(model.get("torch_dtype") or ""),
        "overflows_float16": family is not None,
        "family": family["label"] if family else "",
        "pretrained": family["pretrained"] if family else "",
        "remedy": family["remedy"] if family else "",
        "source_text": family["source"] if family else "",
    }
