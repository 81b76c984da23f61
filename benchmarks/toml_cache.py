"""Is a parsed-rules cache worth having? Parsing rules/ with tomllib against a content-keyed JSON cache.

A cache keyed by the content it was built from must still read every rules file
and hash it; what it saves is the tomllib import and the TOML parse, and what it
adds is the hash, the cache file read and json.loads. Both ways are timed over
every file in rules/ (knowledge tables and policy rules, more than one doctor run
reads):

- cold: fresh interpreters, alternating, each importing what hwcheck imports
  anyway (json, re, os) before its clock starts; the median of --cold-runs each.
  This is what one `hwcheck doctor` run pays.
- warm: the same work repeated --warm-runs times in this process (tomllib and
  hashlib already imported): the parse alone against hash + json.loads.

    python benchmarks/toml_cache.py [--cold-runs 40] [--warm-runs 300]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = sorted((ROOT / "rules").rglob("*.toml"))

PARSE_SCRIPT = """
import json, os, re, sys, time
files = {files!r}
started = time.perf_counter()
import tomllib
for name in files:
    with open(name, "rb") as handle:
        tomllib.loads(handle.read().decode("utf-8"))
print(time.perf_counter() - started)
"""

CACHED_SCRIPT = """
import json, os, re, sys, time
files = {files!r}
cache = {cache!r}
started = time.perf_counter()
import hashlib
for name in files:
    with open(name, "rb") as handle:
        digest = hashlib.blake2b(handle.read(), digest_size=20).hexdigest()
    with open(os.path.join(cache, digest + ".json"), "rb") as handle:
        json.loads(handle.read())
print(time.perf_counter() - started)
"""


def fill_cache(directory: Path) -> None:
    """Write each rules file's parsed form where CACHED_SCRIPT looks for it."""
    for path in RULE_FILES:
        raw = path.read_bytes()
        digest = hashlib.blake2b(raw, digest_size=20).hexdigest()
        (directory / f"{digest}.json").write_text(json.dumps(tomllib.loads(raw.decode())), encoding="utf-8")


def cold(script: str) -> float:
    """Seconds the script reports for its own work in a fresh interpreter."""
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(output.stdout)


def warm_parse(runs: int) -> float:
    """Median seconds to parse every rules file with tomllib already imported."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        for path in RULE_FILES:
            tomllib.loads(path.read_bytes().decode("utf-8"))
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def warm_cached(runs: int, directory: Path) -> float:
    """Median seconds to read, hash and load the cached JSON of every rules file."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        for path in RULE_FILES:
            digest = hashlib.blake2b(path.read_bytes(), digest_size=20).hexdigest()
            json.loads((directory / f"{digest}.json").read_bytes())
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    """Time both ways and print the figures, the saving and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-runs", type=int, default=40)
    parser.add_argument("--warm-runs", type=int, default=300)
    args = parser.parse_args()

    files = [str(path) for path in RULE_FILES]
    size = sum(path.stat().st_size for path in RULE_FILES)
    with tempfile.TemporaryDirectory() as directory:
        fill_cache(Path(directory))
        parse_script = PARSE_SCRIPT.format(files=files)
        cached_script = CACHED_SCRIPT.format(files=files, cache=directory)
        cold(parse_script), cold(cached_script)  # warm the file cache and the bytecode
        parse_samples, cached_samples = [], []
        for _ in range(args.cold_runs):
            parse_samples.append(cold(parse_script))
            cached_samples.append(cold(cached_script))
        warm = (warm_parse(args.warm_runs), warm_cached(args.warm_runs, Path(directory)))

    cold_medians = (statistics.median(parse_samples), statistics.median(cached_samples))
    print(f"{len(RULE_FILES)} rules files, {size / 1024:.0f} KiB")
    print(f"{'':<48} {'tomllib ms':>10} {'cache ms':>9} {'saved ms':>9} {'ratio':>6}")
    for label, (parse, cached) in (
        (f"cold: import + all files (median of {args.cold_runs})", cold_medians),
        (f"warm: all files (median of {args.warm_runs})", warm),
    ):
        print(
            f"{label:<48} {parse * 1000:>10.2f} {cached * 1000:>9.2f} "
            f"{(parse - cached) * 1000:>9.2f} {parse / cached:>6.1f}"
        )


if __name__ == "__main__":
    main()
