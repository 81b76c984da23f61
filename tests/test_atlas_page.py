"""docs/atlas.md is what benchmarks/atlas_page.py generates, and the generalization sample is the
one its stated method draws."""

from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT


def _module(name: str):
    sys.path[:0] = [str(ROOT / "benchmarks")]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_atlas_page_is_what_the_script_generates():
    page = _module("atlas_page")
    assert page.PAGE.read_text(encoding="utf-8") == page.render(), (
        "docs/atlas.md is stale: python benchmarks/atlas_page.py --write"
    )


def test_the_generalization_sample_is_the_drawn_one_and_the_figure_holds():
    harness = _module("atlas_generalization")
    document = harness.load_sample()
    assert len(document["issue"]) >= 20
    judged = harness.judge_all(document)
    figures = harness.figures(judged)
    assert figures["sampled"] == len(judged) and figures["predictable"] >= 1
    # Every predictable issue's facts replay through doctor; the figure counts what it says.
    assert figures["caught"] + figures["flagged"] + figures["missed"] == figures["predictable"]
