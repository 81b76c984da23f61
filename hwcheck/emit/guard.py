"""The precision guard shared by the float16 loops: when to give up on float16."""

from __future__ import annotations

from hwcheck.emit import spec as defaults
from hwcheck.emit.spec import ScriptSpec
from hwcheck.emit.template import Prose, fill

_SETTINGS = """
    # The precision guard leaves float16 for FALLBACK_POLICY when gradients overflow even
    # at a loss scale of GUARD_MIN_LOSS_SCALE (float16 cannot hold the unscaled gradients)
    # or when more than GUARD_MAX_SKIPPED of the last GUARD_WINDOW steps overflowed. A few
    # skipped steps at the start, while the scale settles, are normal.
    # $why_fallback
    FALLBACK_POLICY = $fallback
    GUARD_MIN_LOSS_SCALE = $min_scale
    GUARD_MAX_SKIPPED = $max_skipped
    GUARD_WINDOW = $window
"""

_CLASS = """
    class PrecisionGuard:
        \"\"\"Watches float16 steps and says when float16 has stopped working.\"\"\"

        def __init__(self, loss_scale: float) -> None:
            self.loss_scale = loss_scale
            self.overflowed = collections.deque(maxlen=GUARD_WINDOW)

        def check(self, finite: bool, loss_scale: float) -> str | None:
            \"\"\"Why training should leave float16 after this step, or None while it is fine.\"\"\"
            # The step ran at the scale in force before it; the new one is for the next step.
            scale_used, self.loss_scale = self.loss_scale, loss_scale
            self.overflowed.append(not finite)
            if not finite and scale_used <= GUARD_MIN_LOSS_SCALE:
                return f"the gradients overflowed float16 even at loss scale {scale_used:g}"
            if sum(self.overflowed) > GUARD_MAX_SKIPPED:
                return f"{sum(self.overflowed)} of the last {len(self.overflowed)} steps overflowed"
            return None
"""


def guard_settings(spec: ScriptSpec) -> str:
    """The guard's constants, with the fallback chosen for the target hardware."""
    if spec.has_bfloat16:
        why = "mixed_bfloat16: the target hardware runs bfloat16 fast, with float32's range."
    else:
        why = "float32: the target hardware has no fast bfloat16."
    return fill(
        _SETTINGS,
        why_fallback=Prose(why),
        fallback=spec.fallback_policy,
        min_scale=defaults.GUARD_MIN_LOSS_SCALE,
        max_skipped=defaults.GUARD_MAX_SKIPPED,
        window=defaults.GUARD_WINDOW,
    )


def guard_class() -> str:
    """class PrecisionGuard."""
    return fill(_CLASS)
