"""The human-readable doctor report, drawn with rich."""

from __future__ import annotations

from typing import Any

from hwcheck.base.safe import terminal_text
from hwcheck.facts import installed
from hwcheck.recommendation import Recommendation
from hwcheck.render import device_rows, node_rows, stacks_rows
from hwcheck.render.measure_line import measure_line

MARKS = {
    "ok": ("✓", "green"),
    "absent": ("–", "dim"),
    "error": ("✗", "red"),
    "timeout": ("⌛", "yellow"),
    "file": ("≡", "cyan"),
    "unknown": ("?", "dim"),
}
SEVERITY_STYLE = {
    "error": ("✗ error", "bold red"),
    "warning": ("! warning", "yellow"),
    "info": ("i info", "cyan"),
}
DEVICE_WORDS = {
    "gpu": "the GPU",
    "cpu": "the CPU",
    "tpu": "the TPU",
    "mps": "the Apple GPU (MPS)",
    "xpu": "the Intel GPU (XPU)",
}
# A GPU named by its runtime where that is not CUDA's.
RUNTIME_WORDS = {"rocm": "the AMD GPU under ROCm"}


def render_doctor(
    facts: dict[str, Any],
    probes: dict[str, dict[str, Any]],
    recommendation: Recommendation,
    *,
    why_not: str | None = None,
    console: Any = None,
    measured: dict[str, str] | None = None,
) -> None:
    """Print the checks table, the recommendation with its reasons, and the findings.

    Every string from facts, probes or rule messages (which quote facts) goes through
    terminal_text into a Text, never into markup. Without a console it goes to standard
    output: wrapped and coloured on a terminal, whole plain lines in a pipe or file.
    """
    if console is None:
        from hwcheck.render.console import output

        with output() as console:
            render_doctor(facts, probes, recommendation, why_not=why_not, console=console, measured=measured)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title="hwcheck doctor", title_justify="left", show_header=True, box=None, pad_edge=False)
    table.add_column("", width=1)
    table.add_column("check", style="bold")
    table.add_column("what was found")
    for name, status in probes.items():
        # A vendor's row is its plug-in's: there where the vendor has something to say.
        text = device_rows.vendor_row(name, facts, status)
        if text is None:
            if not _shown_row(name, facts, status):
                continue
            text = summarize(name, facts, status)
        elif not text:
            continue
        mark, style = MARKS.get(status.get("status") or "unknown", MARKS["unknown"])
        table.add_row(Text(mark, style=style), _text(name), _text(text))
    for label, text in device_rows.plugin_rows(facts, {*probes, *_SUMMARIES}):
        table.add_row(Text(*MARKS["ok"]), _text(label), _text(text))
    console.print(table)
    console.print()

    console.print(headline(recommendation))
    advice = _grid()
    for reason in recommendation.reasons:
        advice.add_row("why", _text(reason.message))
    gpus = [gpu for gpu in facts.get("gpus") or [] if isinstance(gpu, dict)]
    if any(gpu.get("vendor", "nvidia") == "nvidia" for gpu in gpus):
        advice.add_row("fp8", _text(fp8_line(recommendation.fp8)))
        recipes = recommendation.fp8.get("recipes")
        if recommendation.fp8.get("available") and isinstance(recipes, dict) and recipes:
            advice.add_row("recipes", _text(stacks_rows.recipes_line(recipes)))
    line = measure_line(recommendation, measured, facts)
    if line:
        advice.add_row("measure", _text(line))
    if why_not:
        explanations = recommendation.why_not(why_not) or [f"{why_not} is the recommendation."]
        for line in explanations:
            advice.add_row(_text(f"why not {why_not}"), _text(line))
    console.print(advice)
    if recommendation.apply:
        console.print()
        console.print(Text(terminal_text(f"In {framework_label(recommendation)}"), style="bold"))
        from hwcheck.base.wrap import wrap_code

        for line in recommendation.apply:
            # Wrapped as code (its comment above it, breaks inside brackets), never cut by rich:
            # soft_wrap, so that what is printed can be copied as it is.
            for part in wrap_code("  " + terminal_text(line), console.width):
                console.print(Text(part, style="cyan"), soft_wrap=True)
    if recommendation.findings:
        console.print()
        console.print(Text("Findings", style="bold"))
        findings = _grid()
        for finding in recommendation.findings:
            label, style = SEVERITY_STYLE[finding.severity]
            # The space before the id belongs to the message: a line wrapped there ends without one.
            body = _text(f"{finding.message} ")
            body.append(terminal_text(f"[{finding.id}]"), style="dim")
            if finding.remedy:
                body.append("\nfix: ", style="bold")
                body.append(terminal_text(finding.remedy))
            findings.add_row(Text(label, style=style), body)
        console.print(findings)


