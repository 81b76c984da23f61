"""Intel GPUs named as Windows and the drivers name them match their rows of rules/knowledge/intel.toml.

Windows names the Lunar Lake GPU "Intel(R) Arc(TM) 140V GPU (16GB)" (the public corpus case
healthy-arc-130v-windows-torch27-xpu and a heretic-llm setup note record 130V and 140V), where
pci.ids says "Intel Arc 130V/140V (Core Ultra 200V)".
"""

from __future__ import annotations

import pytest

from hwcheck.knowledge.intel import intel_family_by_name


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("Intel(R) Arc(TM) 140V GPU", "lunar-lake"),
        ("Intel(R) Arc(TM) 140V GPU (16GB)", "lunar-lake"),
        ("Intel(R) Arc(TM) 130V GPU (8GB)", "lunar-lake"),
        ("Intel ARC(TM) 140v GPU", "lunar-lake"),
        ("Intel Arc 130V/140V (Core Ultra 200V)", "lunar-lake"),
        ("Intel(R) Arc(TM) A770 Graphics", "alchemist"),
        ("Intel Arc Graphics (Meteor Lake)", "meteor-lake"),
    ],
)
def test_names_as_windows_prints_them_match_their_row(name, family):
    row = intel_family_by_name(name)
    assert row is not None and row["name"] == family


@pytest.mark.parametrize(
    "name",
    [
        "Intel(R) Arc(TM) Graphics",  # Meteor Lake and Arrow Lake alike: the name alone cannot say
        "Intel(R) Arc(TM) 150V GPU",
        "Intel(R) Arc(TM) 140",
    ],
)
def test_a_name_that_does_not_say_which_row_matches_none(name):
    assert intel_family_by_name(name) is None
