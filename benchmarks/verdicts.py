"""Does `hwcheck bench` reproduce its verdict? Runs back to back per framework, idle and beside a busy core.

    python benchmarks/verdicts.py                          # torch and jax, 5 runs each, 60 s budget
    python benchmarks/verdicts.py --runs 3 --frameworks torch --busy
    python benchmarks/verdicts.py --budget 0              # no budget: the default rounds in full
    python benchmarks/verdicts.py --policies float32,bf16 # what doctor --measure compares on a CPU
    python benchmarks/verdicts.py --device gpu --workload transformer  # on a GPU
    python benchmarks/verdicts.py --quick                 # bench --quick: do its verdicts hold too?

Each run is `hwcheck bench --workload mlp --framework F --json` with the budget `doctor --measure`
uses by default. A run's verdict is what it would tell a user: `clear: X` (X fastest beyond the
noise), `tie: X = Y` (the set of precisions within the noise of the fastest, in any order), or
`too noisy`. Issue 20 asks for the same verdict 5/5; with --busy, another process keeps one core
busy for the whole of each run, and the verdict must be the idle one, a tie that holds it, or
`too noisy`, never another winner. Prints each run, the spread of each precision's median
across runs, and the count of the most common verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_once(
    framework: str,
    budget: float,
    policies: str | None,
    device: str = "cpu",
    workload: str = "mlp",
    quick: bool = False,
) -> dict:
    """One `hwcheck bench --workload W --device D` run (with --quick when asked) as its JSON block."""
    command = [sys.executable, "-m", "hwcheck", "bench", "--workload", workload, "--device", device]
    command += ["--framework", framework, "--json"] + (["--budget", str(budget)] if budget else [])
    command += ["--policies", policies] if policies else []
    command += ["--quick"] if quick else []
    inherited = os.environ.get("PYTHONPATH")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), inherited]))}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)


def verdict(block: dict) -> str:
    """What the run tells a user: the fastest, the precisions tied with it, or that it is too noisy."""
    best = block.get("best") or {}
    kind = block.get("verdict", "unknown")
    if kind == "tie":
        return "tie: " + " = ".join(sorted([best["variant"], *best.get("ties", [])]))
    if kind == "clear":
        return f"clear: {best['variant']}"
    return kind


def holds(busy: str, idle: str) -> bool:
    """Whether a verdict under load keeps the idle one: the same, too noisy, or a tie holding its winner."""
    if busy in (idle, "too noisy"):
        return True
    winners = set(idle.split(": ", 1)[-1].split(" = "))
    return busy.startswith("tie: ") and winners <= set(busy[5:].split(" = "))


def series(
    framework: str,
    runs: int,
    budget: float,
    label: str,
    policies: str | None = None,
    device: str = "cpu",
    workload: str = "mlp",
    quick: bool = False,
) -> list[str]:
    """`runs` runs back to back, printed; their verdicts."""
    how = "bench --quick, " if quick else ""
    print(f"\n{framework}: {workload} on the {device}, {runs} runs back to back, {how}{label}")
    blocks, verdicts = [], []
    for number in range(1, runs + 1):
        started = time.monotonic()
        block = bench_once(framework, budget, policies, device, workload, quick)
        blocks.append(block)
        verdicts.append(verdict(block))
        finished = [r for r in block["results"] if r["status"] == "ok"]
        medians = ", ".join(f"{r['variant']} {r['ms_per_step']['median']:.3g}" for r in finished)
        ratios = ", ".join(
            f"{c['variant']}/{c['against']} {c['ratio']:.2f} ({c['low']:.2f}-{c['high']:.2f})"
            for c in block.get("comparisons", [])
        )
        environment = block.get("environment") or {}
        few = any(f.get("id") == "bench-few-rounds" for f in block.get("findings") or [])
        print(
            f"  run {number}: {verdicts[-1]:38} {time.monotonic() - started:5.1f} s, "
            f"{block.get('rounds')} rounds{' (too few to pair)' if few else ''}, "
            f"{environment.get('threads')} threads, "
            f"busy before {environment.get('busy_before')}"
        )
        print(f"         ms/step: {medians}")
        print(f"         ratios:  {ratios}")
    for variant in sorted(
        {r["variant"] for block in blocks for r in block["results"] if r["status"] == "ok"}
    ):
        medians = [
            r["ms_per_step"]["median"]
            for block in blocks
            for r in block["results"]
            if r["variant"] == variant and r["status"] == "ok"
        ]
        middle = statistics.median(medians)
        print(
            f"  {variant:22} median of medians {middle:.3g} ms/step, "
            f"range {min(medians):.3g}-{max(medians):.3g} ({(max(medians) - min(medians)) / middle:.0%})"
        )
    common, count = Counter(verdicts).most_common(1)[0]
    print(f"  the same verdict {count}/{len(verdicts)} ({common})")
    return verdicts


def main() -> int:
    """Run the benchmark and print the verdicts and the spread."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frameworks", default="torch,jax")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per run; 0 for none")
    parser.add_argument("--busy", action="store_true", help="also run beside a process keeping one core busy")
    parser.add_argument(
        "--policies",
        help="the precisions to compare (default: all; doctor --measure compares float32,bf16 on a CPU)",
    )
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="where to bench")
    parser.add_argument(
        "--workload", choices=("mlp", "conv", "transformer", "lstm"), default="mlp", help="default mlp"
    )
    parser.add_argument(
        "--quick", action="store_true", help="bench --quick (5 rounds, one process per precision)"
    )
    arguments = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}, cores: {len(os.sched_getaffinity(0))}")
    for framework in arguments.frameworks.split(","):
        idle = series(
            framework,
            arguments.runs,
            arguments.budget,
            "idle",
            arguments.policies,
            arguments.device,
            arguments.workload,
            arguments.quick,
        )
        if not arguments.busy:
            continue
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(1.0)
            busy = series(
                framework,
                arguments.runs,
                arguments.budget,
                "one core kept busy by another process",
                arguments.policies,
                arguments.device,
                arguments.workload,
                arguments.quick,
            )
        finally:
            spinner.kill()
            spinner.wait()
        reference = Counter(idle).most_common(1)[0][0]
        kept = sum(holds(verdict, reference) for verdict in busy)
        print(f"  beside the busy core, {kept}/{len(busy)} verdicts keep the idle one ({reference})")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
