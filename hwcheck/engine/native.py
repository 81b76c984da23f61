"""The framework a recommendation speaks to, the runtime that executes it, and its native lines.

What the lines say, the order frameworks are picked in and each runtime's defaults are data
in rules/knowledge/frameworks.toml; this module only matches that table against the facts
and the decision.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.records import NamedTuple
from hwcheck.base.shell import shell_command
from hwcheck.base.versions import version_key, version_less
from hwcheck.engine.outcome import TRAINERS, runtime_framework

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The runtimes Keras 3 can train on; KERAS_BACKEND may name others (numpy, openvino).
KERAS_TRAINING_BACKENDS = ("tensorflow", "torch", "jax")
KERAS_DEFAULT_BACKEND = "tensorflow"


class Target(NamedTuple):
    """Whom the advice is for: the framework the script uses and the runtime that executes it."""

    framework: str
    backend: str
    assumed_because: str | None  # why this framework was assumed; None when it was named


def target(facts: dict[str, Any], framework: str | None) -> Target:
    """The framework (picked from the installed ones when None) and the runtime that runs it."""
    because = None
    if framework is None:
        framework, because = _pick(facts)
    return Target(framework, _backend(facts, framework), because)


def _frameworks(facts: dict[str, Any]) -> dict[str, Any]:
    value = facts.get("frameworks")
    return value if isinstance(value, dict) else {}


def _environment(facts: dict[str, Any]) -> dict[str, Any]:
    value = facts.get("environment")
    return value if isinstance(value, dict) else {}


def _installed(facts: dict[str, Any], name: str) -> bool:
    section = _frameworks(facts).get(name)
    if not isinstance(section, dict) or not section:
        return False
    # Only Keras 3 has backends; a Keras 2 install is tf.keras's business. A section without a
    # version is a framework installed whose version could not be read.
    return name != "keras" or str(section.get("version") or "").startswith("3.")


def _pick(facts: dict[str, Any]) -> tuple[str, str]:
    keras_backend_set = bool(_environment(facts).get("KERAS_BACKEND"))
    for rule in knowledge.load("frameworks")["pick"]:
        if rule.get("keras_backend_set") and not keras_backend_set:
            continue
        if "installed" in rule and not _installed(facts, rule["installed"]):
            continue
        found = [name for name in rule.get("installed_any", ()) if _installed(facts, name)]
        if "installed_any" in rule and not found:
            continue
        if any(_installed(facts, name) for name in rule.get("alone", ())):
            continue
        if rule.get("none_installed") and any(_installed(facts, name) for name in _frameworks(facts)):
            continue
        return rule["framework"], rule["because"].replace("{installed_any}", ", ".join(found))
    return "torch", "no rule of rules/knowledge/frameworks.toml [[pick]] held"


def _backend(facts: dict[str, Any], framework: str) -> str:
    if framework != "keras":
        return runtime_framework(framework)  # a trainer runs PyTorch
    keras = _frameworks(facts).get("keras")
    keras = keras if isinstance(keras, dict) else {}
    if str(keras.get("version") or "").startswith("2."):
        return "tensorflow"  # Keras 2 runs on TensorFlow only
    # Keras 3 reads ~/.keras/keras.json, then lets KERAS_BACKEND override it.
    chosen = _environment(facts).get("KERAS_BACKEND") or keras.get("config_backend") or KERAS_DEFAULT_BACKEND
    return str(chosen).strip().lower() or KERAS_DEFAULT_BACKEND


def labels(framework: str, backend: str) -> dict[str, str]:
    """Names for messages: the framework as the user knows it, and the runtime."""
    table = knowledge.load("frameworks")
    row = next(row for row in table["framework"] if row["name"] == framework)
    framework_label = row["label"]
    runtime = runtime_row(backend)
    backend_label = runtime["label"] if runtime else backend
    if framework == "keras":
        framework_label = f"{framework_label} ({backend_label} backend)"
    # The layer dimensions Tensor Cores want in multiples of 8, as this framework names them.
    return {
        "framework_label": framework_label,
        "backend_label": backend_label,
        "framework_layers": row["layers"],
    }


def layer_words(framework: str) -> str:
    """The layer dimensions Tensor Cores want in multiples of 8, in `framework`'s words."""
    rows = knowledge.load("frameworks")["framework"]
    return str(next(row["layers"] for row in rows if row["name"] == framework))


def runtime_row(backend: str) -> dict[str, Any] | None:
    """The [[runtime]] entry of a backend (None for one hwcheck has no table for)."""
    return next((row for row in knowledge.load("frameworks")["runtime"] if row["name"] == backend), None)


def apply_lines(decision: dict[str, Any]) -> tuple[str, ...]:
    """The lines that apply `decision` (framework, backend, device, compute_dtype, ...) natively."""
    if decision.get("framework") in TRAINERS:
        import hwcheck.engine.trainers as trainers

        return trainers.apply_lines(decision["framework"], decision)
    lines: list[str] = []
    for entry in knowledge.load("frameworks")["apply"]:
        if all(_matches(wanted, decision.get(key)) for key, wanted in entry.items() if key != "lines"):
            lines.extend(
                line.replace("{policy}", decision["policy"])
                .replace("{dtype}", decision["compute_dtype"])
                .replace("{device}", decision["device"])
                for line in entry["lines"]
            )
    return tuple(lines)


def _matches(wanted: Any, actual: Any) -> bool:
    return actual in wanted if isinstance(wanted, list) else actual == wanted


# The keys a [[feature]] row matches against the recommendation, as [[apply]] does.
_FEATURE_KEYS = ("framework", "backend", "device", "compute_dtype", "loss_scaling", "tf32", "fp8")
_PACKAGE_LABELS = {
    "torch": "PyTorch",
    "keras": "Keras",
    "tensorflow": "TensorFlow",
    "jax": "JAX",
    "lightning": "Lightning",
    "transformers": "Transformers",
    "accelerate": "Accelerate",
    "deepspeed": "DeepSpeed",
}


def api_gaps(decision: dict[str, Any], versions: dict[str, str | None]) -> dict[str, Any]:
    """The APIs the advice for `decision` uses that the installed releases predate, and the upgrade.

    `decision` carries the framework, backend and `fp8` besides the decision's fields; `versions`
    maps a package (torch, keras, tensorflow, jax) to its installed version.
    """
    gaps: list[str] = []
    upgrades: dict[str, str] = {}
    for entry in knowledge.load("frameworks").get("feature", ()):
        if not all(_matches(entry[key], decision.get(key)) for key in _FEATURE_KEYS if key in entry):
            continue
        package, since = entry["package"], entry["since"]
        installed = versions.get(package)
        if not installed or not version_less(installed, since):
            continue
        label = _PACKAGE_LABELS.get(package, package)
        needs = f"{entry['api']} needs {label} {since} or newer (here {installed})"
        gaps.append(f"{needs}; before it: {entry['instead']}")
        if package not in upgrades or version_key(upgrades[package]) < version_key(since):
            upgrades[package] = since
    upgrade = "; ".join(
        shell_command(["pip", "install", "-U", f"{package}>={since}"]) for package, since in upgrades.items()
    )
    return {"missing_apis": gaps, "api_upgrade": upgrade}
