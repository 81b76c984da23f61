"""What Ray hands back is checked like a report file before anything reads it (no Ray needed here).

`ray.nodes()` and each probe task's answer arrive unpickled from other machines: any Python
value, of any size. Each bad one is that node's rejection with a short reason, and the good
nodes are still merged.
"""

from __future__ import annotations

import pytest
from inventory_helpers import make_report

from hwcheck.base.errors import InputError
from hwcheck.inventory import ray_collect
from hwcheck.inventory.merge import Merger

NODE_ID = "a3f5" * 14  # Ray's node ids are 28 bytes in hex
NODE = {"NodeID": NODE_ID, "NodeManagerAddress": "10.0.0.7", "Alive": True}


def _report() -> dict:
    return make_report("a100-sxm4x8-epyc", "node-7")


@pytest.mark.parametrize(
    "answer",
    [
        "a report",
        b'{"node_id": "x"}',
        {NODE_ID, "report"},
        ["node_id", NODE_ID],
        {"node_id": 10**5000, "report": {}},
        {"node_id": NODE_ID, "report": {"facts": {"cpu": {"flags": {"avx", "fma"}}}}},
        {"node_id": NODE_ID, "report": {"facts": b"\xff" * 64}},
        {"node_id": NODE_ID, "report": {"schema_version": 10**5000, "facts": {}}},
        {"node_id": NODE_ID, "report": {"schema_version": float("nan"), "facts": {}}},
        {"node_id": "x" * 5_000_000, "report": {}},
    ],
    ids=[
        "str",
        "bytes",
        "set",
        "list",
        "huge-id",
        "set-inside",
        "bytes-inside",
        "huge-version",
        "nan",
        "long-id",
    ],
)
def test_an_answer_that_is_no_report_is_that_nodes_short_rejection(answer):
    merger = Merger()
    ray_collect._add_answer(merger, NODE, answer)
    [rejected] = merger.rejected
    assert NODE_ID in rejected.source
    assert len(rejected.reason) <= ray_collect.MAX_REASON and rejected.reason.isprintable()


def test_a_deeply_nested_report_is_a_rejection():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    merger = Merger()
    ray_collect._add_answer(merger, NODE, {"node_id": NODE_ID, "report": {"facts": {"x": deep}}})
    assert len(merger.rejected) == 1 and len(merger.rejected[0].reason) <= ray_collect.MAX_REASON


def test_a_good_answer_is_merged():
    merger = Merger()
    ray_collect._add_answer(merger, NODE, {"node_id": NODE_ID, "report": _report()})
    assert merger.rejected == [] and merger.reports_read == 1


def test_nodes_ray_lists_badly_are_rejected_and_the_rest_kept():
    good = {"NodeID": "0" * 56, "NodeManagerAddress": "10.0.0.8", "Alive": True}
    nodes = [
        NODE,
        "a node",
        {"NodeID": 10**5000, "Alive": True},
        {"NodeID": ("f" * 56,), "Alive": True},
        {"NodeID": "1" * 56, "NodeManagerAddress": "a" * 100_000, "Alive": True},
        {"NodeID": "2" * 56, "NodeManagerAddress": "host\n\x1b[2J", "Alive": True},
        {"NodeID": "3" * 56, "Alive": False},
        good,
    ]
    merger = Merger()
    alive = ray_collect._alive_nodes(merger, nodes)
    assert alive == [good, NODE]  # sorted by id
    assert len(merger.rejected) == 5
    assert all(len(r.reason) < 200 and r.reason.isprintable() for r in merger.rejected)
    assert ray_collect._alive_nodes(Merger(), {"not": "a list"}) == []


class _RayTaskError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__("task failed")
        self.cause = cause


@pytest.mark.parametrize(
    "error",
    [
        _RayTaskError(RuntimeError("Traceback ...\n" + "x" * 5_000_000)),
        _RayTaskError(ModuleNotFoundError("No module named " + "h" * 5_000_000)),
        RuntimeError("y" * 5_000_000 + "\n"),
        _RayTaskError(RuntimeError("\x1b]0;title\x07 bell")),
    ],
    ids=["cause", "module", "plain", "control"],
)
def test_a_failed_tasks_reason_is_one_short_line(error):
    reason = ray_collect._task_failure(error)
    assert len(reason) <= ray_collect.MAX_REASON and reason.isprintable()


def test_a_host_label_too_long_for_idna_is_a_clear_error():
    with pytest.raises(InputError, match="not a valid DNS name"):
        ray_collect._check_reachable("ray://" + "a" * 70 + ".example:6379")
