"""The public API checks its `facts` argument one way everywhere (hwcheck._checked_facts).

recommend_policy, precision, training_arguments, accelerate_mixed_precision, deepspeed_config
and bench take the same facts: a path or a list is a FactsError (a ValueError) saying what
was expected, never an AttributeError; a document recommend_policy refuses is refused by
every one-line helper too, never answered "32-true".
"""

from __future__ import annotations

import copy
import json

import pytest

import hwcheck
from conftest import FIXTURES
from hwcheck.base.errors import FactsError

H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"
CALLS = {
    "recommend_policy": lambda facts: hwcheck.recommend_policy(facts, framework="lightning"),
    "precision": lambda facts: hwcheck.precision("lightning", facts),
    "training_arguments": hwcheck.training_arguments,
    "accelerate_mixed_precision": hwcheck.accelerate_mixed_precision,
    "deepspeed_config": hwcheck.deepspeed_config,
}


def _facts() -> dict:
    return json.loads(H100.read_text(encoding="utf-8"))


@pytest.mark.parametrize("call", CALLS, ids=list(CALLS))
@pytest.mark.parametrize(
    ("facts", "said"),
    [
        (str(H100), "expected a facts dict, not str (for a facts file, pass hwcheck.facts.load_facts(path))"),
        (H100, "expected a facts dict, not PosixPath (for a facts file"),
        ([], "expected a facts dict, not list"),
        (3, "expected a facts dict, not int"),
    ],
    ids=["path-text", "path", "list", "number"],
)
def test_a_facts_argument_that_is_not_a_dict_is_a_clear_error(call, facts, said):
    with pytest.raises(FactsError) as error:
        CALLS[call](facts)
    assert said.replace("PosixPath", type(H100).__name__) in str(error.value)
    assert isinstance(error.value, ValueError)


BROKEN = [
    (lambda facts: facts["gpus"][0].update(memory_mib=-5), "gpus[0].memory_mib"),
    (lambda facts: facts.update(schema_version=2), "schema_version 2 is not supported"),
    (lambda facts: facts["gpus"][0].update(compute_capability=9), "gpus[0].compute_capability"),
    (lambda facts: facts["gpus"][0].update(memory_mib=2**63), "an integer beyond 64 bits"),
    # A dict given as objects can contain itself: a clear ValueError, not memory run out.
    (lambda facts: facts.update(itself=facts), "itself: contains itself (a cycle)"),
    (lambda facts: facts["gpus"][0].update(up=facts), "gpus[0].up: contains itself"),
    (lambda facts: facts["gpus"].append([facts["gpus"]]), "gpus[1][0]: contains itself"),
]


@pytest.mark.parametrize("call", CALLS, ids=list(CALLS))
@pytest.mark.parametrize(
    ("breaks", "said"), BROKEN, ids=["negative", "version", "type", "wide", "self", "self-gpu", "self-list"]
)
def test_a_document_recommend_policy_refuses_is_refused_by_every_helper(call, breaks, said):
    facts = _facts()
    breaks(facts)
    with pytest.raises(FactsError, match="^facts: ") as error:
        CALLS[call](facts)
    assert said in str(error.value)


def test_a_valid_document_is_answered_as_before():
    facts = _facts()
    kept = copy.deepcopy(facts)
    assert (
        hwcheck.precision("lightning", facts) == hwcheck.recommend_policy(facts, framework="lightning").native
    )
    assert hwcheck.accelerate_mixed_precision(facts) in ("bf16", "fp16", "no")
    assert facts == kept


def test_bench_checks_a_facts_dict_the_same_way():
    facts = _facts()
    facts["gpus"][0]["memory_mib"] = -5
    with pytest.raises(FactsError, match="gpus\\[0\\].memory_mib"):
        hwcheck.bench(facts=facts)


def test_a_document_sharing_its_parts_is_walked_once_each():
    # 2**200 paths lead through 200 shared lists: walking each once keeps the check linear.
    facts = _facts()
    shared: list = []
    for _ in range(200):
        shared = [shared, shared]
    facts["shared"] = shared
    assert hwcheck.recommend_policy(facts, framework="lightning").policy
