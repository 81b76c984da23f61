"""The schemas of what the measuring children answer, checked by base/answers.py before any use.

Each child runs the user's interpreter and may answer anything JSON can hold: these say what the
parent takes. What does not fit is that child's failure, said in one line.
"""

from __future__ import annotations

from typing import Any

from hwcheck.measure.verify import MAX_ANSWER

# The most processes doctor --verify --distributed starts, one per device.
MAX_RANKS = 64

_MS = {"type": "number", "minimum": 0}
_COUNT = {"type": ["integer", "null"], "minimum": 0}
_TEXTS = {
    "type": "object",
    "maxProperties": 64,
    "additionalProperties": {"type": "string", "maxLength": 4096},
}

# A measuring child's whole result (measure/child.py's Session.finish), checked before any use:
# one that does not fit is that precision's failure.
CHILD_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["ok", "failed", "skipped"]},
        "reason": {"type": ["string", "null"]},
        "notes": {"type": "array", "items": {"type": "string"}},
        "times_ms": {"type": "array", "items": _MS},
        "rounds_ms": {"type": "array", "items": _MS},
        "losses": {"type": "array", "items": {"type": ["number", "null"]}},
        "finite": {"type": "boolean"},
        "decreased": {"type": "boolean"},
        "peak_memory_mib": {"type": ["number", "null"], "minimum": 0},
        "framework_versions": _TEXTS,
        "framework_files": _TEXTS,
        "numerics": {
            "type": ["object", "null"],
            "properties": {
                "steps": _COUNT,
                "nonfinite_losses": _COUNT,
                "first_nonfinite_loss_step": _COUNT,
                "gradient_steps": _COUNT,
                "nonfinite_gradient_steps": _COUNT,
                "zero_gradient_fraction": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                "scaler": {"type": ["string", "null"], "maxLength": 256},
                "scaler_skipped_steps": _COUNT,
                "final_scale": {"type": ["number", "null"]},
                "loss_heads": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": ["number", "null"]}},
                },
            },
        },
    },
}


def rank_answer_schema(timeout: float) -> dict[str, Any]:
    """What one rank may answer (distributed_child.py): no time it measured exceeds the deadline."""
    seconds = {"type": "number", "minimum": 0, "maximum": timeout}
    rank = {"type": "integer", "minimum": 0, "maximum": MAX_RANKS}
    return {
        "type": "object",
        "required": ["outcome"],
        "properties": {
            "rank": rank,
            "outcome": {"enum": ["ok", "error"]},
            "error": {"type": "string", "maxLength": MAX_ANSWER},
            "device_name": {"type": "string", "maxLength": MAX_ANSWER},
            "all_reduce": {"type": "object", "properties": {"ok": {"type": "boolean"}, "seconds": seconds}},
            "pairs": {
                "type": "array",
                "maxItems": MAX_RANKS,
                "items": {
                    "type": "object",
                    "properties": {
                        "ranks": {"type": "array", "maxItems": 2, "items": rank},
                        "ok": {"type": "boolean"},
                        "seconds": seconds,
                    },
                },
            },
        },
    }
