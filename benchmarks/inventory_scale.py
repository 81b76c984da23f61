"""How `hwcheck inventory` scales: generate N varied reports, merge them, print reports/s and memory.

    python benchmarks/inventory_scale.py                 # 1,000 / 10,000 / 50,000 reports
    python benchmarks/inventory_scale.py --counts 10000

Reports are written to a temporary directory from the real-machine profiles in
tests/fixtures/reports/profiles.json (recommendations by the real rules engine), varied by
profile, NVIDIA driver, host and time; 1% are older duplicates of a host (superseded) and
0.1% are truncated (rejected). Each merge runs in a fresh process, the way
`hwcheck inventory DIR --json` does it (schema validation of every report included), so
its peak RSS is the merge's own. Target (issue 5): 10,000 reports in <= 5 s and <= 500 MB
on the 2-core development VM, linear in the count.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

# Driver / CUDA pairs seen in the project's nvidia-smi captures (telegraf a100-sxm4-v12.xml,
# thamada/gls RTX2000Ada, A100SXMx4, H100SXMx8 and RTX5090 captures).
DRIVERS = (
    ("535.54.03", "12.2"),
    ("550.54.15", "12.4"),
    ("555.42.02", "12.5"),
    ("565.57.01", "12.7"),
    ("570.124.06", "12.8"),
)
TARGET_SECONDS, TARGET_MB = 5.0, 500


def generate(directory: Path, count: int) -> None:
    """Write `count` reports (plus duplicates and truncated files) into `directory`."""
    from inventory_helpers import make_report, profiles

    names = list(profiles())
    variants = itertools.cycle(itertools.product(names, DRIVERS))
    for number in range(count):
        name, driver = next(variants)
        rack = directory / f"rack{number % 50:02d}"
        rack.mkdir(parents=True, exist_ok=True)
        host = f"node{number:06d}"
        day = 1 + number % 28
        report = make_report(name, host, f"2026-05-{day:02d}T12:00:00+00:00", driver=driver)
        text = json.dumps(report, indent=2)
        if number % 1000 == 999:
            text = text[: len(text) // 2]  # a report cut off mid-write
        (rack / f"{host}.json").write_text(text, encoding="utf-8")
        if number % 100 == 50:
            older = make_report(name, host, f"2026-04-{day:02d}T12:00:00+00:00", driver=driver)
            (rack / f"{host}.old.json").write_text(json.dumps(older, indent=2), encoding="utf-8")


def merge(directory: str) -> dict[str, float]:
    """Merge every report under `directory` as `hwcheck inventory DIR --json` does; the figures."""
    started = time.perf_counter()
    from hwcheck.inventory.merge import Merger, engine_runs_well
    from hwcheck.inventory.output import inventory_document
    from hwcheck.inventory.sources import report_paths

    merger = Merger()
    merger.add_files(report_paths([directory]))
    inventory = merger.finish(engine_runs_well())
    output = json.dumps(inventory_document(inventory), indent=2, ensure_ascii=False)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "reports": inventory.reports_read,
        "nodes": inventory.nodes,
        "classes": len(inventory.classes),
        "rejected": len(inventory.rejected),
        "superseded": len(inventory.superseded),
        "output_mb": len(output) / 1e6,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    """Generate, merge in a child process, print a table, and say whether the target holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--merge", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.merge:
        print(json.dumps(merge(args.merge)))
        return 0

    print(
        f"{'reports':>8} {'merge s':>8} {'reports/s':>10} {'µs/report':>10} {'peak RSS MB':>12} "
        f"{'classes':>8} {'rejected':>9} {'superseded':>11}"
    )
    results = {}
    for count in args.counts:
        with tempfile.TemporaryDirectory(prefix="hwcheck-inventory-") as directory:
            generate(Path(directory), count)
            child = subprocess.run(
                [sys.executable, __file__, "--merge", directory],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        figures = json.loads(child.stdout)
        results[count] = figures
        rate = figures["reports"] / figures["seconds"]
        print(
            f"{figures['reports']:>8} {figures['seconds']:>8.2f} {rate:>10.0f} "
            f"{1e6 / rate:>10.0f} {figures['max_rss_mb']:>12.0f} {figures['classes']:>8} "
            f"{figures['rejected']:>9} {figures['superseded']:>11}"
        )
    if 10000 in results:
        figures = results[10000]
        met = figures["seconds"] <= TARGET_SECONDS and figures["max_rss_mb"] <= TARGET_MB
        print(
            f"target for 10,000 reports (<= {TARGET_SECONDS:g} s, <= {TARGET_MB} MB): "
            f"{'met' if met else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
