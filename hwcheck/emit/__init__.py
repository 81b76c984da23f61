"""The training-script emitter: a ScriptSpec in, a runnable script and its settings out."""

from __future__ import annotations

from hwcheck.emit.spec import FRAMEWORKS, KERAS_MAJORS, ScriptSpec

__all__ = ["FRAMEWORKS", "KERAS_MAJORS", "ScriptSpec", "emit_script"]


def emit_script(spec: ScriptSpec) -> str:
    """The full text of the training script `spec` describes."""
    from hwcheck.emit.scripts import script_text

    return script_text(spec)
