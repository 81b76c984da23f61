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
