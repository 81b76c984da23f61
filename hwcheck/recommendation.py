"""The result of the rules engine: a policy, the device it targets, the reasons and findings."""

from __future__ import annotations

from typing import Any, NamedTuple

POLICIES = ("mixed_float16", "mixed_bfloat16", "float32")
DEVICES = ("gpu", "cpu", "tpu")
SEVERITIES = ("info", "warning", "error")
FRAMEWORKS = ("tensorflow", "torch", "jax")
PREFERENCES = ("float16", "bfloat16")


# NamedTuples rather than dataclasses: importing dataclasses costs doctor ~7 ms.
class Finding(NamedTuple):
    """Something worth knowing about the machine, with what to do about it."""

    id: str
    severity: str
    message: str
    remedy: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The finding as it appears in a JSON report."""
        return self._asdict()


class Reason(NamedTuple):
    """A fact-citing sentence explaining why the policy was chosen."""

    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The reason as it appears in a JSON report."""
        return self._asdict()


class Recommendation:
    """The dtype policy to train in, for which device, and why; str() is the policy name."""

    __slots__ = ("policy", "device", "loss_scaling", "reasons", "findings", "framework", "_rejected")

    def __init__(
        self,
        policy: str,
        device: str,
        loss_scaling: bool,
        reasons: tuple[Reason, ...] = (),
        findings: tuple[Finding, ...] = (),
        framework: str = "tensorflow",
        rejected: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
        if device not in DEVICES:
            raise ValueError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")
        self.policy = policy
        self.device = device
        self.loss_scaling = loss_scaling
        self.reasons = tuple(reasons)
        self.findings = tuple(findings)
        self.framework = framework
        # policy name -> why it was not chosen
        self._rejected = dict(rejected or {})

    def __str__(self) -> str:
        return self.policy

    def __repr__(self) -> str:
        return (
            f"Recommendation(policy={self.policy!r}, device={self.device!r}, "
            f"loss_scaling={self.loss_scaling!r}, findings={[f.id for f in self.findings]!r})"
        )

    @property
    def has_errors(self) -> bool:
        """Whether any finding is error-level (training would fail or fall back to the CPU)."""
        return any(finding.severity == "error" for finding in self.findings)

    def why_not(self, policy: str) -> list[str]:
        """Why `policy` was not recommended (empty when it is the recommendation)."""
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
        if policy == self.policy:
            return []
        return list(self._rejected.get(policy, ()))

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as it appears in a JSON report."""
        return {
            "policy": self.policy,
            "device": self.device,
            "loss_scaling": self.loss_scaling,
            "framework": self.framework,
            "reasons": [reason.to_dict() for reason in self.reasons],
            "findings": [finding.to_dict() for finding in self.findings],
        }
