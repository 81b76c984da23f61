"""Pieces every emitted script shares, whatever the framework."""

from __future__ import annotations

from hwcheck.emit.template import fill

MAIN_GUARD = """
if __name__ == "__main__":
    main()
"""

_PARSE_ARGS = """
    def parse_args() -> argparse.Namespace:
        \"\"\"The command line: how many steps to train.\"\"\"
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument(
            "--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})"
        )
        return parser.parse_args()
"""

_PARSE_ARGS_OVERFLOW = """
    def parse_args() -> argparse.Namespace:
        \"\"\"The command line: how many steps to train, and an optional overflow to inject.\"\"\"
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument(
            "--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})"
        )
        parser.add_argument(
            "--inject-overflow",
            type=int,
            metavar="STEP",
            help="from STEP on, multiply the float16 loss by OVERFLOW_FACTOR so its gradients "
            "overflow: shows skipped steps, the shrinking loss scale and the precision guard",
        )
        return parser.parse_args()
"""


def parse_args(*, overflow_flag: bool) -> str:
    """parse_args(), with --inject-overflow for float16 loops."""
    return fill(_PARSE_ARGS_OVERFLOW if overflow_flag else _PARSE_ARGS)
