"""The commands a newcomer tries first work as the README shows them: `-o` into folders that do not
exist yet (the safe writer still refuses what it refuses). Machines are replayed from
tests/fixtures/facts/h100-anchor-torch211.json (shared/anchors/h100.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwcheck.cli import main

H100 = str(Path(__file__).parent / "fixtures" / "facts" / "h100-anchor-torch211.json")


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["report", "--facts", H100], "reports/node17.json"),
        (["config", "--framework", "torch", "--facts", H100], "configs/run1/train.py"),
        (["nfd", "--facts", H100], "features.d/deep/hwcheck"),
    ],
)
def test_output_into_missing_folders_creates_them(tmp_path, capsys, command, name):
    target = tmp_path / name
    assert main([*command, "-o", str(target)]) == 0
    assert target.is_file() and target.stat().st_size > 0
    if name.endswith(".json"):
        assert json.loads(target.read_text())["facts"]


def test_inventory_html_into_a_missing_folder(tmp_path, capsys):
    report = tmp_path / "node.json"
    assert main(["report", "--facts", H100, "-o", str(report)]) == 0
    page = tmp_path / "site" / "inventory" / "index.html"
    assert main(["inventory", str(report), "--html", str(page)]) == 0
    assert "<html" in page.read_text().lower()


def test_the_safe_writer_still_refuses_what_it_refuses(tmp_path, capsys):
    existing = tmp_path / "configs" / "train.py"
    config = ["config", "--framework", "torch", "--facts", H100, "-o", str(existing)]
    assert main(config) == 0
    capsys.readouterr()
    assert main(config) == 2
    assert "already exists; --force replaces it" in capsys.readouterr().err
    (tmp_path / "plain").write_text("a file where a folder would be")
    assert main(["report", "--facts", H100, "-o", str(tmp_path / "plain" / "node.json")]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and len(err.strip().splitlines()) == 1


def _not_importable(tmp_path: Path, *, probed: bool) -> str:
    # cpu-amx-torch213-verified.json's machine, its verifying child recorded as it records a
    # torch that cannot be imported (ModuleNotFoundError, the text of a run without torch).
    source = Path(__file__).parent / "fixtures" / "facts" / "cpu-amx-torch213-verified.json"
    facts = json.loads(source.read_text())
    facts["verified"].update(
        outcome="error",
        error="ModuleNotFoundError: No module named 'torch'",
        devices=[],
        version=None,
        file=None,
    )
    facts["verified"]["requested"]["policy"] = "float32"
    if not probed:
        facts["frameworks"] = {}
        facts["verified"].pop("installed", None)
    path = tmp_path / "verified.json"
    path.write_text(json.dumps(facts))
    return str(path)


@pytest.mark.parametrize("probed", [True, False])
def test_verify_without_the_framework_says_so_and_gives_the_install_line(tmp_path, capsys, probed):
    status = main(
        ["doctor", "--facts", _not_importable(tmp_path, probed=probed), "--framework", "torch", "--json"]
    )
    findings = {f["id"]: f for f in json.loads(capsys.readouterr().out)["recommendation"]["findings"]}
    assert "verify-step-failed" not in findings and status == 0
    said = findings["verify-framework-not-installed" if probed else "framework-not-installed"]
    assert "not installed" in said["message"]
    assert said["remedy"] == "pip install torch --index-url https://download.pytorch.org/whl/cpu"


@pytest.mark.parametrize("endpoint", ["refused", "unresolvable"])
def test_a_model_id_offline_answers_within_3_seconds(tmp_path, monkeypatch, capsys, endpoint):
    pytest.importorskip("huggingface_hub")
    import socket
    import time

    import huggingface_hub.constants as constants

    from hwcheck.recommendation import model_source

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    if endpoint == "refused":
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: the connection is refused
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
    else:
        monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")  # RFC 2606: never resolves
    started = time.monotonic()
    with pytest.raises(model_source.InputError, match="the Hub could not be reached"):
        model_source.config_path("gpt2")
    assert time.monotonic() - started < 3.0


def test_hf_hub_offline_is_honoured_without_a_connection(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    import huggingface_hub.constants as constants

    from hwcheck.recommendation import model_source

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(model_source, "_hub_reachable", lambda: pytest.fail("connected while offline"))
    with pytest.raises(model_source.InputError, match="HF_HUB_OFFLINE is set"):
        model_source.config_path("gpt2")
