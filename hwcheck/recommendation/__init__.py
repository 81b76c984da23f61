"""The recommendation: the engine's decision for one machine, with its reasons and findings."""

from __future__ import annotations

from hwcheck.engine.aliases import resolve
from hwcheck.engine.outcome import (
    BACKENDS,
    COMPUTE_DTYPES,
    DEFAULT_RUNTIME,
    DEVICES,
    FRAMEWORKS,
    POLICIES,
    PREFERENCES,
    SEVERITIES,
    TRAINERS,
    Finding,
    Reason,
)
from hwcheck.engine.question import Question

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "BACKENDS",
    "COMPUTE_DTYPES",
    "DEVICES",
    "FRAMEWORKS",
    "POLICIES",
    "PREFERENCES",
    "SEVERITIES",
    "TRAINERS",
    "Finding",
    "Reason",
    "Recommendation",
    "recommend",
]


class WhyNot(list[str]):
    """The reasons a policy was not chosen: a list, printed as one reason per line."""

    def __str__(self) -> str:
        return "\n".join(self)


class Recommendation:
    """The precision to train in, for which device and framework, and why; str() is the Keras policy name.

    The decision itself is framework-neutral (compute_dtype, loss_scaling, tf32, device);
    `policy` is its Keras rendering and `apply` the lines that apply it in `framework`'s API.
    """

    __slots__ = (
        "policy",
        "device",
        "runtime",
        "loss_scaling",
        "reasons",
        "findings",
        "framework",
        "backend",
        "tf32",
        "apply",
        "fp8",
        "measure",
        "_rejected",
    )

    def __init__(
        self,
        policy: str,
        device: str,
        loss_scaling: bool,
        reasons: tuple[Reason, ...] = (),
        findings: tuple[Finding, ...] = (),
        framework: str = "tensorflow",
        rejected: dict[str, tuple[str, ...]] | None = None,
        *,
        backend: str | None = None,
        tf32: bool = False,
        apply: tuple[str, ...] = (),
        fp8: dict[str, Any] | None = None,
        runtime: str | None = None,
        measure: dict[str, Any] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
        if device not in DEVICES:
            raise ValueError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
        self.policy = policy
        self.device = device
        # What drives the device: cuda or rocm for a GPU (PyTorch calls both 'cuda'), tpu, cpu.
        self.runtime = runtime or DEFAULT_RUNTIME.get(device, device)
        self.loss_scaling = loss_scaling
        self.reasons = tuple(reasons)
        self.findings = tuple(findings)
        self.framework = framework
        # The runtime executing the model: Keras 3's backend, else the framework itself.
        self.backend = backend or ("tensorflow" if framework == "keras" else framework)
        self.tf32 = tf32
        self.apply = tuple(apply)
        # Whether the GPUs the process sees run FP8 training, why, and the recipe (rules decide).
        self.fp8 = dict(fp8) if fp8 else {"available": False, "reason": "", "recipe": ""}
        # What hwcheck doctor --measure would bench to decide, and why; no candidates when the tables decide.
        self.measure = (
            {"candidates": list(measure.get("candidates") or []), "why": str(measure.get("why") or "")}
            if measure
            else {"candidates": [], "why": ""}
        )
        # policy name -> why it was not chosen
        self._rejected = dict(rejected or {})

    def __str__(self) -> str:
        return self.policy

    def __repr__(self) -> str:
        return (
            f"Recommendation(policy={self.policy!r}, device={self.device!r}, "
            f"loss_scaling={self.loss_scaling!r}, framework={self.framework!r}, "
            f"findings={[f.id for f in self.findings]!r})"
        )

    @property
    def compute_dtype(self) -> str:
        """The dtype the matrix math runs in: bfloat16, float16 or float32 (parameters stay float32)."""
        return COMPUTE_DTYPES[self.policy]

    @property
    def native(self) -> Any:
        """The trainer's own setting for this decision; None when the advice is for a framework itself.

        Lightning: the precision string ("bf16-mixed"); the Hugging Face Trainer: the
        TrainingArguments keyword arguments ({"bf16": True, "fp16": False, "tf32": True});
        Accelerate: the mixed_precision word ("bf16"); DeepSpeed: the "bf16" and "fp16" config blocks.
        """
        if self.framework not in TRAINERS:
            return None
        from hwcheck.engine.trainers import native_value

        return native_value(self.framework, self.policy, tf32=self.tf32, device=self.device)

    @property
    def has_errors(self) -> bool:
        """Whether any finding is error-level (training would fail or fall back to the CPU)."""
        return any(finding.severity == "error" for finding in self.findings)

    def why_not(self, policy: str) -> WhyNot:
        """Why `policy` (or a word for it: "fp16") was not recommended; empty when it is the one."""
        policy = resolve("policy", policy)
        if policy == self.policy:
            return WhyNot()
        return WhyNot(self._rejected.get(policy, ()))

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as it appears in a JSON report."""
        return {
            "policy": self.policy,
            "device": self.device,
            "runtime": self.runtime,
            "loss_scaling": self.loss_scaling,
            "compute_dtype": self.compute_dtype,
            "tf32": self.tf32,
            "framework": self.framework,
            "backend": self.backend,
            "apply": list(self.apply),
            **({"native": self.native} if self.framework in TRAINERS else {}),
            "fp8": dict(self.fp8),
            "measure": {"candidates": list(self.measure["candidates"]), "why": self.measure["why"]},
            "reasons": [reason.to_dict() for reason in self.reasons],
            "findings": [finding.to_dict() for finding in self.findings],
        }


def recommend(
    facts: dict[str, Any],
    *,
    probes: dict[str, dict[str, Any]] | None = None,
    framework: str | None = None,
    prefer: str | None = None,
    rule_files: Iterable[str | os.PathLike[str]] = (),
    remember: bool = False,
) -> Recommendation:
    """Evaluate the shipped and site rules over `facts` and return the recommendation.

    `framework` None picks one from the installed frameworks (and says so in a finding).
    `remember` looks the decision up in (and adds it to) the private cache: the commands that
    advise this one machine use it to start fast; callers that advise many machines (inventory,
    a loop over facts files) leave it off, so the cache does not grow with every machine seen.
    """
    # The words people type ("pytorch", "bf16") mean the canonical names; anything else is a ValueError.
    if framework is not None:
        framework = resolve("framework", framework, FRAMEWORKS)
    if prefer is not None:
        prefer = resolve("preference", prefer, PREFERENCES)
    question = Question(facts, probes, framework, prefer, tuple(rule_files))
    if remember:
        from hwcheck.engine.memo import advise

        fields = advise(question)
    else:
        from hwcheck.engine.evaluate import evaluate_facts

        fields = evaluate_facts(question)
    from hwcheck.recommendation.install_lines import with_install_lines

    # Every install remedy is the command `hwcheck install` prints for this machine.
    findings = with_install_lines(tuple(fields.get("findings") or ()), facts, fields["framework"])
    return Recommendation(**{**fields, "findings": findings})
