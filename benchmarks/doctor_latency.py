"""Median wall time of `hwcheck doctor --json` against a bare interpreter and `import tensorflow`.

Runs the three commands interleaved (so machine noise hits all of them alike) and
prints the medians and the ratios. The bar: doctor <= 8x `python -c pass`.

    python benchmarks/doctor_latency.py [--runs 15] [--no-tensorflow]
"""

from __future__ import annotations

import argparse
import sys

from timing import doctor_command, interleaved_samples, print_table


def main() -> None:
    """Time the commands and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-tensorflow", action="store_true", help="skip `import tensorflow`")
    args = parser.parse_args()

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hwcheck doctor --json": [*doctor_command(), "doctor", "--json"],
    }
    if not args.no_tensorflow:
        commands["python -c 'import tensorflow'"] = [sys.executable, "-c", "import tensorflow"]

    medians = print_table(interleaved_samples(commands, args.runs), "python -c pass")
    baseline = medians["python -c pass"]
    ratio = medians["hwcheck doctor --json"] / baseline
    print(f"\ndoctor / pass = {ratio:.1f}x (bar: <= 8x) -> {'OK' if ratio <= 8 else 'TOO SLOW'}")
    if "python -c 'import tensorflow'" in medians:
        speedup = medians["python -c 'import tensorflow'"] / medians["hwcheck doctor --json"]
        print(f"import tensorflow / doctor = {speedup:.1f}x")


if __name__ == "__main__":
    main()
