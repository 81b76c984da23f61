"""Bench results (facts.measurements.bench) as the bench.* variables rules read.

A measurement speaks only for what it measured: the same framework family and compute backend
as the advice, on this machine's device. Blocks measured otherwise are only listed
(bench.measured), so a torch run on a GPU never changes a TensorFlow user's CPU advice.
A block measured with another version of a framework than this machine has, or on another
device, is stale (facts/bench.py: Freshness): listed with why (bench.stale) and never used.
Whether a measurement contradicts the decision is judged per device and recommendable variant
(bench.against["gpu mixed_bfloat16"]), because the decision is made after this context.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEVICES = ("cpu", "gpu", "tpu", "mps", "xpu")
KERAS_FAMILY = ("keras", "tensorflow")
BACKENDS = ("tensorflow", "jax", "torch")
# Each bench variant in the words of the framework the advice is for (Keras policy names
# mean nothing to a PyTorch user); float32 is "TF32 off" only where TF32 exists.
VARIANT_LABELS = {
    "keras": {"mixed_bfloat16": "mixed_bfloat16", "mixed_float16": "mixed_float16"},
    "torch": {"mixed_bfloat16": "bfloat16 autocast", "mixed_float16": "float16 autocast with GradScaler"},
    "jax": {"mixed_bfloat16": "bfloat16 compute", "mixed_float16": "float16 compute with loss scaling"},
}


def variables(facts: dict[str, Any], framework: str, backend: str) -> dict[str, Any]:
    """The bench.* variables: what was measured, what applies here, and where it contradicts a variant."""
    if not isinstance(facts.get("measurements"), dict):
        return _empty(0, [])  # nothing measured: doctor never loads the bench code
    from hwcheck.facts.bench import Freshness, measured

    found_blocks = measured(facts)
    if not found_blocks:
        return _empty(0, [])
    freshness = Freshness(facts)
    blocks, stale = [], []
    for block in found_blocks:
        # Only a block this advice could use is stale: another framework's is not applicable
        # anyway, and naming its version would speak another framework's words to this user.
        why = freshness.stale(block) if _same_runtime(block, framework, backend) else None
        if why is None:
            blocks.append(block)
        else:
            stale.append(f"{_describe(block)} ({why})")
    from hwcheck.engine.verdict import RECOMMENDABLE

    family = "keras" if framework in KERAS_FAMILY else framework
    against: dict[str, dict[str, Any]] = {
        f"{device} {variant}": {"slower": [], "holds": [], "label": variant_label(variant, family, device)}
        for device in DEVICES
        for variant in RECOMMENDABLE
    }
    applicable: dict[str, dict[str, Any]] = {}
    for block in blocks:
        if not _same_runtime(block, framework, backend):
            continue
        label = _label(block)
        applicable[label] = _summary(block)
        for variant in RECOMMENDABLE:
            slower, holds = _judge(block, variant, label, family)
            entry = against[f"{block['device']['kind']} {variant}"]
            entry["slower"].extend(slower)
            entry["holds"].extend(holds)
    for entry in against.values():
        entry["slower_text"] = "; ".join(entry["slower"])
        entry["holds_text"] = "; ".join(entry["holds"])
    found = _empty(len(blocks), [_describe(block) for block in blocks], stale)
    found.update(applicable=len(applicable), results=applicable, against=against)
    return found


def _empty(count: int, described: list[str], stale: list[str] | None = None) -> dict[str, Any]:
    # With no current blocks `against` stays empty: rules test bench.count first.
    stale = stale or []
    return {
        "count": count,
        "measured": described,
        "measured_text": "; ".join(described),
        "applicable": 0,
        "results": {},
        "against": {},
        "stale_count": len(stale),
        "stale": stale,
        "stale_text": "; ".join(stale),
    }


def variant_label(variant: str, family: str, device: str) -> str:
    """A bench variant as the advice for `family` (keras, torch, jax) on `device` words it."""
    if variant == "float32+tf32":
        return "float32 with TF32"
    if variant == "float32":
        return "float32 (TF32 off)" if device == "gpu" else "float32"
    return VARIANT_LABELS.get(family, VARIANT_LABELS["keras"])[variant]


def block_backend(block: dict[str, Any]) -> str | None:
    """The runtime a bench block computed on (Keras: its backend; None when the block cannot tell)."""
    framework = block.get("framework")
    if block.get("backend"):
        return str(block["backend"])
    if framework not in KERAS_FAMILY:
        return framework
    if framework == "tensorflow":
        return "tensorflow"
    # Older blocks name no backend: the one framework besides Keras the run imported tells.
    imported = [name for name in BACKENDS if name in (block.get("framework_versions") or {})]
    return imported[0] if len(imported) == 1 else None


def _same_runtime(block: dict[str, Any], framework: str, backend: str) -> bool:
    family = "keras" if block.get("framework") in KERAS_FAMILY else block.get("framework")
    wanted = "keras" if framework in KERAS_FAMILY else framework
    return family == wanted and block_backend(block) == backend


def _judge(block: dict[str, Any], variant: str, label: str, family: str) -> tuple[list[str], list[str]]:
    """Sentences where the block contradicts `variant` (slower) or bears it out (holds).

    The ratio and its interval are the block's comparison of the two (engine/verdict.py rank),
    the same figures bench printed; blocks from before rounds state the runs' noise.
    """
    from hwcheck.engine.verdict import measured_best

    results = {r["variant"]: r for r in block["results"]}
    chosen, best = results.get(variant), measured_best(block["results"])
    if chosen is None or best is None or chosen["status"] == "skipped":
        return [], []
    device = block["device"]["kind"]
    name, fastest = variant_label(variant, family, device), variant_label(best["variant"], family, device)
    where = _where(block, label)
    if chosen["status"] != "ok":
        return [
            f"{where}: {name} did not finish ({chosen['reason']}), while {fastest} ran at {_ms(best)} ms/step"
        ], []
    if best is chosen:
        return [], [f"{where}: {name} was the fastest, at {_ms(chosen)} ms/step"]
    found, spread = _compared(block, chosen, best)
    if found["result"] == "unsteady":
        return [], []  # too noisy to say either way (the bench block says so)
    if found["result"] == "slower":
        return [
            f"{where}: {fastest} ran at {_ms(best)} ms/step, {found['ratio']:.2f}x as fast as {name} at "
            f"{_ms(chosen)} ms/step ({spread})"
        ], []
    return [], [
        f"{where}: {name} at {_ms(chosen)} ms/step was within the noise of the fastest, {fastest} at "
        f"{_ms(best)} ms/step ({found['ratio']:.2f}x the step time, {spread})"
    ]


def _compared(
    block: dict[str, Any], other: dict[str, Any], best: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """`other` against the block's best: the comparison (the block's own where it states one) and its spread.

    Interleaved rounds state their paired ratio and interval; a block from before rounds its
    medians' ratio and the runs' noise.
    """
    from hwcheck.engine.verdict import spread_text
    from hwcheck.facts.stats import comparison, pair_noise

    other_noise, best_noise = other.get("noise") or 0.0, best.get("noise") or 0.0
    found = comparison({**other, "noise": other_noise}, {**best, "noise": best_noise})
    for entry in block.get("comparisons") or []:
        if not isinstance(entry, dict) or (entry.get("variant"), entry.get("against")) != (
            other["variant"],
            best["variant"],
        ):
            continue
        ratio, low, high = entry.get("ratio"), entry.get("low"), entry.get("high")
        if all(isinstance(v, int | float) and v > 0 for v in (ratio, low, high)) and entry.get("result") in (
            "faster",
            "slower",
            "tie",
            "unsteady",
        ):
            rounds = entry.get("rounds")
            found = {
                "result": entry["result"],
                "ratio": float(ratio),  # type: ignore[arg-type]
                "low": float(low),  # type: ignore[arg-type]
                "high": float(high),  # type: ignore[arg-type]
                "rounds": rounds if isinstance(rounds, int) and rounds > 0 else None,
            }
        break
    # The sentences around it name the rounds already (_amount).
    return found, spread_text(found, pair_noise(other_noise, best_noise), count_rounds=False)


def _summary(block: dict[str, Any]) -> dict[str, Any]:
    best = block.get("best") or {}
    results = {r["variant"]: r for r in block["results"] if r["status"] == "ok"}
    return {
        "framework": block["framework"],
        "backend": block_backend(block),
        "versions": ", ".join(f"{k} {v}" for k, v in sorted((block.get("framework_versions") or {}).items())),
        "device": block["device"]["kind"],
        "device_name": block["device"].get("name") or "",
        "steps": block["steps"],
        "recommended": block["recommended"]["variant"],
        "best": best.get("variant"),
        "agreement": block["agreement"],
        "ms_per_step": {name: r["ms_per_step"]["median"] for name, r in results.items()},
        "speedup": {name: r["speedup"] for name, r in results.items() if r["speedup"] is not None},
        "noise": {name: r["noise"] for name, r in results.items() if r["noise"] is not None},
    }


def _label(block: dict[str, Any]) -> str:
    workload = block["workload"]
    if workload.get("script"):
        return os.path.basename(str(workload["script"]).rstrip("/"))  # pathlib costs doctor start-up
    return str(workload["name"])


def _where(block: dict[str, Any], label: str) -> str:
    return f"{label} ({_runtime_text(block)}, {_amount(block)})"


def _amount(block: dict[str, Any]) -> str:
    """How much was measured: the interleaved rounds, or the steps of a block from before rounds."""
    from hwcheck.facts.stats import MIN_ROUNDS

    rounds = block.get("rounds")
    ran = [r for r in block.get("results") or [] if isinstance(r, dict) and r.get("rounds_ms")]
    if isinstance(rounds, int) and 0 < rounds < MIN_ROUNDS and len(ran) > 1:
        # Interleaved, but too few rounds to pair (a tight --budget): say so wherever it is cited.
        return (
            f"{rounds} interleaved round{'s' if rounds != 1 else ''}, fewer than the {MIN_ROUNDS} "
            "a paired verdict needs"
        )
    if isinstance(rounds, int) and rounds > 1:
        return f"{rounds} interleaved rounds"
    steps = block["steps"]
    return f"{steps} step{'s' if steps != 1 else ''}"


def _describe(block: dict[str, Any]) -> str:
    # Said to users of any framework, so it names none: the workload and the device.
    device = block["device"]
    return f"{_label(block)} on the {device['kind'].upper()}" + (
        f" {device['name']}" if device.get("name") else ""
    )


def _runtime_text(block: dict[str, Any]) -> str:
    versions = block.get("framework_versions") or {}
    framework = block["framework"]
    text = f"{framework} {versions[framework]}" if framework in versions else framework
    backend = block_backend(block)
    if framework in KERAS_FAMILY and backend and backend != framework:
        text += f" on {backend}"
    device = block["device"]
    name = device.get("name")
    return f"{text}, {device['kind'].upper()}" + (f" {name}" if name else "")


def _ms(result: dict[str, Any]) -> str:
    return f"{result['ms_per_step']['median']:.3g}"


# --- hwcheck doctor --measure: a measurement that decides ------------------------------------
# The blocks `doctor --measure` made (MEASURED_FOR) are the only ones that may change the policy:
# rules/policy/bench.toml reads measure.<device> (the latest such block measured on that device
# with this framework family and backend, fresh) and follows it when its verdict is clear
# (`decided`); otherwise (`tie`: within the noise; or too noisy, or nothing to compare)
# `tied_text` says why the tables' answer stands.
MEASURED_FOR = "doctor --measure"
# The verdicts a bench block may state (hwcheck bench: clear, tie, too noisy, unknown).
VERDICTS = ("clear", "tie", "too noisy", "unknown")


def measure_variables(facts: dict[str, Any], framework: str, backend: str) -> dict[str, Any]:
    """The measure.* variables, one entry per device: what doctor --measure found there, if anything."""
    found = {device: _no_measurement() for device in DEVICES}
    if not isinstance(facts.get("measurements"), dict):
        return found  # nothing measured: doctor never loads the bench code
    from hwcheck.facts.bench import Freshness, measured

    candidates = [b for b in measured(facts) if b.get("measured_for") == MEASURED_FOR]
    if not candidates:
        return found
    freshness = Freshness(facts)
    family = "keras" if framework in KERAS_FAMILY else framework
    latest: dict[str, dict[str, Any]] = {}
    for block in candidates:
        device = (block.get("device") or {}).get("kind")
        if device not in DEVICES or not _same_runtime(block, framework, backend):
            continue  # another framework's measurement never decides this one's advice
        if freshness.stale(block) is not None:
            continue  # listed by bench.stale, never used
        if device not in latest or str(block.get("time") or "") >= str(latest[device].get("time") or ""):
            latest[device] = block
    for device, block in latest.items():
        found[device] = _measurement(block, family)
    return found


def block_verdict(block: dict[str, Any]) -> tuple[str, dict[str, Any] | None, list[str]]:
    """The block's verdict (clear, tie, too noisy, unknown), its best result and the variants tied with it.

    A block that states its verdict and ties (`verdict`, `best.ties`) is taken at its word; an
    older one is judged as hwcheck bench judges (engine/verdict.py rank and verdict_of).
    """
    from hwcheck.engine.verdict import measured_best, rank, verdict_of

    results = [r for r in block.get("results") or [] if isinstance(r, dict)]
    best = measured_best(results)
    if best is None:
        return "unknown", None, []
    stated, ties = block.get("verdict"), (block.get("best") or {}).get("ties")
    if stated in VERDICTS and isinstance(ties, list):
        return str(stated), best, [str(t) for t in ties if t != best["variant"]]
    comparisons = rank(results)
    if not comparisons:
        return "unknown", best, []
    return verdict_of(best, comparisons), best, [c["variant"] for c in comparisons if c["result"] == "tie"]


def _no_measurement() -> dict[str, Any]:
    return {
        "found": False,
        "decided": False,
        "tie": False,
        "verdict": "",
        "policy": "",
        "variant": "",
        "label": "",
        "ratio": 0.0,
        "text": "",
        "tied_text": "",
        "where": "",
    }


def _measurement(block: dict[str, Any], family: str) -> dict[str, Any]:
    """measure.<device> for one doctor --measure block: its verdict, and the sentences rules cite."""
    found = _no_measurement()
    verdict, best, ties = block_verdict(block)
    device = block["device"]["kind"]
    when = str(block.get("time") or "")[:16].replace("T", " ")
    where = f"{_label(block)}, {_runtime_text(block)}, {_amount(block)}; " + (
        f"hwcheck doctor --measure, {when} UTC" if when else "hwcheck doctor --measure"
    )
    found.update(found=True, verdict=verdict, where=where)
    if best is None:
        found["tied_text"] = f"no precision ran to the end ({where})"
        return found
    results = {r["variant"]: r for r in block["results"] if isinstance(r, dict) and r.get("status") == "ok"}
    others = [r for name, r in results.items() if name != best["variant"] and name in _recommendable()]
    name = variant_label(best["variant"], family, device)
    found.update(policy=best["policy"], variant=best["variant"], label=name)
    unsound = _numerics_failed(block, family, device)
    if unsound:
        # A precision whose numbers failed must not be left to the tables, which may advise it:
        # the measurement decides for the fastest whose numbers held.
        found["decided"] = True
        found["text"] = f"{name} ran at {_ms(best)} ms/step with its numbers sound; {unsound} ({where})"
        return found
    if not others:
        found["tied_text"] = f"only {name} ran to the end, so nothing was compared ({where})"
        return found
    # The runner-up is the one closest to the best by the comparison the block states (paired
    # by round where it ran in rounds): its ratio and interval are the ones every line cites.
    compared = [(_compared(block, other, best), other) for other in others]
    (runner_found, spread), runner_up = min(compared, key=lambda pair: pair[0][0]["ratio"])
    ratio = runner_found["ratio"]
    other = variant_label(runner_up["variant"], family, device)
    found["ratio"] = round(ratio, 3)
    found["text"] = (
        f"{name} ran at {_ms(best)} ms/step, {ratio:.2f}x as fast as {other} at {_ms(runner_up)} ms/step "
        f"({spread}; {where})"
    )
    if verdict == "clear":
        found["decided"] = True
    elif verdict == "tie":
        tied = [results[v] for v in ties if v in results] or [runner_up]
        others_text = ", ".join(f"{variant_label(r['variant'], family, device)} at {_ms(r)}" for r in tied)
        found["tie"] = True
        found["tied_text"] = (
            f"{name} at {_ms(best)} ms/step and {others_text} ms/step were within the noise of each other "
            f"({other} took {ratio:.2f}x the step time, {spread}; {where})"
        )
    else:
        why = "the step times were too unsteady to rank" if verdict == "too noisy" else "there was no verdict"
        figures = f"{name} {_ms(best)} ms/step, {other} {_ms(runner_up)} ms/step"
        found["tied_text"] = f"{why} ({figures}, {ratio:.2f}x, {spread}; {where})"
    return found


def _numerics_failed(block: dict[str, Any], family: str, device: str) -> str:
    """The recommendable precisions whose numbers failed in the block, and how, as one clause."""
    failed = [
        f"{variant_label(str(r['variant']), family, device)} failed its numerics check "
        f"({str(r['numerics']['failed'])[:200]})"
        for r in block.get("results") or []
        if isinstance(r, dict)
        and r.get("variant") in _recommendable()
        and isinstance(r.get("numerics"), dict)
        and r["numerics"].get("failed")
    ]
    return "; ".join(failed)


def _recommendable() -> tuple[str, ...]:
    from hwcheck.engine.verdict import RECOMMENDABLE

    return RECOMMENDABLE
