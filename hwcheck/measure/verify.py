"""`hwcheck doctor --verify`: one training step of the advice, observed in a child process.

The child (hwcheck/measure/verify_child.py) runs under the user's interpreter and `sys.path`
(hwcheck/measure/interpreter.py), in its own process group, with a deadline: it imports the
framework the advice is for, lists the devices it sees, and runs one forward and backward step
of a tiny model in the recommended precision on the recommended device. What it saw becomes
`facts.verified`; a child that hangs is cut at the deadline (outcome "timeout"), one that dies
(SIGILL, SIGSEGV, out of memory) is reported with its signal. Beside it, where the probes found
the framework's dist-info, so that the rules can tell when the child imported another copy.
"""

from __future__ import annotations

import os
import time
from typing import Any

from hwcheck.facts.conform import verified_block
from hwcheck.measure.ask import Asked, ask
from hwcheck.measure.interpreter import interpreter
from hwcheck.measure.streams import Tail
from hwcheck.measure.verify_child import MAX_TEXT, bounded

DEFAULT_TIMEOUT = 120.0
MAX_ANSWER = 1024 * 1024  # bytes of the child's answer line read at most
SHORT_TEXT = 256  # characters of a name or version kept (the facts schema's bound)
MAX_ITEMS = 64  # devices, architectures or warnings kept
ARCH_TEXT = 64  # characters of an architecture's name kept (the facts schema's bound)
# Values of an answer dropped at most for breaking the facts schema before it is refused whole,
# in at most REPAIR_PASSES passes (a drop may leave its container breaking the schema in turn).
MAX_REPAIRS = 256
REPAIR_PASSES = 4
# The module each framework is imported as, and the distributions that install it.
MODULES = {"torch": "torch", "jax": "jax", "keras": "keras", "tensorflow": "tensorflow"}
DISTRIBUTIONS = {
    "torch": ("torch",),
    "jax": ("jax",),
    "keras": ("keras",),
    "tensorflow": (
        "tensorflow",
        "tensorflow-cpu",
        "tensorflow-gpu",
        "tf-nightly",
        "tensorflow-macos",
        "tensorflow-intel",
        "intel-tensorflow",
        "tensorflow-rocm",
        "tensorflow-aarch64",
    ),
}
DEVICES = ("gpu", "cpu", "mps", "xpu", "tpu")
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")


