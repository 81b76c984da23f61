"""Timing helpers shared by the doctor benchmarks: wall time of whole commands, interleaved."""

from __future__ import annotations

import compileall
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import hwcheck


def doctor_command() -> list[str]:
    """The command a user runs for `hwcheck`, with the package's bytecode compiled first."""
    # pip compiles an installed package's bytecode; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every module on every run instead.
    compileall.compile_dir(Path(hwcheck.__file__).parent, quiet=1)
    script = Path(sys.executable).parent / "hwcheck"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hwcheck"]


def time_once(command: Sequence[str], env: Mapping[str, str] | None = None) -> float:
    """Wall seconds for one run of `command` (output discarded)."""
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - started


def interleaved_samples(
    commands: Mapping[str, Sequence[str]], runs: int, env: Mapping[str, str] | None = None
) -> dict[str, list[float]]:
    """`runs` wall times of each command, taken in turn so machine noise hits all of them alike."""
    for command in commands.values():  # warm the file cache once
        time_once(command, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            samples[name].append(time_once(command, env))
    return samples


def print_table(samples: Mapping[str, list[float]], baseline: str) -> dict[str, float]:
    """Print median, minimum and ratio to `baseline` per command; return the medians."""
    medians = {name: statistics.median(times) for name, times in samples.items()}
    runs = len(next(iter(samples.values())))
    print(f"{'command':<34} {'median ms':>10} {'min ms':>8} {'x pass':>8}   ({runs} runs each)")
    for name, median in medians.items():
        ratio = median / medians[baseline]
        print(f"{name:<34} {median * 1000:>10.1f} {min(samples[name]) * 1000:>8.1f} {ratio:>8.1f}")
    return medians


def paired_ratios(samples: Mapping[str, list[float]], name: str, baseline: str) -> list[float]:
    """Each run's `name` time over the `baseline` time taken right beside it."""
    return [run / base for run, base in zip(samples[name], samples[baseline], strict=True)]


def print_ratio(samples: Mapping[str, list[float]], name: str, baseline: str, target: float) -> float:
    """Print the median ratio of `name` to `baseline`, its noise (IQR, range) and the verdict."""
    medians = {key: statistics.median(samples[key]) for key in (name, baseline)}
    ratio = medians[name] / medians[baseline]
    pairs = sorted(paired_ratios(samples, name, baseline))
    quartiles = statistics.quantiles(pairs, n=4) if len(pairs) >= 2 else [pairs[0]] * 3
    verdict = "OK" if ratio <= target else "TOO SLOW"
    ms = {key: f"{value * 1000:.1f}" for key, value in medians.items()}
    print(
        f"\n{name} / {baseline} = {ratio:.2f}x ({ms[name]} / {ms[baseline]} ms medians, "
        f"{len(pairs)} interleaved pairs; target <= {target:g}x) -> {verdict}"
    )
    print(
        f"noise: per-pair ratio median {statistics.median(pairs):.2f}x, "
        f"IQR {quartiles[0]:.2f}-{quartiles[2]:.2f}x, range {pairs[0]:.2f}-{pairs[-1]:.2f}x"
    )
    return ratio
