"""Apple silicon: its GPU (MPS), and the `apple` variables: the Apple GPU, macOS, and what the
installed framework can run on it.

Only lookups in rules/knowledge/apple.toml happen here; rules/policy/apple.toml decides.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import parse_version, version_at_least, version_less
from hwcheck.devices.record import Asked, Device, Plugin, mebibytes, vendor_gpus
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MIB_PER_GIB = 1024
# jax-metal loads into a jaxlib newer than the one it was built for only with this set.
PJRT_COMPATIBILITY = "ENABLE_PJRT_COMPATIBILITY"


def apple_variables(facts: dict[str, Any], environment: dict[str, Any]) -> dict[str, Any]:
    """The `apple` namespace (every key present; unknown values null, false or empty)."""
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict) and g.get("vendor") == "apple"]
    system = section(facts, "os")
    frameworks = section(facts, "frameworks")
    macos = system.get("macos") if parse_version(system.get("macos")) else None
    chip = gpus[0] if gpus else {}
    return {
        "present": bool(gpus),
        "chip": str(chip.get("name") or ""),
        "memory_gib": (chip.get("memory_mib") or 0) // MIB_PER_GIB,
        "macos": macos,
        "bfloat16_macos": knowledge.bfloat16_macos(),
        **_torch(section(frameworks, "torch"), macos),
        **_tensorflow(section(frameworks, "tensorflow"), macos),
        **_jax(section(frameworks, "jax"), macos, environment),
    }


def _torch(torch: dict[str, Any], macos: str | None) -> dict[str, Any]:
    version = torch.get("version")
    floor = knowledge.torch_mps_floor(version) or {}
    minimum = floor.get("min_macos")
    dtypes = knowledge.torch_autocast_dtypes(version, macos) if version else []
    return {
        # A release before MPS (1.12) has none; a known macOS below the release's floor cannot run it.
        "torch_mps_release": bool(floor),
        "torch_min_macos": minimum,
        "torch_macos_too_old": bool(minimum and macos and version_less(macos, minimum)),
        "torch_last_for_macos": knowledge.last_torch_for_macos(macos),
        "torch_not_built": torch.get("mps_built") is False,
        "torch_float16": "float16" in dtypes,
        "torch_bfloat16": "bfloat16" in dtypes,
        "torch_grad_scaler": bool(version) and knowledge.torch_grad_scaler(version),
    }


def _tensorflow(tensorflow: dict[str, Any], macos: str | None) -> dict[str, Any]:
    version = tensorflow.get("version")
    plugin = tensorflow.get("metal_plugin")
    row = knowledge.tensorflow_metal(plugin) or {}
    expected = knowledge.tensorflow_metal_for(version) or {}
    minimum = row.get("min_macos")
    return {
        # Whether the facts say anything about tensorflow-metal (older facts files do not).
        "tf_metal_known": "metal_plugin" in tensorflow,
        "tf_metal": plugin,
        "tf_metal_listed": bool(row),
        "tf_metal_fits": bool(row) and knowledge.tensorflow_metal_fits(row, version),
        "tf_metal_expected": expected.get("plugin"),
        "tf_metal_float16": bool(row.get("float16")),
        "tf_metal_min_macos": minimum,
        "tf_metal_macos_too_old": bool(minimum and macos and version_less(macos, minimum)),
    }


def _jax(jax: dict[str, Any], macos: str | None, environment: dict[str, Any]) -> dict[str, Any]:
    # jax-metal installed without a version it names is present, its version unknown.
    metal = jax.get("plugin") == "jax-metal"
    plugin = (jax.get("plugin_version") or "(version unknown)") if metal else None
    jaxlib = jax.get("jaxlib")
    row = knowledge.jax_metal(plugin) or {}
    first, last = row.get("jaxlib_first"), row.get("jaxlib_last")
    compatibility = str(environment.get(PJRT_COMPATIBILITY) or "").strip() not in ("", "0", "false", "False")
    minimum = row.get("min_macos")
    if not plugin:
        state = ""
    elif not jax.get("plugin_version"):
        state = "version-unknown"  # rules/knowledge/unknowns.toml: each version is tried
    elif not row or parse_version(jaxlib) is None:
        state = "unknown"
    elif minimum and macos and version_less(macos, minimum):
        state = "macos-too-old"
    elif version_less(jaxlib, first):
        state = "jaxlib-too-old"
    elif last and version_less(last, jaxlib):
        state = "jaxlib-too-new"
    elif (last and version_at_least(last, jaxlib)) or not version_less(first, jaxlib):
        state = "ok"
    else:
        state = "compatibility" if compatibility else "needs-compatibility"
    newest = knowledge.newest_jax_metal()
    newest_last = newest.get("jaxlib_last") or newest["jaxlib_first"]
    return {
        "jax_metal": plugin,
        "jax_metal_state": state,
        "jax_metal_jaxlib": (f"{first}" + (f" to {last}" if last and last != first else "")) if row else "",
        "jax_metal_jaxlib_first": first,
        "jax_metal_min_macos": minimum,
        "jax_metal_newest": newest["plugin"],
        # The newest pairing's jaxlib range and the jaxlib to pin (jax and jaxlib move together).
        "jax_metal_newest_jaxlib": f"{newest['jaxlib_first']} to {newest_last}",
        "jax_metal_newest_pin": newest_last,
    }


def variables(asked: Asked) -> dict[str, Any]:
    """The `apple` namespace."""
    return {"apple": apple_variables(asked.facts, asked.environment)}


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The Apple GPU (MPS): its memory is the unified memory it shares with the CPU.

    bfloat16: Metal computes in it from macOS 14 (unknown without macOS); with `framework`
    named, that framework must run it on MPS too (PyTorch's autocast, tensorflow-metal's
    16-bit support; jax-metal's is unknown), as rules/knowledge/apple.toml says.
    """
    macos = section(facts, "os").get("macos")
    macos = macos if parse_version(macos) else None
    bfloat16 = version_at_least(macos, knowledge.bfloat16_macos()) if macos else None
    frameworks = section(facts, "frameworks")
    if bfloat16 and framework == "torch":
        bfloat16 = _torch(section(frameworks, "torch"), macos)["torch_bfloat16"]
    elif bfloat16 and framework == "tensorflow":
        bfloat16 = _tensorflow(section(frameworks, "tensorflow"), macos)["tf_metal_float16"]
    elif bfloat16 and framework == "jax":
        bfloat16 = None
    return [
        Device(
            vendor="apple",
            plugin="apple",
            number=number,
            name=str(gpu.get("name") or "Apple GPU"),
            label=str(gpu.get("name") or "Apple GPU"),
            # The total: Metal's recommendedMaxWorkingSetSize, the part the GPU may use, is read at run time.
            memory_bytes=mebibytes(gpu.get("memory_mib")),
            unified=True,
            runtime="mps",
            float16=True,
            bfloat16=bfloat16,
            tf32=False,
            fp8=False,
        )
        for number, gpu in enumerate(vendor_gpus(facts, "apple"))
    ]


def doctor_row(facts: dict[str, Any]) -> str:
    """The apple row: the chip and its unified memory, macOS, and whether PyTorch was built with MPS."""
    gpus = vendor_gpus(facts, "apple")
    if not gpus:
        return ""
    parts = [
        f"{gpu.get('name')}"
        + (f", {gpu['memory_mib'] // 1024} GiB unified memory" if gpu.get("memory_mib") else "")
        for gpu in gpus
    ]
    macos = section(facts, "os").get("macos")
    if macos:
        parts.append(f"macOS {macos}")
    torch = section(section(facts, "frameworks"), "torch")
    if torch.get("mps_built") is not None:
        parts.append(f"PyTorch built {'with' if torch['mps_built'] else 'without'} MPS")
    return "; ".join(parts)


PLUGIN = Plugin(
    name="apple", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="apple"
)
