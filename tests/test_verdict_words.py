"""The words bench prints for a comparison say what its numbers say, and TF32 is named only where
it exists. The figures are the ones a newcomer's `bench --script train.py --quick` printed on the
2-core Xeon VM (float32 against mixed_bfloat16: 1.37x, interval 1.06-1.47x over 5 rounds)."""

from __future__ import annotations

from hwcheck.engine.verdict import judge
from hwcheck.measure.render import verdict_words


def compared(ratio: float, low: float, high: float, result: str, rounds: int | None = 5) -> dict:
    return {
        "variant": "float32",
        "against": "mixed_bfloat16",
        "ratio": ratio,
        "low": low,
        "high": high,
        "rounds": rounds,
        "result": result,
    }


def test_a_clear_ratio_beyond_the_margin_is_not_called_a_tie():
    words = verdict_words(compared(1.37, 1.06, 1.47, "tie"))
    assert "tie" not in words
    assert words.startswith("slower, but not by the 15 % margin")
    assert verdict_words(compared(0.80, 0.70, 0.95, "tie")).startswith("faster, but not by the 15 % margin")


def test_a_ratio_within_the_margin_is_a_tie_and_says_the_margin():
    assert verdict_words(compared(1.13, 1.10, 1.15, "tie")) == "within the 15 % margin: a tie"


def test_a_whole_interval_beyond_the_margin_says_so():
    assert verdict_words(compared(1.37, 1.35, 1.38, "slower")) == "slower, beyond the 15 % margin"
    assert verdict_words(compared(1.2, 0.5, 2.0, "unsteady")) == "too unsteady to rank"


def _result(variant: str, rounds_ms: list[float]) -> dict:
    median = sorted(rounds_ms)[len(rounds_ms) // 2]
    return {
        "variant": variant,
        "policy": "float32" if variant == "float32" else "mixed_bfloat16",
        "tf32": False,
        "status": "ok",
        "reason": None,
        "ms_per_step": {"median": median, "iqr": 0.0, "min": min(rounds_ms), "max": max(rounds_ms)},
        "noise": 0.0,
        "speedup": None,
        "rounds_ms": rounds_ms,
    }


def test_bench_on_a_cpu_never_mentions_tf32():
    # float32 clearly faster than the recommended bf16 (0.74x as fast, as on the config-written script).
    results = [
        _result("float32", [10.0, 10.1, 9.9, 10.0, 10.2]),
        _result("mixed_bfloat16", [13.5, 13.6, 13.4, 13.5, 13.7]),
    ]
    on_cpu = judge(results, "mixed_bfloat16", "train.py", "cpu")
    [finding] = [f for f in on_cpu["findings"] if f["id"] == "bench-disagrees"]
    assert "TF32" not in finding["remedy"] and "train in float32;" in finding["remedy"]
    on_gpu = judge(results, "mixed_bfloat16", "train.py", "gpu")
    assert (
        "float32 with TF32 off"
        in [f for f in on_gpu["findings"] if f["id"] == "bench-disagrees"][0]["remedy"]
    )
