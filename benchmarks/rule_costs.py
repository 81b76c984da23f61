"""What the expressions that site rules may not write would cost: each timed in its own process.

    python benchmarks/rule_costs.py [--timeout 30]

Prints, for each expression tests/test_rule_limits.py shows refused at load, how long the
CEL extension takes to evaluate it once (or that it ran past the timeout), beside the
per-expression limit hwcheck reports as slow at run time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

MEASURE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from hwcheck.engine.cel import cel
program = cel().compile(sys.argv[2])
start = time.perf_counter()
try:
    program.execute({"big": list(range(500))})
except Exception:
    pass
print(time.perf_counter() - start)
"""


def main() -> None:
    """Time each refused expression in a fresh interpreter."""
    from test_rule_limits import SLOW

    from hwcheck.engine.evaluate import SLOW_SECONDS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    print(f"run-time limit per expression: {SLOW_SECONDS:.2f} s")
    for name, (expression, _variables, _limit) in sorted(SLOW.items()):
        try:
            result = subprocess.run(
                [sys.executable, "-c", MEASURE, str(ROOT), expression],
                capture_output=True,
                text=True,
                timeout=args.timeout,
                check=True,
            )
            seconds = float(result.stdout)
            print(f"{name:20} {seconds:8.3f} s  ({seconds / SLOW_SECONDS:.1f}x the limit)")
        except subprocess.TimeoutExpired:
            print(f"{name:20} > {args.timeout:.0f} s (cut off)")


if __name__ == "__main__":
    main()
