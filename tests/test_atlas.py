"""The atlas (rules/atlas/*.toml): every field checked as it is read, and every class held to its
cases: its rule fires on the failing replay and raises no error on the healthy twin."""

from __future__ import annotations

import pytest
from corpus.score import advise, load_cases

from hwcheck.base.errors import InputError
from hwcheck.knowledge.atlas import atlas_files, load_atlas

ATLAS = load_atlas()
CASES = {case.name: case for case in load_cases()}

GOOD = """
[meta]
title = "t"
sampling = "s"

[[class]]
id = "shm-small-x"
title = "x"
trackers = ["pytorch/pytorch"]
threads = ["https://github.com/pytorch/pytorch/issues/5040"]
opened = "2018-02-02"
facts = ["node.shm.size_bytes"]
rules = ["node-shm-small"]
check = "df -h /dev/shm"
signatures = ["Bus error \\\\(core dumped\\\\)"]
frameworks = ["torch"]
cases = ["a", "b"]
"""


def test_the_shipped_atlas_loads_with_unique_ids():
    assert atlas_files() and ATLAS.classes
    ids = [atlas_class.id for atlas_class in ATLAS.classes]
    assert len(ids) == len(set(ids))
    corpus = [c for c in ATLAS.classes if c.in_corpus_before]
    assert len(corpus) >= 25 and ATLAS.signature_count >= 40


@pytest.mark.parametrize("atlas_class", ATLAS.classes, ids=[c.id for c in ATLAS.classes])
def test_class_rule_fires_on_its_failing_case_and_not_on_its_healthy_twin(atlas_class, monkeypatch):
    monkeypatch.delenv("HWCHECK_RULES", raising=False)
    missing = [name for name in atlas_class.cases if name not in CASES]
    assert not missing, f"{atlas_class.id}: no corpus case {missing}"
    cases = [CASES[name] for name in atlas_class.cases]
    failing = [case for case in cases if not case.healthy]
    healthy = [case for case in cases if case.healthy]
    assert failing and healthy, f"{atlas_class.id} needs a failing case and a healthy twin"
    for case in failing:
        fired = {f.id for f in advise(case).findings if f.severity in ("error", "warning")}
        assert fired & set(atlas_class.rules), (
            f"{atlas_class.id}: no rule of {atlas_class.rules} on {case.name}"
        )
    for case in healthy:
        errors = {f.id for f in advise(case).findings if f.severity == "error"}
        assert not errors & set(atlas_class.rules), f"{atlas_class.id}: false alarm on {case.name}"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (('id = "shm-small-x"', 'id = "Shm Small"'), "without a kebab-case id"),
        (
            ('rules = ["node-shm-small"]', 'rules = ["no-such-rule"]'),
            "class shm-small-x: rule 'no-such-rule' is not",
        ),
        (('signatures = ["Bus error', 'signatures = ["(Bus error'), "class shm-small-x: signature"),
        (('signatures = ["Bus error', 'signatures = [".*", "Bus error'), "matches an empty text"),
        (("https://github.com/pytorch/pytorch/issues/5040", "http://example.com/x"), "is not an https URL"),
        (('opened = "2018-02-02"', 'opened = "Feb 2018"'), "opened must be YYYY-MM-DD"),
        (('check = "df -h /dev/shm"', ""), "check must be a non-empty string"),
        (('cases = ["a", "b"]', 'cases = ["a", "b"]\ncolour = "red"'), "unexpected field 'colour'"),
        (('facts = ["node.shm.size_bytes"]', "facts = []"), "facts must be a non-empty list"),
        (('trackers = ["pytorch/pytorch"]', 'trackers = ["pytorch"]'), "is not owner/repo"),
    ],
)
def test_a_bad_field_is_one_line_naming_the_file_and_class(tmp_path, change, problem):
    assert change[0] in GOOD
    (tmp_path / "group.toml").write_text(GOOD.replace(*change))
    with pytest.raises(InputError) as raised:
        load_atlas(str(tmp_path))
    message = str(raised.value)
    assert "group.toml" in message and problem in message and "\n" not in message


def test_a_good_file_loads_and_an_id_used_twice_is_refused(tmp_path):
    (tmp_path / "a.toml").write_text(GOOD)
    [atlas_class] = load_atlas(str(tmp_path)).classes
    assert atlas_class.group == "a" and not atlas_class.in_corpus_before
    (tmp_path / "b.toml").write_text(GOOD)
    with pytest.raises(InputError, match=r"b\.toml: class shm-small-x: id already used in a\.toml"):
        load_atlas(str(tmp_path))


def test_unpredictable_threads_are_checked(tmp_path):
    entry = (
        '\n[[unpredictable]]\nthread = "https://github.com/x/y/issues/1"\ntracker = "x/y"\n'
        'opened = "2025-01-02"\n'
    )
    (tmp_path / "a.toml").write_text(GOOD + entry + 'why = "a kernel bug"\n')
    assert load_atlas(str(tmp_path)).unpredictable[0].why == "a kernel bug"
    (tmp_path / "a.toml").write_text(GOOD + entry)
    with pytest.raises(InputError, match="unpredictable https://github.com/x/y/issues/1: why must be"):
        load_atlas(str(tmp_path))
