"""Does `hwcheck bench` reproduce its verdict? Five back-to-back runs per framework, and their spread.

    python benchmarks/verdicts.py                    # torch and jax, 5 runs each, --quick
    python benchmarks/verdicts.py --runs 3 --frameworks torch

Each run is `hwcheck bench --workload mlp --quick --framework F --json`; the script prints each
run's verdict (the measured best, the agreement with the advice) and, per precision, the
spread of the medians across runs. Issue 20 asks for the same verdict 5/5.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_once(framework: str) -> dict:
    """One `hwcheck bench --workload mlp --quick` run as its JSON block."""
    command = [sys.executable, "-m", "hwcheck", "bench", "--workload", "mlp", "--quick"]
    command += ["--framework", framework, "--json"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    block = json.loads(done.stdout)
    return block["bench"][0] if "bench" in block else block


def verdict(block: dict) -> str:
    """The verdict of one run: the measured best (or none) and the agreement with the advice."""
    best = block.get("best") or {}
    noisy = any(finding["id"] == "bench-too-noisy" for finding in block.get("findings", []))
    suffix = " too-noisy" if noisy else ""
    return f"best={best.get('variant', 'none')} agreement={block.get('agreement')}{suffix}"


def main() -> int:
    """Run the benchmark and print the verdicts and the spread."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frameworks", default="torch,jax")
    arguments = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}, cores: {len(os.sched_getaffinity(0))}")
    for framework in arguments.frameworks.split(","):
        blocks = [bench_once(framework) for _ in range(arguments.runs)]
        verdicts = [verdict(block) for block in blocks]
        print(f"\n{framework}: mlp --quick, {arguments.runs} runs back to back")
        for number, (block, text) in enumerate(zip(blocks, verdicts, strict=True), start=1):
            finished = [r for r in block["results"] if r["status"] == "ok"]
            medians = ", ".join(f"{r['variant']} {r['ms_per_step']['median']:.3g}" for r in finished)
            print(f"  run {number}: {text}  ({medians} ms/step)")
        print(f"  the same verdict {max(verdicts.count(v) for v in verdicts)}/{len(verdicts)}")
        variants = {r["variant"] for block in blocks for r in block["results"] if r["status"] == "ok"}
        for variant in sorted(variants):
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
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
