"""A vendor in one room: a made-up vendor's plug-in, registered from the tests folder, reaches
doctor, fit, nfd and inventory with no change anywhere in hwcheck/.

Acme is made up (tests/acme_vendor.py, its knowledge table tests/fixtures/acme/acme.toml, a
node of four of its chips in tests/fixtures/acme/facts.json): there is no real device to
record, which is the point. The commands run in this process, where the plug-in is registered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import acme_vendor
import pytest

from conftest import FIXTURES
from hwcheck import devices
from hwcheck.cli import main

FACTS = FIXTURES / "acme" / "facts.json"


@pytest.fixture
def acme() -> Iterator[None]:
    devices.register(acme_vendor.PLUGIN)
    try:
        yield
    finally:
        devices.unregister("acme")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(list(args))
    return status, capsys.readouterr().out


def test_registering_adds_the_vendor_and_unregistering_removes_it(acme: None) -> None:
    found = devices.visible(json.loads(FACTS.read_text(encoding="utf-8")))
    assert [(d.vendor, d.name, d.memory_bytes, d.bfloat16) for d in found] == [
        ("acme", "Acme Tensor X1", 64 * 2**30, True)
    ] * 4
    devices.unregister("acme")
    assert devices.visible(json.loads(FACTS.read_text(encoding="utf-8"))) == []


def test_the_engine_builds_the_vendor_namespace(acme: None) -> None:
    from hwcheck.engine import build_context

    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    assert build_context(facts)["acme"] == {"count": 4, "bf16": True}
    facts["environment"] = {"ACME_VISIBLE_DEVICES": "0,2"}
    assert build_context(facts)["acme"]["count"] == 2


def test_the_vendors_gpus_count_among_every_vendors(acme: None) -> None:
    from hwcheck.engine import build_context

    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    gpus = build_context(facts)["gpus"]
    assert (gpus["count"], gpus["vendors"], gpus["memory_mib_min"], gpus["all_bf16"]) == (
        4,
        ["acme"],
        64 * 1024,
        True,
    )
    facts["environment"] = {"ACME_VISIBLE_DEVICES": "0,2"}
    assert build_context(facts)["gpus"]["count"] == 2
    devices.unregister("acme")
    assert build_context(facts)["gpus"]["count"] == 0


def test_doctor_lists_the_vendors_devices(acme: None, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "doctor", "--facts", str(FACTS))
    assert status == 0
    (row,) = [line for line in out.splitlines() if re.match(r"\W*acme\b", line.strip(" ✓"))]
    assert "4x Acme Tensor X1 (acme1), 64 GiB each" in row


def test_doctor_without_the_plugin_has_no_such_row(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "doctor", "--facts", str(FACTS))
    assert status == 0
    assert "Acme" not in out


def test_fit_plans_for_the_vendors_devices(acme: None, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "fit", "--params", "7e9", "--facts", str(FACTS), "--json")
    assert status == 0
    document = json.loads(out)
    assert (document["plan"]["gpus"], document["device_memory"]) == (4, 64 * 2**30)
    assert document["device"] == "Acme Tensor X1; 4 visible to this process"


def test_nfd_labels_the_vendors_devices(acme: None, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "nfd", "--facts", str(FACTS), "-o", "-")
    assert status == 0
    prefix = "feature.node.kubernetes.io/hwcheck-"
    labels = dict(
        line.removeprefix(prefix).split("=", 1) for line in out.splitlines() if line.startswith(prefix)
    )
    assert {key: labels[key] for key in labels if key.startswith("gpu.")} == {
        "gpu.count": "4",
        "gpu.product": "Acme-Tensor-X1",
        "gpu.memory": "65536",
        "gpu.family": "roadrunner",
        "gpu.bf16": "true",  # what the plug-in's devices say they run
        "gpu.fp8": "false",
    }


def test_inventory_classes_the_vendors_devices(
    acme: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "node.json"
    assert run(capsys, "report", "--facts", str(FACTS), "-o", str(report))[0] == 0
    status, out = run(capsys, "inventory", str(report), "--json")
    assert status == 0
    (hardware,) = json.loads(out)["classes"]
    assert "4× Acme Tensor X1 (acme1)" in json.dumps(hardware, ensure_ascii=False)


def test_remembered_advice_is_not_shared_with_a_registered_vendor() -> None:
    from hwcheck.engine.memo import advice_key
    from hwcheck.engine.question import Question

    question = Question(json.loads(FACTS.read_text(encoding="utf-8")))
    without = advice_key(question)
    devices.register(acme_vendor.PLUGIN)
    try:
        assert advice_key(question) != without
    finally:
        devices.unregister("acme")
    assert advice_key(question) == without
