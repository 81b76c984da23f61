"""hwcheck: which precision should this machine train in, and exactly how."""

from __future__ import annotations

from hwcheck.base import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.recommendation import Finding, Recommendation

__all__ = [
    "Finding",
    "Recommendation",
    "__version__",
    "accelerate_mixed_precision",
    "bench",
    "deepspeed_config",
    "precision",
    "probe",
    "recommend_policy",
    "training_arguments",
]


def probe(*, timeout: float = 5.0) -> dict[str, Any]:
    """Probe this machine and return its facts (the facts-file format).

    `timeout` is each probe's deadline in seconds, above 0 and at most 3600; else a ValueError.
    """
    from hwcheck.probes import collect

    return collect(timeout=timeout).facts


def recommend_policy(
    facts: dict[str, Any] | None = None,
    *,
    framework: str | None = None,
    prefer: str | None = None,
) -> Recommendation:
    """Recommend a precision for `facts` (this machine when None), in `framework`'s own API.

    `framework` is keras, tensorflow, torch or jax, or a PyTorch trainer (lightning, hf-trainer,
    accelerate, deepspeed); None picks one from the installed frameworks (a "framework-assumed"
    finding says which). The result's `policy` is the Keras policy name, `apply` the lines that
    apply the decision in that framework, and for a trainer `native` its own setting.

    `facts` is checked against the facts schema first: a document that breaks it raises
    hwcheck.base.errors.FactsError (a ValueError) naming the first problem.
    """
    from hwcheck.recommendation import recommend

    probes = None
    if facts is not None:
        facts = _checked_facts(facts)
    else:
        from hwcheck.probes import collect

        collected = collect()
        facts, probes = collected.facts, collected.statuses
    return recommend(facts, probes=probes, framework=framework, prefer=prefer)


def _checked_facts(facts: Any) -> dict[str, Any]:
    """The API's one check of a `facts` argument: a dict valid under the facts schema, else FactsError."""
    from hwcheck.base.errors import FactsError, InputError
    from hwcheck.facts import validate_facts

    if not isinstance(facts, dict):
        hint = (
            " (for a facts file, pass hwcheck.facts.load_facts(path))"
            if isinstance(facts, str | bytes) or hasattr(facts, "__fspath__")
            else ""
        )
        raise FactsError("facts", f"expected a facts dict, not {type(facts).__name__}{hint}")
    try:
        return validate_facts(facts, "facts")
    except InputError as error:
        raise FactsError(error.source, error.problem) from None


def precision(framework: str = "lightning", facts: dict[str, Any] | None = None) -> str:
    """This machine's precision in one word of `framework`: Trainer(precision=hwcheck.precision()).

    lightning: "bf16-mixed", "16-mixed" or "32-true"; accelerate: "bf16", "fp16" or "no";
    keras and tensorflow: the policy name; torch and jax: the compute dtype ("bfloat16").
    The Hugging Face Trainer and DeepSpeed take several settings: training_arguments() and
    deepspeed_config(). Advice comes from the decision cache after the first call (no
    framework is imported); `facts` advises another machine (a facts file's document).
    """
    from hwcheck.engine.aliases import resolve
    from hwcheck.recommendation import FRAMEWORKS

    name = resolve("framework", framework, FRAMEWORKS)
    if name in ("hf-trainer", "deepspeed"):
        helper = "training_arguments()" if name == "hf-trainer" else "deepspeed_config()"
        raise ValueError(f"{name} takes several settings, not one word: use hwcheck.{helper}")
    advice = _advice(name, facts)
    if advice.native is not None:
        return str(advice.native)
    return advice.policy if name in ("keras", "tensorflow") else advice.compute_dtype


def training_arguments(facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Hugging Face Trainer's keywords here: TrainingArguments(..., **hwcheck.training_arguments())."""
    return dict(_advice("hf-trainer", facts).native)


def accelerate_mixed_precision(facts: dict[str, Any] | None = None) -> str:
    """Accelerate's word here: Accelerator(mixed_precision=hwcheck.accelerate_mixed_precision())."""
    return str(_advice("accelerate", facts).native)


def deepspeed_config(facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """DeepSpeed's "bf16" and "fp16" blocks here: {**your_config, **hwcheck.deepspeed_config()}."""
    import copy

    return copy.deepcopy(_advice("deepspeed", facts).native)


def _advice(framework: str, facts: dict[str, Any] | None) -> Recommendation:
    """The recommendation for `framework`, from the decision cache when these facts were advised before."""
    from hwcheck.recommendation import recommend

    probes = None
    if facts is None:
        from hwcheck.probes import collect

        collected = collect()
        facts, probes = collected.facts, collected.statuses
    else:
        facts = _checked_facts(facts)
    return recommend(facts, probes=probes, framework=framework, remember=True)


def bench(workload: str = "mlp", **options: Any) -> dict[str, Any]:
    """Measure each precision on a built-in workload or a make_step script; returns the bench block.

    The options are hwcheck.measure.session.bench's: script, framework, policies (a comma
    list or a list of names), steps, warmup, quick, timeout, device, facts (a facts dict,
    checked as recommend_policy checks it, or the path of a facts or report file), progress.
    """
    from hwcheck.measure.session import bench as measure

    if isinstance(options.get("facts"), dict):
        _checked_facts(options["facts"])
    return measure(workload, **options)


def __getattr__(name: str) -> Any:
    # Keeps `import hwcheck` cheap: the model classes load on first use.
    if name in ("Finding", "Recommendation"):
        from hwcheck import recommendation

        return getattr(recommendation, name)
    raise AttributeError(f"module 'hwcheck' has no attribute {name!r}")
