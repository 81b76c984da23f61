"""hwcheck: which precision should this machine train in, and exactly how."""

from __future__ import annotations

from hwcheck.base import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.recommendation import Finding, Recommendation

__all__ = ["Finding", "Recommendation", "__version__", "bench", "probe", "recommend_policy"]


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

    `framework` is keras, tensorflow, torch or jax; None picks one from the installed
    frameworks (a "framework-assumed" finding says which). The result's `policy` is the
    Keras policy name and `apply` the lines that apply the decision in that framework.

    `facts` is checked against the facts schema first: a document that breaks it raises
    hwcheck.base.errors.FactsError (a ValueError) naming the first problem.
    """
    from hwcheck.recommendation import recommend

    probes = None
    if facts is not None:
        from hwcheck.base.errors import FactsError, InputError
        from hwcheck.facts import validate_facts

        try:
            validate_facts(facts, "facts")
        except InputError as error:
            raise FactsError(error.source, error.problem) from None
    else:
        from hwcheck.probes import collect

        collected = collect()
        facts, probes = collected.facts, collected.statuses
    return recommend(facts, probes=probes, framework=framework, prefer=prefer)


def bench(workload: str = "mlp", **options: Any) -> dict[str, Any]:
    """Measure each precision on a built-in workload or a make_step script; returns the bench block.

    The options are hwcheck.measure.session.bench's: script, framework, policies (a comma
    list or a list of names), steps, warmup, quick, timeout, device, facts (a facts dict,
    checked as recommend_policy checks it, or the path of a facts or report file), progress.
    """
    from hwcheck.measure.session import bench as measure

    facts = options.get("facts")
    if isinstance(facts, dict):
        from hwcheck.base.errors import FactsError, InputError
        from hwcheck.facts import validate_facts

        try:
            validate_facts(facts, "facts")
        except InputError as error:
            raise FactsError(error.source, error.problem) from None
    return measure(workload, **options)


def __getattr__(name: str) -> Any:
    # Keeps `import hwcheck` cheap: the model classes load on first use.
    if name in ("Finding", "Recommendation"):
        from hwcheck import recommendation

        return getattr(recommendation, name)
    raise AttributeError(f"module 'hwcheck' has no attribute {name!r}")
