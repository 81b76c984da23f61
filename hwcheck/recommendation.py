"""The result of the rules engine: a policy, the device it targets, the reasons and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

POLICIES = ("mixed_float16", "mixed_bfloat16", "float32")
DEVICES = ("gpu", "cpu", "tpu")
SEVERITIES = ("info", "warning", "error")


@dataclass(frozen=True)
class Finding:
    """Something worth knowing about the machine, with what to do about it."""

    id: str
    severity: str
    message: str
    remedy: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The finding as it appears in a JSON report."""
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "remedy": self.remedy,
            "source": self.source,
        }


@dataclass(frozen=True)
class Reason:
    """A fact-citing sentence explaining why the policy was chosen."""

    id: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The reason as it appears in a JSON report."""
        return {"id": self.id, "message": self.message}


@dataclass(frozen=True)
class Recommendation:
    """The dtype policy to train in, for which device, and why; str() is the policy name."""

    policy: str
    device: str
    loss_scaling: bool
    reasons: tuple[Reason, ...] = ()
    findings: tuple[Finding, ...] = ()
    framework: str = "tensorflow"
    # policy name -> why it was not chosen; filled by the engine for `why_not`.
    rejected: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; expected one of {', '.join(POLICIES)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; expected one of {', '.join(DEVICES)}")

    def __str__(self) -> str:
        return self.policy

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
        return list(self.rejected.get(policy, ()))

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
