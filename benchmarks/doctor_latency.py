"""Median wall time of `hwcheck doctor --json` against a bare interpreter and `import tensorflow`.

Runs the three commands interleaved (so machine noise hits all of them alike) and
prints the medians, the ratio and its noise (the spread of the ratio of each pair of
runs). The target (issue 17): doctor <= 4x `python -c pass`. The first, untimed, run of
each command fills hwcheck's cache, as any earlier doctor run on the machine would;
--cold times every run with the cache off (HWCHECK_CACHE_DIR empty) instead.

    python benchmarks/doctor_latency.py [--runs 21] [--no-tensorflow] [--cold]
"""

from __future__ import annotations

import argparse
import os
import sys

from timing import doctor_command, interleaved_samples, print_ratio, print_table

TARGET = 4.0


def main() -> None:
    """Time the commands and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--no-tensorflow", action="store_true", help="skip `import tensorflow`")
    parser.add_argument("--cold", action="store_true", help="time doctor with its cache off")
    args = parser.parse_args()
    env = {**os.environ, "HWCHECK_CACHE_DIR": ""} if args.cold else None

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hwcheck doctor --json": [*doctor_command(), "doctor", "--json"],
    }
    if not args.no_tensorflow:
        commands["python -c 'import tensorflow'"] = [sys.executable, "-c", "import tensorflow"]

    samples = interleaved_samples(commands, args.runs, env)
    medians = print_table(samples, "python -c pass")
    print_ratio(samples, "hwcheck doctor --json", "python -c pass", TARGET)
    if "python -c 'import tensorflow'" in medians:
        speedup = medians["python -c 'import tensorflow'"] / medians["hwcheck doctor --json"]
        print(f"import tensorflow / doctor = {speedup:.1f}x")


if __name__ == "__main__":
    main()
