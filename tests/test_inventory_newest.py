"""`inventory --framework` advises again only the newest report of each node.

3,000 reports of three hosts (tests/inventory_helpers.py, real-machine profiles) used to be
advised again one by one (53 s against 0.6 s without --framework); the superseded ones are
now only listed, and the kept one per host is advised once.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from inventory_helpers import make_report

import hwcheck.inventory.merge as merge
from hwcheck.inventory.merge import Merger
from hwcheck.inventory.output import inventory_json

HOSTS = {"amx": "a100-sxm4x8-epyc", "v100": "v100-sxm2x8-broadwell", "h100": "h100x8-sapphirerapids"}
REPORTS = 3000
START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def reports() -> list[tuple[dict, str]]:
    # Oldest first: the order in which every report would once have been the newest so far.
    made = []
    for number in range(REPORTS):
        host = list(HOSTS)[number % 3]
        when = (START + timedelta(minutes=number)).isoformat()
        made.append((make_report(HOSTS[host], host, when), f"/reports/{number:04d}-{host}.json"))
    return made


def test_only_the_newest_report_of_each_host_is_advised_again(reports, monkeypatch):
    advised = []
    real = merge.readvised
    monkeypatch.setattr(
        merge, "readvised", lambda report, framework: advised.append(report) or real(report, framework)
    )
    merger = Merger(framework="torch")
    for report, source in reports:
        merger.add(report, source)
    inventory = merger.finish()
    assert len(advised) == 3
    assert sorted(report["time"] for report in advised) == [r["time"] for r, _ in reports[-3:]]
    assert inventory.reports_read == REPORTS and len(inventory.superseded) == REPORTS - 3
    assert {c.framework for c in inventory.classes} == {"torch"}
    kept = sorted(node.source for c in inventory.classes for node in c.nodes)
    assert kept == sorted(source for _, source in reports[-3:])


def test_the_newest_wins_in_any_order_and_answers_as_one_by_one_advice_did(reports):
    newest_last = Merger(framework="torch")
    for report, source in reports[-30:]:
        newest_last.add(report, source)
    newest_first = Merger(framework="torch")
    for report, source in reversed(reports[-30:]):
        newest_first.add(report, source)
    one_by_one = Merger()
    for report, source in reports[-3:]:
        one_by_one.add(merge.readvised(report, "torch"), source)
    documents = [json.loads(inventory_json(m.finish())) for m in (newest_last, newest_first, one_by_one)]
    for document in documents:
        document.pop("superseded")
        document["summary"].pop("superseded"), document["summary"].pop("reports_read")
    assert documents[0] == documents[1] == documents[2]


def test_three_thousand_reports_of_three_hosts_are_quick(reports):
    start = time.perf_counter()
    merger = Merger(framework="torch")
    for report, source in reports:
        merger.add(report, source)
    merger.finish()
    # Measured idle on a 2-core VM: 0.5 s; ten times that is allowed (it took 53 s advising each).
    assert time.perf_counter() - start < 5.0
