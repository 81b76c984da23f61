"""fit's verdict margin: rules/knowledge/fit_error.toml recomputed from the measurement files it
cites (so the table cannot drift from its evidence or from the estimate), the margin a measured
family gets beside an unmeasured one and a bare parameter count, and the published study's 80 %
as the ceiling.

`python tests/test_fit_margin.py` prints the table's rows as this hwcheck recomputes them.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck import knowledge
from hwcheck.recommendation.fit import Plan, estimate
from hwcheck.recommendation.margin import margin, share_allowed
from hwcheck.recommendation.model_shape import from_config, from_config_file
from hwcheck.render.fit_text import margin_text

MEASUREMENTS = ROOT / "docs" / "measurements"
H100_PEAKS = MEASUREMENTS / "h100-2026-11-27" / "fit-peaks.json"
H100_BENCHMARK = MEASUREMENTS / "h100-2026-11-27" / "fit-measured-h100.md"
H200 = MEASUREMENTS / "h200-2026-11-28"
GIB = 2**30


def _allocated(shape, plan: Plan) -> int:
    """fit's total less the CUDA context and the headroom: what max_memory_allocated() sees."""
    parts = estimate(shape, plan, None)["per_device"]
    return parts["total"] - parts["cuda_context"] - parts["fragmentation"]


def _policy(precision: str) -> str:
    return "float32" if precision == "float32" else "mixed_bfloat16"


def _seen(shape, plan: Plan, peak: int, path: Path, date: str, machine: str) -> dict:
    """One measurement: the family, the plan, this hwcheck's error against the peak, its file."""
    return {
        "model_type": shape.model_type,
        "checkpointing": plan.checkpointing,
        "error": (_allocated(shape, plan) - peak) / peak,
        "source": str(path.relative_to(ROOT)),
        "date": date,
        "worst": f"{plan.policy}, batch {plan.batch} x {plan.seq_len}, {machine}",
    }


def _h100_peaks() -> list[dict]:
    """fit-peaks.json's rows: gpt2, Llama- and Mixtral-shaped, with and without checkpointing."""
    document = json.loads(H100_PEAKS.read_text())
    found = []
    for row in document["rows"]:
        if not row.get("max_memory_allocated"):
            continue  # a row whose run recorded no peak
        shape = from_config({**row["config"], "_attn_implementation": row["attn_implementation"]})
        if shape.parameters != row["params"]:
            continue  # not the model hwcheck lays out (BERT's rows trained BertForMaskedLM)
        plan = Plan(
            policy=_policy(row["precision"]),
            batch=row["batch"],
            seq_len=row["seq_len"],
            checkpointing=row["checkpointing"],
        )
        peak = row["max_memory_allocated"]
        found.append(_seen(shape, plan, peak, H100_PEAKS, document["date"][:10], document["gpu"]))
    return found