def fp8_line(fp8: dict[str, Any]) -> str:
    """Whether FP8 training runs here, why, and how: one line of the doctor report."""
    if fp8.get("available"):
        return f"FP8 training available: {fp8.get('reason')}. {fp8.get('recipe')}"
    state = "unknown" if fp8.get("available") is None and fp8.get("reason") else "not available"
    return f"FP8 training {state}: {fp8.get('reason') or 'unknown'}."


def framework_label(recommendation: Recommendation) -> str:
    """The framework the advice is for, as its users call it ("Keras (JAX backend)")."""
    from hwcheck.engine.native import labels

    return labels(recommendation.framework, recommendation.backend)["framework_label"]


def headline(recommendation: Recommendation) -> Any:
    """ "Recommendation: ..." with the decision in the framework's terms (Keras: the policy name)."""
    from rich.text import Text

    details = ["with dynamic loss scaling" if recommendation.loss_scaling else "no loss scaling"]
    if recommendation.device == "gpu" and recommendation.runtime == "cuda":
        details.append("TF32 on" if recommendation.tf32 else "no TF32")
    if recommendation.framework in ("keras", "tensorflow"):
        decision = recommendation.policy
    elif recommendation.compute_dtype == "float32":
        decision = "float32"
    else:
        decision = f"{recommendation.compute_dtype} compute"
        details.insert(0, "float32 parameters")
    text = Text("Recommendation: ", style="bold")
    text.append(terminal_text(decision), style="bold green")
    where = RUNTIME_WORDS.get(recommendation.runtime) or DEVICE_WORDS[recommendation.device]
    text.append(f" on {where} ({', '.join(details)})")
    text.append(terminal_text(f" for {framework_label(recommendation)}"))
    return text


def _text(value: Any, style: str = "") -> Any:
    from rich.text import Text

    return Text(terminal_text(value), style=style)


def _grid() -> Any:
    from rich.table import Table

    grid = Table.grid(padding=(0, 2), pad_edge=True)
    grid.add_column(no_wrap=True)
    grid.add_column()
    return grid


# Rows of probes most machines have nothing for: shown when they found something, or when a facts
# file carries their section.
SECTION_ROWS = {"arches": "compiled_arches", "tegra": "tegra", "node": "node"}


def _shown_row(name: str, facts: dict[str, Any], status: dict[str, Any]) -> bool:
    if name in SECTION_ROWS:
        return status.get("status") in ("ok", "error", "timeout") or (
            status.get("status") == "file" and bool(facts.get(SECTION_ROWS[name]))
        )
    return True


def summarize(name: str, facts: dict[str, Any], status: dict[str, Any]) -> str:
    """One line saying what a probe found, or why it found nothing."""
    reason = status.get("reason") or ""
    if status.get("status") not in ("ok", "file"):
        return reason
    return _SUMMARIES.get(name, lambda _facts: "")(facts) or reason


def _platform(facts: dict[str, Any]) -> str:
    system = facts.get("os") or {}
    python = facts.get("python") or {}
    parts = [f"{system.get('system', '?')} {system.get('release', '')}".strip()]
    if system.get("glibc"):
        parts.append(f"glibc {system['glibc']}")
    if system.get("wsl"):
        parts.append("WSL")
    if system.get("container"):
        parts.append(f"in {system['container']}")
    if python.get("version"):
        parts.append(f"Python {python['version']}")
    return ", ".join(parts) if system or python else ""


def _cpu(facts: dict[str, Any]) -> str:
    cpu = facts.get("cpu") or {}
    if not cpu:
        return ""
    flags = set(cpu.get("flags") or [])
    from hwcheck import knowledge

    # Only the kernel's names: py-cpuinfo's arm64 (Apple silicon) reads no flags at all.
    family = knowledge.arch_family(cpu.get("arch"), kernel_only=True)
    features = knowledge.cpu_flags(family) if family else ()
    marks = [
        f"{row['label']} {'yes' if row['name'] in flags else 'no'}" for row in features if "label" in row
    ]
    model = cpu.get("model") or "unknown model"
    return f"{model} ({cpu.get('arch', '?')})" + (": " + ", ".join(marks) if marks else "")


