"""The TPU runtime variables: whether the runtime the framework needs on a TPU is installed.

rules/knowledge/tpu.toml [[runtime]] names each framework's runtime and its install command.
Older facts files do not record the runtimes: then nothing is known and nothing is claimed.
"""

from __future__ import annotations

from typing import Any

from hwcheck import knowledge
from hwcheck.base.shell import command_from_template
from hwcheck.base.versions import version_at_least
from hwcheck.facts import section


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
    }
