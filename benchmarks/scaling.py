"""Whether doctor, report and inventory stay linear in the size of their input (issue 21).

    python benchmarks/scaling.py                     # 1,000 / 10,000 / 100,000
    python benchmarks/scaling.py --counts 1000 5000

For each count N, in a fresh process each (the way a user runs them):
- doctor --facts: a machine of N GPUs, every one selected by UUID in CUDA_VISIBLE_DEVICES;
- report --facts: the same machine written as a report;
- report --bench: N bench blocks (in files of at most 10,000, each under the 10 MB cap);
- inventory: reports of 8 GPUs each, N GPUs in all.
It prints seconds and microseconds per GPU or block: a flat column is linear work.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "tests" / "fixtures" / "bench" / "h100-anchors.json"
PER_BENCH_FILE = 10_000
GPUS_PER_NODE = 8


def machine(count: int, first: int = 0, *, select: bool = True) -> dict[str, object]:
    """Facts of `count` A100s; with `select`, CUDA_VISIBLE_DEVICES lists every UUID, last first."""
    gpus = [
        {"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{first + i:08x}"} for i in range(count)
    ]
    facts: dict[str, object] = {"schema_version": 1, "cpu": {"arch": "x86_64"}, "gpus": gpus}
    if select:
        facts["environment"] = {"CUDA_VISIBLE_DEVICES": ",".join(g["uuid"] for g in reversed(gpus))}
    return facts


def bench_files(directory: Path, count: int) -> list[Path]:
    """`count` distinct bench blocks, one result each, in files of at most PER_BENCH_FILE."""
    document = json.loads(BENCH.read_text())
    template = copy.deepcopy(document["benches"][0])
    template["results"] = template["results"][:1]
    paths = []
    for start in range(0, count, PER_BENCH_FILE):
        blocks = []
        for number in range(start, min(count, start + PER_BENCH_FILE)):
            block = copy.deepcopy(template)
            block["steps"] = number + 1
            blocks.append(block)
        path = directory / f"bench{start}.json"
        header = {key: document[key] for key in ("schema_version", "hwcheck_version", "time")}
        path.write_text(json.dumps({**header, "benches": blocks}, separators=(",", ":")))
        paths.append(path)
    return paths


def timed(*args: str) -> float:
    """Wall seconds of one `hwcheck ARGS` run with the cache off."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HWCHECK_CACHE_DIR": ""}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "hwcheck", *args], env=environment, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"hwcheck {args[0]} failed: {result.stderr.strip()[:300]}")
    return seconds


def measure(directory: Path, count: int) -> dict[str, float]:
    """Seconds each command takes for `count` GPUs, its inputs written under `directory`."""
    facts = directory / f"facts{count}.json"
    facts.write_text(json.dumps(machine(count), separators=(",", ":")))
    plain = directory / f"plain{count}.json"
    plain.write_text(json.dumps(machine(8, select=False)))
    reports = directory / f"reports{count}"
    reports.mkdir()
    for node in range(count // GPUS_PER_NODE):
        nodes = machine(GPUS_PER_NODE, node * GPUS_PER_NODE, select=False)
        (reports / f"node{node}.json").write_text(json.dumps(nodes))
    # The nodes' facts become reports (one written by hwcheck, the rest copied from it), then merged.
    merged = directory / f"merged{count}"
    merged.mkdir()
    report = str(directory / "r.json")
    return {
        "doctor --facts (GPUs by UUID)": timed("doctor", "--facts", str(facts), "--json"),
        "report --facts (GPUs by UUID)": timed("report", "--facts", str(facts), "-o", report),
        "report --bench (blocks)": timed(
            "report",
            "--facts",
            str(plain),
            *[arg for path in bench_files(directory, count) for arg in ("--bench", str(path))],
            "-o",
            str(directory / "b.json"),
        ),
        "inventory (GPUs, 8 per node)": timed("inventory", str(_as_reports(reports, merged)), "--json"),
    }


def _as_reports(facts_dir: Path, out: Path) -> Path:
    """Reports written by `hwcheck report` for the first node, copied with each node's facts."""
    first = sorted(facts_dir.iterdir())[0]
    template_path = out / "template.json"
    subprocess.run(
        [sys.executable, "-m", "hwcheck", "report", "--facts", str(first), "-o", str(template_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        capture_output=True,
    )
    template = json.loads(template_path.read_text())
    template_path.unlink()
    for number, path in enumerate(sorted(facts_dir.iterdir())):
        report = {**template, "host": f"node{number:06d}", "facts": json.loads(path.read_text())}
        (out / f"node{number:06d}.json").write_text(json.dumps(report))
    return out


def main() -> None:
    """Print seconds and microseconds per item for each command and count."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10_000, 100_000])
    counts = parser.parse_args().counts
    rows: dict[str, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory() as temporary:
        for count in counts:
            directory = Path(temporary) / str(count)
            directory.mkdir()
            for name, seconds in measure(directory, count).items():
                rows.setdefault(name, []).append((count, seconds))
    print(f"{'':32}" + "".join(f"{count:>22,}" for count in counts))
    for name, figures in rows.items():
        cells = "".join(f"{seconds:>9.2f} s {seconds / count * 1e6:>7.1f} us" for count, seconds in figures)
        print(f"{name:32}{cells}")


if __name__ == "__main__":
    main()