def _pci(facts: dict[str, Any]) -> str:
    devices = (facts.get("pci") or {}).get("devices")
    if devices is None:
        return ""
    if not devices:
        return "no NVIDIA, AMD or Google accelerator on the PCI bus"
    return ", ".join(
        f"{d.get('vendor', '?')} {d.get('device_id')} at {d.get('address')} "
        f"(driver {d.get('driver') or 'none'})"
        for d in devices
    )


def _cuda(facts: dict[str, Any]) -> str:
    parts = []
    for key, label in (("cuda", "CUDA"), ("cudnn", "cuDNN")):
        library = facts.get(key) or {}
        if library.get("version"):
            where = library.get("path") or library.get("source")
            parts.append(f"{label} {library['version']}" + (f" ({where})" if where else ""))
        elif key in facts:
            parts.append(f"{label} not found")
    return "; ".join(parts)


def _frameworks(facts: dict[str, Any]) -> str:
    frameworks = facts.get("frameworks") or {}
    parts = []
    tensorflow = frameworks.get("tensorflow") or {}
    if installed(frameworks, "tensorflow"):
        if tensorflow.get("cuda_build"):
            build = f"CUDA {tensorflow.get('cuda') or '?'} / cuDNN {tensorflow.get('cudnn') or '?'}"
        elif tensorflow.get("rocm_build"):
            build = "ROCm build"
        elif tensorflow.get("metal_plugin"):
            build = f"tensorflow-metal {tensorflow['metal_plugin']}"
        else:
            build = "CPU-only build"
        package = tensorflow.get("package") or "tensorflow"
        parts.append(f"TensorFlow {_version(tensorflow)} ({package}, {build})")
    keras = frameworks.get("keras") or {}
    if keras.get("version") or keras.get("tf_keras"):
        text = f"Keras {keras.get('version') or '-'}"
        if keras.get("tf_keras_major"):
            text += f" (tf.keras is Keras {keras['tf_keras_major']})"
        parts.append(text)
    for key, label in (("torch", "PyTorch"), ("jax", "JAX")):
        if installed(frameworks, key):  # "torch": {} is installed, its version unknown
            parts.append(f"{label} {_version(frameworks[key])}")
    jax = frameworks.get("jax") or {}
    if installed(frameworks, "jax") and jax.get("plugin") == "jax-metal":
        parts[-1] += f" (jax-metal {jax.get('plugin_version') or '?'})"
    if not parts and "frameworks" in facts:
        return "no TensorFlow, PyTorch or JAX installed"
    trainers = [
        f"{label} {frameworks[key]['version']}"
        for key, label in TRAINER_PACKAGE_LABELS
        if (frameworks.get(key) or {}).get("version")
    ]
    if trainers:
        parts.append(f"trainers: {', '.join(trainers)}")
    numpy = (facts.get("packages") or {}).get("numpy")
    if parts and isinstance(numpy, str) and numpy:
        parts.append(f"NumPy {numpy}")  # a wheel built for NumPy 1 fails under NumPy 2
    return ", ".join(parts)


def _version(package: dict[str, Any]) -> str:
    return str(package.get("version") or "(version unknown)")


# The trainers' facts keys (hwcheck/probes/frameworks.py), as their users name them.
TRAINER_PACKAGE_LABELS = (
    ("lightning", "Lightning"),
    ("transformers", "Transformers"),
    ("accelerate", "Accelerate"),
    ("deepspeed", "DeepSpeed"),
)


def _environment(facts: dict[str, Any]) -> str:
    environment = facts.get("environment") or {}
    return ", ".join(f"{name}={value}" for name, value in environment.items())


_SUMMARIES = {
    "platform": _platform,
    "cpu": _cpu,
    "pci": _pci,
    "arches": device_rows.arches,
    "stacks": stacks_rows.stacks,
    "tegra": device_rows.tegra,
    "cuda": _cuda,
    "frameworks": _frameworks,
    "environment": _environment,
    "node": node_rows.summary,
}
