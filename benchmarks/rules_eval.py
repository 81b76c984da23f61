"""How long the rules engine takes: one machine (cold and warm) and 10,000 facts documents.

- cold: a fresh interpreter imports hwcheck.engine and makes its first recommend() call,
  which reads the rules and knowledge TOML and compiles every CEL condition (median of
  several fresh processes);
- warm: the median of many recommend() calls for the same machine in one process;
- batch: 10,000 facts documents varied from the machine profiles of tests/profiles.py,
  evaluated through recommend() (which reloads the rules on every call) and through
  evaluate() with the rules loaded once.

    python benchmarks/rules_eval.py [--documents 10000] [--warm-runs 300] [--cold-runs 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Reads the facts as JSON so that nothing of hwcheck is imported before the clock starts.
COLD_SCRIPT = """
import json, sys, time
sys.path.insert(0, {root!r})
facts = json.loads(sys.stdin.read())
started = time.perf_counter()
from hwcheck.recommendation import recommend
imported = time.perf_counter()
recommend(facts)
done = time.perf_counter()
print(json.dumps({{"import": imported - started, "first_call": done - imported}}))
"""
MACHINE = "dgx-a100-8x-a100-sxm4-80gb"
TF_RELEASES = ("2.11.0", "2.14.0", "2.15.0", "2.16.1", "2.18.0", "2.21.0")
DRIVERS = (("470.256.02", "11.4"), ("515.105.01", "11.7"), ("550.54.15", "12.4"), ("590.48.01", "13.1"))


def cold(facts: dict[str, Any], runs: int) -> dict[str, float]:
    """Median seconds to import the engine and make the first call, each in a fresh process."""
    script = COLD_SCRIPT.format(root=str(ROOT))
    samples = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script],
                input=json.dumps(facts),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(runs)
    ]
    return {key: statistics.median(sample[key] for sample in samples) for key in samples[0]}


def warm(facts: dict[str, Any], runs: int) -> float:
    """Median seconds of one recommend() call once everything is imported and cached."""
    from hwcheck.recommendation import recommend

    recommend(facts)
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        recommend(facts)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def varied_documents(count: int, seed: int = 7) -> list[tuple[dict[str, Any], str, str | None]]:
    """`count` (facts, framework, prefer) built from the profiles with random changes."""
    from profiles import PROFILES

    from hwcheck.probes.cpu import load_cpuinfo

    randomly = random.Random(seed)
    cpus = [load_cpuinfo(path) for path in sorted((ROOT / "tests/fixtures/cpuinfo").glob("*.txt"))]
    documents = []
    for index in range(count):
        profile = PROFILES[index % len(PROFILES)]
        facts = copy.deepcopy(profile.facts)
        if randomly.random() < 0.3:
            facts["cpu"] = randomly.choice(cpus)
        tensorflow = facts.get("frameworks", {}).get("tensorflow")
        if tensorflow and randomly.random() < 0.3:
            tensorflow["version"] = randomly.choice(TF_RELEASES)
        if facts.get("gpus") and randomly.random() < 0.3:
            version, cuda = randomly.choice(DRIVERS)
            facts["nvidia_driver"] = {"version": version, "cuda": cuda}
        if facts.get("gpus") and randomly.random() < 0.2:
            facts["gpus"] = facts["gpus"][: randomly.randint(1, len(facts["gpus"]))]
        for section in ("cuda", "cudnn", "python", "pci"):
            if randomly.random() < 0.1:
                facts.pop(section, None)
        prefer = randomly.choice((None, None, None, "float16", "bfloat16"))
        documents.append((facts, profile.framework, prefer))
    return documents


def batch(documents: list[tuple[dict[str, Any], str, str | None]]) -> dict[str, float]:
    """Total seconds for all documents: through recommend(), and with the rules loaded once."""
    from hwcheck.engine import evaluate
    from hwcheck.engine.context import build_context
    from hwcheck.engine.rules import load_rules
    from hwcheck.recommendation import recommend

    started = time.perf_counter()
    for facts, framework, prefer in documents:
        recommend(facts, framework=framework, prefer=prefer)
    through_recommend = time.perf_counter() - started

    started = time.perf_counter()
    ruleset = load_rules()
    for facts, framework, prefer in documents:
        evaluate(ruleset, build_context(facts, framework=framework, prefer=prefer))
    rules_loaded_once = time.perf_counter() - started
    return {"recommend() per document": through_recommend, "rules loaded once, evaluate()": rules_loaded_once}


def main() -> None:
    """Run the three measurements and print ms/machine and machines/s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--warm-runs", type=int, default=300)
    parser.add_argument("--cold-runs", type=int, default=5)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from profiles import BY_NAME

    print(f"one machine ({MACHINE}):")
    first = cold(BY_NAME[MACHINE].facts, args.cold_runs)
    print(
        f"  cold: import hwcheck.engine {first['import'] * 1000:7.1f} ms, first recommend() "
        f"{first['first_call'] * 1000:7.1f} ms  (median of {args.cold_runs} fresh processes)"
    )
    median = warm(BY_NAME[MACHINE].facts, args.warm_runs)
    print(f"  warm: recommend() {median * 1000:7.2f} ms  (median of {args.warm_runs} calls)")

    documents = varied_documents(args.documents)
    print(f"\n{len(documents):,} facts documents varied from {len(BY_NAME)} machine profiles:")
    for label, seconds in batch(documents).items():
        print(
            f"  {label:<31} {seconds:7.2f} s  {seconds / len(documents) * 1000:6.3f} ms/machine  "
            f"{len(documents) / seconds:8,.0f} machines/s"
        )


if __name__ == "__main__":
    main()
