"""Score hwcheck on the corpus of real machines (tests/corpus): per case right or wrong, and totals.

    python benchmarks/corpus_score.py [--verbose]

Prints one line per case (RIGHT/wrong, what hwcheck answered, what is wrong), then the right
answers, the real errors caught (exit status 1 where training fails) and the false alarms
(errors raised on healthy setups).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    """Run every case and print the score."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="also print each case's source and class")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from corpus.score import load_cases, score_all, totals

    verdicts = score_all(load_cases())
    width = max(len(v.case.name) for v in verdicts)
    for verdict in verdicts:
        mark = "RIGHT" if verdict.right else "wrong"
        answered = f"exit {verdict.exit_status}, {verdict.policy} on {verdict.device}"
        line = f"{mark}  {verdict.case.name:<{width}}  {answered}"
        if verdict.problems:
            line += "  -- " + "; ".join(verdict.problems)
        print(line)
        if args.verbose:
            print(f"       {verdict.case.bug_class}: {verdict.case.source}")
    result = totals(verdicts)
    print()
    print(f"right answers:      {result.right} of {result.cases}")
    print(f"real errors caught: {result.errors_caught} of {result.errors}")
    print(f"false alarms:       {result.false_alarms} (errors raised on {result.healthy} healthy setups)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
