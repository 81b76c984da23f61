"""`hwcheck explain`: error messages from tracker threads name their atlas class, confirmed on the
replayed failing machine and not confirmed on its healthy twin (tests/explain_messages.toml)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
import tomllib

import pytest

from conftest import ROOT
from hwcheck.cli import main
from hwcheck.commands.explain import CONFIRMED, RULED_OUT, UNKNOWN, check_causes, match, render
from hwcheck.knowledge.atlas import load_atlas

CASES = ROOT / "tests" / "corpus" / "cases"
MESSAGES = tomllib.loads((ROOT / "tests" / "explain_messages.toml").read_text())["message"]
ATLAS = load_atlas()
# The bound is a second per message; a test bound is 10x looser than the idle figure.
SECONDS_PER_MESSAGE = 10.0


def _args(case: str) -> argparse.Namespace:
    return argparse.Namespace(
        facts=str(CASES / f"{case}.json"), cpuinfo=None, rules=[], prefer=None, timeout=5.0, framework=None
    )


def _cause(message: dict, case: str):
    matched = match(ATLAS, message["text"])
    causes = check_causes(_args(case), matched)
    return next(cause for cause in causes if cause.atlas_class.id == message["class"])


def test_at_least_forty_distinct_messages_from_threads():
    texts = {message["text"] for message in MESSAGES}
    assert len(texts) == len(MESSAGES) >= 40
    assert all(message["thread"].startswith("https://github.com/") for message in MESSAGES)
    assert {message["class"] for message in MESSAGES} <= {c.id for c in ATLAS.classes}


@pytest.mark.parametrize("message", MESSAGES, ids=[f"{m['class']}-{i}" for i, m in enumerate(MESSAGES)])
def test_message_names_its_class_and_is_checked_on_the_machine(message, monkeypatch):
    monkeypatch.delenv("HWCHECK_RULES", raising=False)
    started = time.monotonic()
    assert message["class"] in [atlas_class.id for atlas_class, _ in match(ATLAS, message["text"])]
    failing = _cause(message, message["failing"])
    assert failing.status == CONFIRMED, (message["failing"], failing.facts)
    assert failing.finding and failing.quote
    healthy = _cause(message, message["healthy"])
    assert healthy.status in (RULED_OUT, UNKNOWN), (message["healthy"], healthy.finding)
    if healthy.status == RULED_OUT:
        assert healthy.facts and all(fact.state != "unknown" for fact in healthy.facts.values())
    else:
        assert healthy.finding or any(fact.state == "unknown" for fact in healthy.facts.values())
    assert time.monotonic() - started < 2 * SECONDS_PER_MESSAGE
    monkeypatch.setenv("COLUMNS", "80")
    lines = render(ATLAS, [failing, healthy])
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]


def test_cli_confirms_an_error_with_exit_1_within_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    facts = str(CASES / "tf213-rtx4090-only-cuda124.json")
    text = "Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above "
    text += "are installed properly"
    assert main(["explain", "--facts", facts, text]) == 1
    out = capsys.readouterr().out
    assert "CONFIRMED: TensorFlow built for one CUDA major" in out
    assert "remedy:" in out and "seen in: https://github.com/" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_cli_rules_out_with_the_fact_and_exits_0(capsys):
    facts = str(CASES / "healthy-8xh100-torchtitan-shm-1g.json")
    assert main(["explain", "--facts", facts, "Bus error (core dumped)"]) == 0
    out = capsys.readouterr().out
    assert "RULED OUT: /dev/shm too small" in out
    assert "node.shm.size_bytes = 1073741824" in out


def test_cli_unknown_names_the_command_that_settles_it(capsys):
    facts = str(CASES / "healthy-tf212-rtx4090-cuda118-build.json")
    assert main(["explain", "--facts", facts, "Could not find cuda drivers on your machine"]) == 0
    out = capsys.readouterr().out
    assert "UNKNOWN:" in out and "settle with:" in out


def test_json_lists_causes_and_what_was_checked(capsys):
    facts = str(CASES / "shm-16m-8xh100-torchtitan-nccl.json")
    assert main(["explain", "--json", "--report", facts, "Bus error (core dumped)"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["checked"]["classes"] == len(ATLAS.classes)
    assert document["checked"]["signatures"] == ATLAS.signature_count
    [cause] = document["causes"]
    assert cause["class"] == "shm-too-small" and cause["status"] == CONFIRMED
    assert cause["severity"] == "warning" and cause["facts"]["node.shm.size_bytes"] == {
        "state": "known",
        "value": 16 * 1024 * 1024,
    }


def test_a_message_that_matches_nothing_says_what_was_checked(capsys):
    facts = str(CASES / "healthy-8xh100-torchtitan-shm-1g.json")
    assert main(["explain", "--facts", facts, "ValueError: shapes (3,) and (4,) not aligned"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"none of the {len(ATLAS.classes)} known causes, {ATLAS.signature_count} error messages" in out


def test_reads_the_end_of_a_long_log_file(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(
        "step ok\n" * 700_000 + "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
    )
    assert log.stat().st_size > 4 * 1024 * 1024
    facts = str(CASES / "flash-attn260-v100s-minference.json")
    assert main(["explain", "--facts", facts, str(log)]) == 0  # a warning: degraded, not failed
    assert "CONFIRMED (warning): FlashAttention 2" in capsys.readouterr().out


def test_reads_standard_input_and_strips_colour(monkeypatch, capsys):
    text = "\x1b[31mAssertionError: libcuda.so cannot found!\x1b[0m\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    facts = str(CASES / "torch-compile-libcuda-colab-t4.json")
    assert main(["explain", "--facts", facts, "-"]) == 0
    out = capsys.readouterr().out
    assert "torch-compile-no-libcuda" in out and "\x1b" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "--facts", "/nonexistent.json", "Bus error (core dumped)"],
        ["explain", "--facts", "a.json", "--report", "b.json", "Bus error"],
        ["explain", "   "],
    ],
    ids=["missing-facts", "facts-and-report", "empty"],
)
def test_bad_input_is_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("hwcheck: error: ") and len(err.strip().splitlines()) == 1


def test_live_explain_never_imports_a_framework():
    # Probing this machine as doctor does: no TensorFlow, PyTorch or JAX import.
    code = (
        "import sys; from hwcheck.cli import main; main(['explain', 'Bus error (core dumped)']); "
        "print(sorted(m for m in ('torch', 'tensorflow', 'jax') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert "shm-too-small" in result.stdout


def test_deciding_facts_are_known_absent_or_unknown():
    from hwcheck.commands.explain import _no_gpu_found, fact_value

    facts = {"gpus": [{"compute_capability": "8.6"}, {"name": "x"}], "frameworks": {"torch": {"cuda": None}}}
    assert fact_value(facts, "gpus[].compute_capability") == ("known", ["8.6"])
    assert fact_value({"gpus": []}, "gpus[].compute_capability").state == "absent"
    assert fact_value({}, "gpus[].compute_capability").state == "unknown"
    assert fact_value(facts, "frameworks.torch.cuda").state == "absent"  # null: looked for, not there
    assert fact_value(facts, "frameworks.torch.version").state == "unknown"  # key missing
    assert fact_value(facts, "frameworks.jax.jaxlib").state == "unknown"  # section missing
    absent = {"status": "absent", "reason": "none", "seconds": 0.0}
    assert _no_gpu_found({name: absent for name in ("gpu", "amd", "apple", "intel")})
    assert not _no_gpu_found({"gpu": {"status": "file", "reason": "read from x", "seconds": None}})


def test_every_signature_is_quick_on_hostile_text():
    # The user's text is hostile: a megabyte of one character class must not make a signature
    # backtrack for long (each search here takes milliseconds; the bound is far looser).
    texts = ["a" * 1_000_000, "1." * 500_000, " \n" * 500_000, "Found " * 150_000, "x" * 999_999 + "\n"]
    for atlas_class in ATLAS.classes:
        for signature in atlas_class.signatures:
            started = time.monotonic()
            for text in texts:
                signature.search(text)
            assert time.monotonic() - started < 5.0, (atlas_class.id, signature.pattern)


def test_no_message_at_a_terminal_says_what_to_give(monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert main(["explain"]) == 2
    assert "give the error text, a log file, or -" in capsys.readouterr().err
