"""Google's TPUs: the chips a TPU VM has, and the `tpu` variables: what it is and whether the
runtime the framework needs on a TPU is installed.

rules/knowledge/tpu.toml [[runtime]] names each framework's runtime and its install command.
Older facts files do not record the runtimes: then nothing is known and nothing is claimed.
"""

from __future__ import annotations

import re

from hwcheck import knowledge
from hwcheck.base.shell import command_from_template, shell_command
from hwcheck.base.versions import major_minor, version_at_least, version_less
from hwcheck.devices.record import Asked, Device, Plugin
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def runtime_variables(facts: dict[str, Any], backend: str) -> dict[str, Any]:
    """runtime, runtime_installed (true/false, null when unknown), runtime_install for `backend`."""
    row = knowledge.tpu_runtime(backend) or {}
    frameworks = section(facts, "frameworks")
    tpu = section(facts, "tpu")
    installed: bool | None = None
    install = str(row.get("install") or "")
    if backend == "torch":
        torch = section(frameworks, "torch")
        installed = (torch.get("xla") is not None) if "xla" in torch else None
    elif backend == "jax":
        installed = (tpu.get("libtpu") is not None) if "libtpu" in tpu else None
    elif backend == "tensorflow":
        tensorflow = section(frameworks, "tensorflow")
        version = tensorflow.get("version")
        install = command_from_template(install, version=version or "X.Y.Z")
        installed = _tensorflow_tpu_build(tensorflow, tpu.get("libtpu"), row)
    return {
        "runtime": str(row.get("runtime") or ""),
        "runtime_installed": installed,
        "runtime_missing": installed is False,
        "runtime_install": install,
        **_libtpu_pairing(frameworks, tpu, backend),
    }


def _tensorflow_tpu_build(tensorflow: dict[str, Any], libtpu: Any, row: dict[str, Any]) -> bool | None:
    """Whether the installed TensorFlow is a TPU build: true, false, or None when the facts cannot tell.

    From 2.15 TensorFlow for TPUs is the tensorflow-tpu wheel, which brings the libtpu of its own
    release (tensorflow-tpu 2.18.0 requires libtpu==2.18.0). A TensorFlow of another package has no
    TPU kernels ('No OpKernel was registered to support Op ConfigureDistributedTPU ... Registered
    devices: [CPU]'), whatever libtpu JAX or torch_xla installed beside it (0.0.x releases); only a
    libtpu of TensorFlow's own release beside it leaves room for a TPU build installed another way.
    """
    package, version = tensorflow.get("package"), tensorflow.get("version")
    if package in row.get("packages", ()):
        return True
    if package is None or not version_at_least(version, row["from_tensorflow"]):
        return None  # an unread package, or before 2.15, when TPU VM images shipped TensorFlow preinstalled
    if isinstance(libtpu, str) and major_minor(libtpu) == major_minor(version):
        return None
    return False


def _libtpu_pairing(frameworks: dict[str, Any], tpu: dict[str, Any], backend: str) -> dict[str, Any]:
    """The libtpu the runtime pins (torch_xla[tpu], jax[tpu]) against the installed one."""
    pin: str | None = None
    owner = fix = ""
    if backend == "torch":
        torch = section(frameworks, "torch")
        pin, xla = torch.get("xla_libtpu"), torch.get("xla")
        owner = f"torch_xla {xla}" if xla else "torch_xla"
        fix = shell_command(["pip", "install", f"torch_xla[tpu]=={xla}" if xla else "torch_xla[tpu]"])
    elif backend == "jax":
        jax = section(frameworks, "jax")
        pin, version = jax.get("libtpu_pin"), jax.get("version")
        owner = f"jax {version}" if version else "jax"
        fix = shell_command(["pip", "install", "-U", f"jax[tpu]=={version}" if version else "jax[tpu]"])
    installed = tpu.get("libtpu")
    differs = bool(pin and installed and not libtpu_matches(str(installed), str(pin)))
    older = differs and libtpu_older(str(installed), str(pin))
    return {
        "libtpu": installed,
        "libtpu_pin": pin,
        "libtpu_owner": owner,
        # Another libtpu that is not known to be older: newer than the framework, or of another scheme.
        "libtpu_mismatch": differs and not older,
        "libtpu_older": older,
        "libtpu_fix": fix,
    }


def libtpu_older(installed: str, pin: str) -> bool:
    """Whether an installed libtpu is an older release than the pin (both numbered releases).

    An older PJRT plugin than the framework is accepted within XLA's compatibility window when
    PJRT compatibility is on, XLA's default when ENABLE_PJRT_COMPATIBILITY is unset; a newer one fails.
    """
    have, wanted = _release(installed), _release(pin).removesuffix(".*")
    # A nightly ("0.1.dev20240612") is of another scheme: neither older nor newer.
    numbered = all(re.fullmatch(r"[0-9]+(?:\.[0-9]+)*", text) for text in (have, wanted))
    return numbered and version_less(have, wanted)


def _release(text: str) -> str:
    """A libtpu version without its local tag ("0.0.23+abc" -> "0.0.23")."""
    return text.split("+", 1)[0]


def libtpu_matches(installed: str, pin: str) -> bool:
    """Whether an installed libtpu release satisfies a pin ("0.0.15.*" takes 0.0.15.1; local tags ignored)."""
    have, wanted = _release(installed), _release(pin)
    if wanted.endswith(".*"):
        stem = wanted[:-2]
        return have == stem or have.startswith(stem + ".")
    return have == wanted


def variables(asked: Asked) -> dict[str, Any]:
    """The `tpu` namespace: present, type, and the runtime the framework needs on it."""
    tpu = section(asked.facts, "tpu")
    return {
        "tpu": {
            "present": bool(tpu.get("present")),
            "type": tpu.get("type") or "unknown type",
            **runtime_variables(asked.facts, asked.backend),
        }
    }


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The TPU chips of this VM (one when the probe found a TPU but not how many chips)."""
    tpu = section(facts, "tpu")
    if not tpu.get("present"):
        return []
    chips = tpu.get("chips")
    count = chips if isinstance(chips, int) and not isinstance(chips, bool) and 0 < chips <= 4096 else 1
    kind = str(tpu.get("type") or "")
    name = f"TPU {kind}" if kind else "TPU"
    # bfloat16 is the TPU's native matrix format (https://cloud.google.com/tpu/docs/bfloat16);
    # TF32 is an NVIDIA math mode. The chip's HBM is not in the facts: unknown.
    return [
        Device(
            vendor="google",
            plugin="tpu",
            number=number,
            name=name,
            label=name,
            memory_bytes=None,
            runtime="tpu",
            kind="tpu",
            bfloat16=True,
            tf32=False,
        )
        for number in range(count)
    ]


def doctor_row(facts: dict[str, Any]) -> str:
    """The tpu row: the TPU and what found it, "no TPU" where the probe found none, "" unread."""
    tpu = section(facts, "tpu")
    if not tpu:
        return ""
    if not tpu.get("present"):
        return "no TPU"
    detected = ", ".join(tpu.get("detected_by") or [])
    return f"TPU {tpu.get('type') or ''}".strip() + (f" (from {detected})" if detected else "")


PLUGIN = Plugin(name="tpu", visible=visible, variables=variables, doctor_row=doctor_row, doctor_label="tpu")
