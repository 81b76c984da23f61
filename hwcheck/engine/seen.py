"""The devices a training process sees, counted as the advice counts them.

build_context makes the rule variables from the same devices: emit, measure and nfd read
them here instead of building the rule context.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hwcheck.devices import Device


def seen_devices(facts: dict[str, Any], framework: str | None = None) -> tuple[str, list[Device]]:
    """The runtime framework that runs `framework` (the installed one when None) and the devices it sees.

    The GPUs a verifying framework listed where the probes found none count, as for the advice.
    """
    from hwcheck import devices
    from hwcheck.engine.native import target
    from hwcheck.engine.outcome import runtime_framework
    from hwcheck.engine.verified import with_observed_gpus

    chosen = target(facts, framework)
    facts = with_observed_gpus(devices.complete(facts), runtime_framework(chosen.framework))
    return chosen.backend, devices.visible(facts, chosen.backend)