def _benchmark_configs() -> dict:
    """benchmarks/fit_measured.py's MODELS: the configs fit-measured-h100.md's runs were built from."""
    spec = importlib.util.spec_from_file_location("fit_measured", ROOT / "benchmarks" / "fit_measured.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


ROW = re.compile(
    r"\| (?P<model>\S+) \| (?P<precision>\S+) \| (?P<params>[\d.]+) M \(=\) \| (?P<batch>\d+) x "
    r"(?P<seq_len>\d+) \| (?P<peak>[\d.]+) \|"
)


def _h100_benchmark() -> list[dict]:
    """fit-measured-h100.md's rows: peaks in GiB (to 0.01) of the benchmark's five models."""
    configs = _benchmark_configs()
    text = H100_BENCHMARK.read_text()
    date = re.search(r"'date': '(\d{4}-\d{2}-\d{2})T", text)
    gpu = re.search(r"'gpu': '([^']+)'", text)
    assert date and gpu
    found = []
    for match in ROW.finditer(text):
        shape = from_config(configs[match["model"]])
        # The config the benchmark builds is the one measured: the counts agree to 0.1 M.
        assert f"{shape.parameters / 1e6:.1f}" == match["params"], match["model"]
        plan = Plan(policy=match["precision"], batch=int(match["batch"]), seq_len=int(match["seq_len"]))
        peak = round(float(match["peak"]) * GIB)
        found.append(_seen(shape, plan, peak, H100_BENCHMARK, date[1], gpu[1]))
    assert len(found) == 10
    return found


def _h200() -> list[dict]:
    """fit --measure on the H200: fit-MODEL-POLICY.json, the config tests/fixtures/models/MODEL.json."""
    found = []
    for path in sorted(H200.glob("fit-*-*.json")):
        document = json.loads(path.read_text())
        model = path.stem.removeprefix("fit-").rsplit("-", 1)[0]
        shape = from_config_file(FIXTURES / "models" / f"{model}.json")
        assert shape.parameters == document["parameters"], path.name
        given = document["plan"]
        assert (given["optimizer"], given["gpus"], given["zero"]) == ("adamw", 1, None), path.name
        plan = Plan(
            policy=given["policy"],
            batch=given["batch"],
            seq_len=given["seq_len"],
            checkpointing=given["checkpointing"],
        )
        measured = document["measured"]
        assert measured["how"] == "torch.cuda.max_memory_allocated()", path.name
        machine = document["device"].split(";")[0]
        found.append(_seen(shape, plan, measured["peak_bytes"], path, measured["measured_at"][:10], machine))
    assert len(found) == 6
    return found


def recomputed_rows() -> list[dict]:
    """The table's rows as this hwcheck's estimate and the measurement files give them: per
    family and checkpointing, the most negative error, where and when it was measured."""
    rows: dict[tuple[str, bool], dict] = {}
    for seen in _h100_peaks() + _h100_benchmark() + _h200():
        key = (seen["model_type"], seen["checkpointing"])
        row = rows.setdefault(key, {"model_type": key[0], "checkpointing": key[1], "measurements": 0})
        row["measurements"] += 1
        if "worst_error" not in row or seen["error"] < row["worst_error"]:
            row.update({key: seen[key] for key in ("source", "date", "worst")}, worst_error=seen["error"])
    return list(rows.values())


def test_the_table_is_what_the_measurement_files_give_with_this_estimate():
    table = {(row["model_type"], row["checkpointing"]): row for row in knowledge.load("fit_error")["family"]}
    recomputed = {(row["model_type"], row["checkpointing"]): row for row in recomputed_rows()}
    assert sorted(table) == sorted(recomputed)
    for key, row in recomputed.items():
        written = table[key]
        # The table keeps the error to 0.1 %; the recomputed one is exact.
        assert abs(written["worst_error"] - row["worst_error"]) <= 0.0005, (key, row["worst_error"])
        for field in ("measurements", "source", "date", "worst"):
            assert written[field] == row[field], (key, field, row[field])
        assert (ROOT / written["source"]).is_file()


def test_every_family_in_the_table_is_one_fit_lays_out():
    from hwcheck.recommendation.model_shape import MODEL_TYPES

    assert {row["model_type"] for row in knowledge.load("fit_error")["family"]} <= set(MODEL_TYPES)


def test_the_share_is_the_measured_error_s_never_above_the_study_s():
    # The estimate times (1 + the worst under-estimate) must fit the memory ...
    assert share_allowed(-0.5, 0.80) == pytest.approx(1 / 1.5)
    assert share_allowed(-0.25, 0.80) == pytest.approx(0.80)
    # ... and the study's 80 % stays the ceiling: a small error, or none under, allows no more.
    assert share_allowed(-0.06, 0.80) == 0.80
    assert share_allowed(0.062, 0.80) == 0.80


def test_a_measured_family_and_an_unmeasured_one_get_their_own_margins():
    measured = margin("gpt2", False)
    assert measured["measured"]["file"] == "docs/measurements/h100-2026-11-27/fit-measured-h100.md"
    assert measured["measured"]["share"] == pytest.approx(1 / 1.060, abs=1e-4)
    assert measured["safe_share"] == 0.80 and measured["source"] == "study"  # 94 % is above the ceiling
    for family, checkpointing in (("t5", True), ("gpt_neox", False), (None, False)):
        unmeasured = margin(family, checkpointing)
        assert unmeasured["measured"] is None and unmeasured["source"] == "study"
        assert unmeasured["safe_share"] == 0.80
        assert "2411.06465" in unmeasured["study"]["cited"]


def test_a_family_measured_further_under_gets_a_smaller_share_and_says_so(monkeypatch):
    """The rule with a family whose estimate fell 50 % under (no family measured so far has):
    the share is 1 / 1.5, the verdict tight where the study's 80 % would say yes, and the text
    names the measurement."""
    row = {**knowledge.fit_measured_error("t5", False), "worst_error": -0.5}
    monkeypatch.setattr(knowledge, "fit_measured_error", lambda family, checkpointing: row)
    shape = from_config_file(FIXTURES / "models" / "t5-small.json")
    plan = Plan(policy="mixed_bfloat16", batch=2, seq_len=128)
    parts = estimate(shape, plan, None)["per_device"]
    memory = int((parts["total"] - parts["fragmentation"]) / 0.75)  # the estimate is 75 %
    result = estimate(shape, plan, memory)
    assert result["margin"]["source"] == "measured"
    assert result["margin"]["safe_share"] == pytest.approx(1 / 1.5)
    assert result["verdict"] == "tight"
    said = margin_text(result["margin"])
    assert said.startswith("67% of the GPU's memory: the estimate for t5 was up to 50.0% under")
    assert "docs/measurements/h200-2026-11-28/fit-t5-small-float32.json" in said and "Fujii" in said
    monkeypatch.setattr(knowledge, "fit_measured_error", lambda family, checkpointing: None)
    assert estimate(shape, plan, memory)["verdict"] == "yes"  # the study alone: 75 % is within 80 %


def _fit(*args: str) -> tuple[dict, str]:
    common = ("--gpu-memory", "80", "--batch", "2", "--seq-len", "128")
    document = run_hwcheck("fit", *args, *common, "--json")
    text = run_hwcheck("fit", *args, *common)
    assert document.returncode == 0 and text.returncode == 0, document.stderr + text.stderr
    return json.loads(document.stdout), text.stdout


def _joined(text: str) -> str:
    """Wrapped lines joined again: each continuation's indent becomes the space it replaced."""
    return text.replace("\n  ", " ")


def test_the_margin_line_and_json_name_where_the_figure_came_from():
    document, text = _fit("--model", str(FIXTURES / "models" / "t5-small.json"))
    assert document["margin"]["family"] == "t5"
    t5_file = "docs/measurements/h200-2026-11-28/fit-t5-small-float32.json"
    assert document["margin"]["measured"]["file"] == t5_file
    margin_lines = _joined(text[text.index("\nmargin: ") + 1 :])
    assert t5_file in margin_lines
    assert "Fujii et al. 2024, arXiv 2411.06465" in margin_lines
    assert all(len(line) <= 80 for line in text[text.index("\nfits: ") :].splitlines())
    document, text = _fit("--model", str(FIXTURES / "models" / "t5-small.json"), "--checkpointing")
    assert document["margin"]["measured"] is None and document["margin"]["safe_share"] == 0.8
    assert "hwcheck has not measured the estimate for t5 with activation checkpointing" in _joined(text)
    assert "docs/measurements" not in text


def test_with_headroom_there_is_no_margin_and_params_keep_the_studys():
    document, text = _fit("--model", str(FIXTURES / "models" / "gpt2.json"), "--headroom", "10")
    assert document["margin"] is None and "margin:" not in text
    document, _ = _fit("--params", "1e9")
    assert document["margin"]["family"] is None and document["margin"]["safe_share"] == 0.8


def test_the_solved_batch_keeps_the_margin():
    shape = from_config_file(FIXTURES / "models" / "gpt2.json")
    plan = Plan(policy="mixed_bfloat16", seq_len=1024)
    from hwcheck.recommendation.fit import solve

    memory = 24 * GIB
    batch = solve(shape, plan, memory, "batch")
    assert batch is not None
    inside = estimate(shape, replace(plan, batch=batch), memory)
    beyond = estimate(shape, replace(plan, batch=batch + 1), memory)
    share = inside["margin"]["safe_share"]
    assert inside["per_device"]["total"] - inside["per_device"]["fragmentation"] <= share * memory
    assert beyond["verdict"] != "yes"


def main() -> int:
    """Print the table's rows as this hwcheck recomputes them, in the table's TOML."""
    for row in recomputed_rows():
        print("[[family]]")
        print(f'model_type = "{row["model_type"]}"')
        print(f"checkpointing = {str(row['checkpointing']).lower()}")
        print(f"worst_error = {row['worst_error']:.3f}")
        print(f"measurements = {row['measurements']}")
        print(f'source = "{row["source"]}"')
        print(f'date = "{row["date"]}"')
        print(f'worst = "{row["worst"]}"\n')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