def verify(
    framework: str, backend: str, device: str, policy: str, *, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """Run the step in a child and return the `verified` facts block."""
    job = {
        "framework": framework,
        "backend": backend,
        "device": device,
        "policy": policy,
        "env": _environment(framework, backend),
    }
    started = time.monotonic()
    seen = _run_child(job, timeout)
    seen.setdefault("framework", framework)
    seen.update(
        {
            "requested": {"framework": framework, "backend": backend, "device": device, "policy": policy},
            "python": interpreter(),
            "wall_seconds": round(time.monotonic() - started, 3),
            "installed": installed_location(framework),
        }
    )
    return verified_block(seen)


def installed_location(framework: str) -> dict[str, Any] | None:
    """Where the probes' scan of sys.path finds the framework's dist-info: its version and module folder."""
    from hwcheck.probes.site_packages import distributions

    wanted = DISTRIBUTIONS.get(framework, (framework,))
    for dist in distributions():
        if dist.name in wanted:
            return {
                "distribution": dist.name,
                "version": dist.version,
                "module": os.path.join(dist.folder, MODULES.get(framework, framework)),
            }
    return None


def other_copy(files: dict[str, Any]) -> str | None:
    """Why a measurement imported another copy of a framework than the probes describe; None when it did not.

    `files`: framework name -> the file a child imported it from (a bench block's framework_files).
    """
    from hwcheck.engine.verified import inside

    for name, file in sorted(files.items()):
        installed = installed_location(name) if name in MODULES else None
        if installed is None or not isinstance(file, str) or inside(file, installed["module"]):
            continue
        version = f" {installed['version']}" if installed.get("version") else ""
        return (
            f"the measuring processes imported {name} from {file}, but doctor describes the {name}{version} "
            f"installed in {installed['module']}: another copy comes first on this Python's sys.path "
            "(PYTHONPATH, a .pth file), so the measurement is not used"
        )
    return None


def _environment(framework: str, backend: str) -> dict[str, str]:
    """What the child sets before importing: the device is shared with whatever else runs on it."""
    env = {
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
    }
    if framework == "keras":
        env["KERAS_BACKEND"] = backend  # the backend the advice is for
    return env


def _run_child(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The child's answer, or an observation of how it failed (timeout, signal, exit status)."""
    asked = ask("hwcheck.measure.verify_child", job, "verified", timeout, limit=MAX_ANSWER)
    if asked.answer is not None:
        return {**_cleaned(asked.answer), "stderr": asked.errors.text(MAX_TEXT)}
    return _unanswered(asked)


def _cleaned(seen: dict[str, Any]) -> dict[str, Any]:
    """The child's block with every text bounded (as the facts schema bounds it) and a known outcome."""
    if seen.get("outcome") not in ("ok", "error", "skipped"):
        seen["outcome"] = "error"
    long_texts = ("error", "stderr", "file", "tensorflow_file", "python", "warnings")
    cleaned = {
        key: _bounded(value, MAX_TEXT if key in long_texts else SHORT_TEXT) for key, value in seen.items()
    }
    if isinstance(cleaned.get("arch_list"), list):
        # The facts schema bounds an architecture's name at ARCH_TEXT characters.
        cleaned["arch_list"] = [
            bounded(a, ARCH_TEXT) if isinstance(a, str) else a for a in cleaned["arch_list"]
        ]
    return readable(cleaned)


def readable(seen: dict[str, Any]) -> dict[str, Any]:
    """`seen` without what the facts schema refuses (a negative memory, a loss that is text...).

    What doctor --verify --json writes is read back by doctor --facts: every value the schema's
    `verified` block refuses is dropped, the deepest first, so the rest stands; an answer with
    more than MAX_REPAIRS such values is refused whole.
    """
    from hwcheck.facts import validator

    checker = validator("facts")
    dropped = 0
    for _ in range(REPAIR_PASSES):
        try:
            errors = list(checker.iter_errors({"schema_version": 1, "verified": seen}))
        except ValueError:  # the validator's depth limit: the bounded block never reaches it
            errors = []
        if not errors:
            break
        # The deepest first, and a list's later items before its earlier ones: each drop leaves
        # the other paths where they were.
        places = sorted({tuple(error.instance_path)[1:] for error in errors}, key=_later_first)
        if () in places or dropped + len(places) > MAX_REPAIRS:
            return _failed("error", "the verifying process's answer does not fit the facts schema")
        for place in places:
            _drop(seen, list(place))
        dropped += len(places)
    else:
        return _failed("error", "the verifying process's answer does not fit the facts schema")
    if seen.get("outcome") not in ("ok", "error", "skipped"):
        seen["outcome"] = "error"
    return seen


def _later_first(place: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, -step) if isinstance(step, int) else (1, str(step)) for step in place) + ((2, ""),)


def _drop(block: Any, where: list[Any]) -> None:
    """Remove the value at path `where` inside `block` (a key of a dict or an item of a list)."""
    try:
        for step in where[:-1]:
            block = block[step]
    except (KeyError, IndexError, TypeError):
        return  # a container dropped already
    last = where[-1]
    if isinstance(block, dict):
        block.pop(last, None)
    elif isinstance(block, list) and isinstance(last, int) and last < len(block):
        del block[last]


def _bounded(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return bounded(value, limit)
    if isinstance(value, list):
        return [_bounded(item, limit) for item in value[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {
            str(key)[:SHORT_TEXT]: _bounded(item, SHORT_TEXT) for key, item in list(value.items())[:MAX_ITEMS]
        }
    return value


def _unanswered(asked: Asked) -> dict[str, Any]:
    """The verified block of a child that gave no answer: how it ended, and the end of its stderr."""
    block = _failed(asked.outcome, asked.reason, asked.errors)
    if asked.signal is not None:
        block["signal"] = asked.signal
    return block


def _failed(outcome: str, reason: str, errors: Tail | None = None) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "error": bounded(reason),
        "devices": [],
        "warnings": [],
        "stderr": errors.text(MAX_TEXT) if errors is not None else "",
    }
