"""Whether training can start on a node: what doctor's JSON report, inventory and nfd all carry.

Ready unless a finding is an error (training would fail, or run on the CPU instead of the
GPU: doctor's exit status 1); unknown (null) where nothing was advised. The failing checks are
the error findings; the warnings are the node checks' (rules/policy/node.toml, fabric.toml) that warn.
"""

from __future__ import annotations

TYPE_CHECKING = False  # doctor's start-up imports this module: not even typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# The rules of rules/policy/node.toml and fabric.toml (the node and its fabric) share these prefixes.
NODE_RULES = ("node-", "fabric-", "topology-")


def readiness(findings: Iterable[tuple[str, str]] | None) -> dict[str, Any]:
    """{"ready", "failing", "warnings"} of the (id, severity) findings; None: nothing advised."""
    if findings is None:
        return {"ready": None, "failing": [], "warnings": []}
    found = list(findings)
    failing = sorted({id_ for id_, severity in found if severity == "error"})
    warnings = {id_ for id_, severity in found if severity == "warning" and id_.startswith(NODE_RULES)}
    return {"ready": not failing, "failing": failing, "warnings": sorted(warnings)}


# The findings a named framework (or trainer) that is not installed raises (rules/policy/
# findings.toml, install.toml): info or warning, since the advice for the hardware still holds.
FRAMEWORK_MISSING = (
    "framework-not-installed",
    "tf-not-installed",
    "trainer-not-installed",
    "verify-framework-not-installed",
)


def gate(
    findings: Iterable[tuple[str, str]] | None,
    *,
    strict: bool = False,
    fail_on: Iterable[str] = (),
    framework_named: bool = False,
) -> dict[str, Any]:
    """{"strict", "fail_on", "passed", "failing"}: the checks beyond the errors that stop a job.

    `passed` is false on an error as well; None where nothing was advised.

    --strict fails on every readiness warning (a node check that warns) and, where --framework
    named one, on that framework missing; --fail-on on each finding with one of its ids. The
    errors stop a job anyway (readiness): `failing` lists only what the gate adds.
    """
    chosen = sorted(set(fail_on))
    if findings is None:
        return {"strict": strict, "fail_on": chosen, "passed": None, "failing": []}
    found = list(findings)
    state = readiness(found)
    failing = {id_ for id_, _severity in found if id_ in chosen}
    if strict:
        failing.update(state["warnings"])
        if framework_named:
            failing.update(id_ for id_, _severity in found if id_ in FRAMEWORK_MISSING)
    failing -= set(state["failing"])
    passed = state["ready"] is True and not failing
    return {"strict": strict, "fail_on": chosen, "passed": passed, "failing": sorted(failing)}
