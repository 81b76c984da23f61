"""Median wall time of `hwcheck doctor --json` against a bare interpreter and `import tensorflow`.

Runs the three commands interleaved (so machine noise hits all of them alike) and
prints the medians and the ratios. The bar: doctor <= 8x `python -c pass`.

    python benchmarks/doctor_latency.py [--runs 15] [--no-tensorflow]
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import time
from pathlib import Path

import hwcheck


def time_once(command: list[str]) -> float:
    """Wall seconds for one run of `command` (output discarded)."""
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    """Time the commands and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-tensorflow", action="store_true", help="skip `import tensorflow`")
    args = parser.parse_args()

    # pip compiles an installed package's bytecode; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run instead.
    compileall.compile_dir(Path(hwcheck.__file__).parent, quiet=1)
    script = Path(sys.executable).parent / "hwcheck"
    doctor = [str(script)] if script.exists() else [sys.executable, "-m", "hwcheck"]
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hwcheck doctor --json": [*doctor, "doctor", "--json"],
    }
    if not args.no_tensorflow:
        commands["python -c 'import tensorflow'"] = [sys.executable, "-c", "import tensorflow"]

    for command in commands.values():  # warm the file cache once
        time_once(command)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            samples[name].append(time_once(command))

    medians = {name: statistics.median(times) for name, times in samples.items()}
    baseline = medians["python -c pass"]
    print(f"{'command':<34} {'median ms':>10} {'min ms':>8} {'x pass':>8}   ({args.runs} runs each)")
    for name, median in medians.items():
        print(
            f"{name:<34} {median * 1000:>10.1f} {min(samples[name]) * 1000:>8.1f} {median / baseline:>8.1f}"
        )
    ratio = medians["hwcheck doctor --json"] / baseline
    print(f"\ndoctor / pass = {ratio:.1f}x (bar: <= 8x) -> {'OK' if ratio <= 8 else 'TOO SLOW'}")
    if "python -c 'import tensorflow'" in medians:
        speedup = medians["python -c 'import tensorflow'"] / medians["hwcheck doctor --json"]
        print(f"import tensorflow / doctor = {speedup:.1f}x")


if __name__ == "__main__":
    main()
