"""The TPU runtime variables: whether the runtime the framework needs on a TPU is installed.

rules/knowledge/tpu.toml [[runtime]] names each framework's runtime and its install command.
Older facts files do not record the runtimes: then nothing is known and nothing is claimed.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.shell import command_from_template
from hwcheck.base.versions import version_at_least
from hwcheck.facts import section

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def variables(facts: dict[str, Any], backend: str) -> dict[str, Any]:
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
        if tensorflow.get("package") in row.get("packages", ()):
            installed = True
        elif "libtpu" in tpu and tpu["libtpu"] is None and version_at_least(version, row["from_tensorflow"]):
            # From 2.15 TensorFlow for TPUs is the tensorflow-tpu wheel, which brings libtpu: a
            # TensorFlow of another package with no libtpu beside it has no TPU runtime at all.
            installed = False
    return {
        "runtime": str(row.get("runtime") or ""),
        "runtime_installed": installed,
        "runtime_missing": installed is False,
        "runtime_install": install,
        **_libtpu_pairing(frameworks, tpu, backend),
    }


def _libtpu_pairing(frameworks: dict[str, Any], tpu: dict[str, Any], backend: str) -> dict[str, Any]:
    """The libtpu the runtime pins (torch_xla[tpu], jax[tpu]) against the installed one."""
    pin: str | None = None
    owner = fix = ""
    if backend == "torch":
        torch = section(frameworks, "torch")
        pin, xla = torch.get("xla_libtpu"), torch.get("xla")
        owner = f"torch_xla {xla}" if xla else "torch_xla"
        fix = f"pip install 'torch_xla[tpu]=={xla}'" if xla else "pip install 'torch_xla[tpu]'"
    elif backend == "jax":
        jax = section(frameworks, "jax")
        pin, version = jax.get("libtpu_pin"), jax.get("version")
        owner = f"jax {version}" if version else "jax"
        fix = f"pip install -U 'jax[tpu]=={version}'" if version else "pip install -U 'jax[tpu]'"
    installed = tpu.get("libtpu")
    mismatch = bool(pin and installed and not libtpu_matches(str(installed), str(pin)))
    return {
        "libtpu": installed,
        "libtpu_pin": pin,
        "libtpu_owner": owner,
        "libtpu_mismatch": mismatch,
        "libtpu_fix": fix,
    }


def libtpu_matches(installed: str, pin: str) -> bool:
    """Whether an installed libtpu release satisfies a pin ("0.0.15.*" takes 0.0.15.1; local tags ignored)."""
    have, wanted = installed.split("+", 1)[0], pin.split("+", 1)[0]
    if wanted.endswith(".*"):
        stem = wanted[:-2]
        return have == stem or have.startswith(stem + ".")
    return have == wanted
