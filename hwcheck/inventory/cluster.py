"""The policy a whole cluster can share, derived from what each hardware class runs well.

The rule (documented in docs/inventory.md, "The cluster policy"):

1. Each class *runs well* float32, the policy its nodes were recommended, and whatever
   the rules engine recommends for the class's facts under either 16-bit preference
   (`prefer="float16"` / `"bfloat16"`). So an Ampere class runs mixed_bfloat16 and
   mixed_float16, a Volta or Turing class only mixed_float16, an AMX CPU class only
   mixed_bfloat16 (never float16 on a CPU), a Pascal or AVX2-only class only float32.
   A class whose reports carry no recommendation runs only float32.
2. When every class was recommended the same policy, the cluster shares it (this keeps
   a site's `--prefer float16` choice).
3. Otherwise the cluster shares the best policy every class runs well, best first:
   mixed_bfloat16 (no loss scaling), then mixed_float16, then float32 (which every class
   runs). Volta + Ampere share mixed_float16; Volta + an AMX CPU share float32.
4. Classes whose own policy differs from the shared one would gain from a per-class policy.
5. A class with error findings (a driver too old, GPUs the framework cannot use) is broken,
   not slow: while any class is healthy, the broken ones are left out of the rule and named,
   so one broken node does not pull the whole cluster down to float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

# Best first: bf16 needs no loss scaling; float32 runs everywhere.
SHARED_PREFERENCE = ("mixed_bfloat16", "mixed_float16", "float32")


class PolicyClass(Protocol):
    """What the rule reads of a hardware class."""

    id: str
    policy: str | None
    runs_well: tuple[str, ...]

    def label(self) -> str:
        """The class's id and hardware in a few words."""
        ...

    def has_errors(self) -> bool:
        """Whether the class's reports carry an error finding."""
        ...


@dataclass
class ClusterPolicy:
    """The shared policy, why, and which classes keep it from being better."""

    policy: str | None
    reasons: list[str] = field(default_factory=list)
    # better policy -> ids of the classes that do not run it well
    limited_by: dict[str, list[str]] = field(default_factory=dict)

    @property
    def loss_scaling(self) -> bool:
        """Whether the shared policy needs loss scaling (float16 only)."""
        return self.policy == "mixed_float16"


def shared_policy(classes: Sequence[PolicyClass]) -> ClusterPolicy:
    """Apply the rule in this module's docstring to the classes of one inventory."""
    if not classes:
        return ClusterPolicy(None, ["No report was merged, so there is no cluster policy."])
    broken = [c for c in classes if c.has_errors()]
    if broken and len(broken) < len(classes):
        result = shared_policy([c for c in classes if not c.has_errors()])
        result.reasons = [
            reason.replace("Every class", "Every healthy class", 1) for reason in result.reasons
        ]
        result.reasons.append(
            "Left out until the errors in its findings are fixed: "
            + "; ".join(c.label() for c in broken)
            + "."
        )
        return result
    own = {c.policy for c in classes}
    if len(own) == 1 and None not in own:
        policy = next(iter(own))
        return ClusterPolicy(policy, [f"Every class is recommended {policy} on its own."])
    common = set(SHARED_PREFERENCE).intersection(*(c.runs_well for c in classes))
    policy = next(p for p in SHARED_PREFERENCE if p in common or p == "float32")
    recommended = ", ".join(f"{c.id} {c.policy or 'no recommendation'}" for c in classes)
    result = ClusterPolicy(
        policy,
        [
            f"Classes are recommended different policies ({recommended}); {policy} is the best "
            "policy every class runs well."
        ],
    )
    for better in SHARED_PREFERENCE[: SHARED_PREFERENCE.index(policy)]:
        lacking = [c for c in classes if better not in c.runs_well]
        result.limited_by[better] = [c.id for c in lacking]
        result.reasons.append(
            f"{better} is not shared: "
            + "; ".join(c.label() for c in lacking)
            + (" does not" if len(lacking) == 1 else " do not")
            + " run it well."
        )
    return result
