"""The remembered decision (engine/memo.py): used only for exactly the same inputs, never fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hwcheck.engine.evaluate
from conftest import FIXTURES, ROOT
from hwcheck.engine.context import build_context
from hwcheck.engine.memo import decide, decision_key
from hwcheck.engine.question import Question
from hwcheck.recommendation import recommend

A100 = FIXTURES / "facts/a100-sxm4x4-tf216.json"
SITE = '[[rule]]\nid = "site-note"\nseverity = "info"\nwhen = "gpu.count > 0"\nmessage = "{}"\n'


@pytest.fixture
def evaluations(monkeypatch):
    """How many times the rules were really evaluated (a remembered decision evaluates nothing)."""
    calls: list[int] = []
    real = hwcheck.engine.evaluate.evaluate

    def counted(ruleset, context):
        calls.append(1)
        return real(ruleset, context)

    monkeypatch.setattr(hwcheck.engine.evaluate, "evaluate", counted)
    return calls


def facts():
    return json.loads(A100.read_text())


def entries(cache):
    # The parsed-TOML entries share the directory; decision entries are the ones with a policy.
    found = []
    for path in cache.iterdir():
        document = json.loads(path.read_text())["document"]
        if "policy" in document:
            found.append(path)
    return found


def test_the_same_inputs_are_evaluated_once_and_give_the_same_recommendation(cache, evaluations):
    first = recommend(facts(), framework="torch", remember=True)
    again = recommend(facts(), framework="torch", remember=True)
    assert len(evaluations) == 1
    assert again.to_dict() == first.to_dict()
    assert [again.why_not(p) for p in ("float32", "mixed_float16")] == [
        first.why_not(p) for p in ("float32", "mixed_float16")
    ]
    assert len(entries(cache)) == 1


def test_a_remembered_decision_equals_a_fresh_one(cache, monkeypatch):
    recommend(facts(), remember=True)
    remembered = recommend(facts(), remember=True)
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    fresh = recommend(facts(), remember=True)
    assert remembered.to_dict() == fresh.to_dict()
    assert remembered._rejected == fresh._rejected


def test_other_facts_or_options_are_evaluated_again(cache, evaluations):
    recommend(facts(), remember=True)
    changed = facts()
    changed["gpus"][0]["memory_mib"] -= 1
    recommend(changed, remember=True)
    recommend(facts(), prefer="float16", remember=True)
    recommend(facts(), framework="jax", remember=True)
    assert len(evaluations) == 4


def test_a_site_rules_edit_that_keeps_size_and_time_is_seen(tmp_path, cache, evaluations):
    site = tmp_path / "site.toml"
    site.write_text(SITE.format("first"))
    before = os.stat(site)
    assert any(f.message == "first" for f in recommend(facts(), rule_files=[site], remember=True).findings)
    site.write_text(SITE.format("again"))
    os.utime(site, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert any(f.message == "again" for f in recommend(facts(), rule_files=[site], remember=True).findings)
    assert len(evaluations) == 2


def test_a_changed_engine_module_is_evaluated_again(cache, evaluations, monkeypatch):
    context = build_context(facts())
    key = decision_key(context)
    monkeypatch.setattr("hwcheck.engine.memo._code_stamp", lambda: "edited")
    assert decision_key(context) != key


@pytest.mark.parametrize(
    "damage",
    ["[]", "", "{", '{"key": "other"}', None],
)
def test_a_damaged_or_forged_entry_is_evaluated_again_and_rewritten(cache, evaluations, damage):
    first = recommend(facts(), remember=True)
    [entry] = entries(cache)
    if damage is None:  # a well-formed entry that says something else
        forged = json.loads(entry.read_text())
        forged["document"]["policy"] = "float32"
        forged["document"]["findings"] = [["forged", "error", "forged", None]]  # four fields: not a finding
        damage = json.dumps(forged)
    entry.write_text(damage)
    assert recommend(facts(), remember=True).to_dict() == first.to_dict()
    assert len(evaluations) == 2
    assert json.loads(entry.read_text())["document"]["policy"] == first.policy


def test_a_cache_others_can_write_is_not_trusted(cache, evaluations):
    first = recommend(facts(), remember=True)
    [entry] = entries(cache)
    forged = json.loads(entry.read_text())
    forged["document"]["reasons"] = [["forged", "forged"]]
    entry.write_text(json.dumps(forged))
    cache.chmod(0o777)
    assert recommend(facts(), remember=True).reasons == first.reasons
    assert len(evaluations) == 2


def test_an_unwritable_or_disabled_cache_still_recommends(tmp_path, monkeypatch, evaluations):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(blocker / "cache"))
    first = recommend(facts(), remember=True)
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    assert recommend(facts(), remember=True).to_dict() == first.to_dict()
    assert len(evaluations) == 2


def test_a_decision_with_a_rule_error_is_not_remembered(tmp_path, cache, evaluations):
    site = tmp_path / "site.toml"
    site.write_text(SITE.replace("gpu.count > 0", "cpu.model + 1 > 0").format("m"))
    for _ in range(2):
        found = recommend(facts(), rule_files=[site], remember=True).findings
        assert any(f.id == "rule-error" for f in found)
    assert len(evaluations) == 2
    assert not cache.exists() or entries(cache) == []


def test_a_context_json_cannot_write_exactly_is_not_remembered(cache, evaluations):
    context = build_context(facts())
    assert decision_key({**context, "odd": {1: "one"}}) is None
    assert decision_key({**context, "odd": float("nan")}) is None
    decide({**context, "odd": {1: "one"}})
    assert not cache.exists() or entries(cache) == []


def test_doctor_with_a_remembered_decision_loads_no_cel(cache):
    env = {**os.environ, "HWCHECK_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "hwcheck", "doctor", "--json", "--facts", str(A100)]
    cold = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    code = (
        "import sys, io, contextlib\n"
        "from hwcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    main(['doctor', '--json', '--facts', {str(A100)!r}])\n"
        "print(json.dumps({'out': out.getvalue(), 'cel': 'cel.cel' in sys.modules}))\n"
    )
    warm = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    result = json.loads(warm.stdout)
    assert not result["cel"]
    assert result["out"] == cold.stdout


def test_advice_for_many_machines_leaves_the_cache_alone(cache, evaluations):
    # recommend() without remember (inventory, the Python API over many facts files) stores
    # no decision, so the cache never grows with every machine seen.
    for framework in ("torch", "jax", "keras", "tensorflow"):
        recommend(facts(), framework=framework)
    assert len(evaluations) == 4
    assert not cache.exists() or entries(cache) == []


@pytest.fixture
def contexts(monkeypatch):
    """How many times a context was built from facts (remembered advice builds none)."""
    import hwcheck.engine.context

    calls: list[int] = []
    real = hwcheck.engine.context.build_context

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hwcheck.engine.context, "build_context", counted)
    return calls


def test_remembered_advice_builds_no_context(cache, contexts, evaluations):
    probes = {"gpu": {"status": "ok", "reason": None, "seconds": 0.01}}
    first = recommend(facts(), probes=probes, framework="torch", remember=True)
    probes["gpu"]["seconds"] = 0.5  # how long a probe took is no input of the advice
    again = recommend(facts(), probes=probes, framework="torch", remember=True)
    assert (len(contexts), len(evaluations)) == (1, 1)
    assert again.to_dict() == first.to_dict()
    assert again._rejected == first._rejected


def test_the_advice_is_named_by_the_probes_answers_and_the_options(cache):
    from hwcheck.engine.memo import advice_key

    answered = {"cuda": {"status": "ok", "reason": None, "seconds": 0.1}}
    key = advice_key(Question(facts(), answered))
    assert advice_key(Question(facts(), {"cuda": {**answered["cuda"], "seconds": 2.0}})) == key
    assert advice_key(Question(facts(), {"cuda": {**answered["cuda"], "reason": "no cuDNN found"}})) != key
    assert advice_key(Question(facts(), {"cuda": {**answered["cuda"], "status": "timeout"}})) != key
    assert advice_key(Question(facts(), answered, framework="jax")) != key
    assert advice_key(Question(facts(), answered, prefer="float16")) != key
    assert advice_key(Question(facts(), None)) != key


def test_the_advice_is_named_by_every_knowledge_table_and_the_code_that_reads_them(tmp_path, monkeypatch):
    import shutil

    import hwcheck.base.tables
    from hwcheck.engine import memo

    rules = tmp_path / "rules"
    shutil.copytree(hwcheck.base.tables.rules_dir(), rules)
    monkeypatch.setattr(hwcheck.base.tables, "rules_folder", lambda: str(rules))
    key = memo.advice_key(Question(facts()))
    table = rules / "knowledge" / "nvidia.toml"
    text = table.read_text()
    table.write_text(text.replace("Tesla", "Tesle", 1))  # the same size: read by its bytes while it is new
    assert memo.advice_key(Question(facts())) != key
    table.write_text(text)
    assert memo.advice_key(Question(facts())) == key
    monkeypatch.setattr(memo, "_code_stamp", lambda directories=memo.CODE_DIRS: f"edited {directories}")
    assert memo.advice_key(Question(facts())) != key


def test_the_hosts_free_memory_is_no_input_of_the_advice(cache):
    # The memory probe reads MemAvailable, which differs on every run; the rules never read it.
    from hwcheck.engine.memo import UNREAD_FACTS, advice_key

    assert UNREAD_FACTS == ("memory",)
    one = {**facts(), "memory": {"total_bytes": 2**36, "available_bytes": 2**35, "cgroup": {"version": 2}}}
    other = {**facts(), "memory": {"total_bytes": 2**36, "available_bytes": 2**33}}
    assert advice_key(Question(one)) == advice_key(Question(other)) == advice_key(Question(facts()))
    for framework in ("torch", "jax", "tensorflow"):
        contexts = [build_context(each, framework=framework) for each in (one, other, facts())]
        assert contexts[0] == contexts[1] == contexts[2]


def test_a_second_doctor_on_this_machine_builds_no_context(cache):
    # Live probes: whatever this host is, the second run's advice comes from the cache unless an
    # unknown fact makes it evaluate other worlds (never remembered).
    env = {**os.environ, "HWCHECK_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    code = (
        "import sys, io, contextlib, json\n"
        "from hwcheck.cli import main\n"
        "from hwcheck import probe\n"
        "from hwcheck.engine.unknowns import has_unknowns\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['doctor', '--json'])\n"
        "print(json.dumps({'context': 'hwcheck.engine.context' in sys.modules,\n"
        "                  'unknowns': has_unknowns(probe(), None)}))\n"
    )
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0]["context"]
    assert runs[1]["context"] is runs[1]["unknowns"]
