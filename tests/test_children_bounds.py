"""Children that die, flood or answer nonsense: known at once, held in bounded memory, refused clearly.

The verifying child (doctor --verify) and the measuring child (bench, doctor --measure) run a
fake framework or script here: one that forks a helper holding the child's stdout and stderr
(as a framework's worker does) and then dies of SIGILL or exits 3, one that writes 64 MiB of
stderr on one line; and answers at and just over each bound (size, depth, non-finite numbers).
"""

from __future__ import annotations

import copy
import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.cli import main
from hwcheck.commands import Machine
from hwcheck.facts import schema_problem
from hwcheck.measure import streams
from hwcheck.measure.ask import answer_line, ended
from hwcheck.measure.streams import AnswerError, Tail, parse_answer
from hwcheck.measure.verify import _cleaned, _unanswered, verify

# A verifying child that imports a fake framework and dies is reported in about 1.2 s here (the
# 2-core VM, 2026-11-28: Python's start, then POLL_SECONDS and DRAIN_SECONDS once it has ended);
# the bound is ten times that, and the timeout it is not waited for is far beyond.
VERIFY_DIES_BOUND = 12.0
# A bench of two precisions with a script of no framework takes about 10.3 s here; ten times that.
BENCH_BOUND = 105.0
TIMEOUT = 600


def fake_torch(folder: Path, body: str) -> None:
    package = folder / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(body))


HELPER_THEN = """
import os, signal, time
if os.fork() == 0:  # a helper in its own session, holding the child's stdout and stderr open
    os.setsid()
    with open({pidfile!r}, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(600)
    os._exit(0)
while not os.path.exists({pidfile!r}):
    time.sleep(0.01)
{ending}
"""


def _end_helper(pidfile: Path) -> None:
    # The helper left the child's group on purpose: only its recorded pid reaches it.
    if pidfile.exists() and pidfile.read_text():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize(
    ("ending", "error"),
    [
        ("os.kill(os.getpid(), signal.SIGILL)", "killed by SIGILL (illegal instruction)"),
        ("os._exit(3)", "exited with status 3 without an answer"),
    ],
)
def test_a_verifying_child_that_dies_is_reported_at_once_while_its_helper_holds_the_pipes(
    tmp_path, monkeypatch, ending, error
):
    pidfile = tmp_path / "helper.pid"
    fake_torch(tmp_path / "site", HELPER_THEN.format(pidfile=str(pidfile), ending=ending))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    started = time.monotonic()
    try:
        seen = verify("torch", "torch", "cpu", "float32", timeout=TIMEOUT)
    finally:
        _end_helper(pidfile)
    elapsed = time.monotonic() - started
    assert seen["outcome"] == "error"
    assert seen["error"] == error
    assert elapsed < VERIFY_DIES_BOUND, elapsed  # not the 120 s timeout


BENCH_SCRIPT = """
import os, signal, time


def make_step(policy, loss_scaling=True):
    if policy == "mixed_bfloat16" and os.fork() == 0:
        os.setsid()
        with open(os.environ["HELPER_PID"], "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(600)
        os._exit(0)
    state = {"n": 0}

    def step():
        state["n"] += 1
        if policy == "mixed_bfloat16" and state["n"] > 1:
            os.kill(os.getpid(), signal.SIGILL)
        return 1.0 / state["n"]

    return step
"""


def test_a_measuring_child_killed_by_sigill_is_reported_at_once_while_its_helper_holds_the_pipes(tmp_path):
    script, pidfile = tmp_path / "model.py", tmp_path / "helper.pid"
    script.write_text(BENCH_SCRIPT)
    started = time.monotonic()
    try:
        result = run_hwcheck(
            "bench", "--script", str(script), "--policies", "float32,mixed_bfloat16", "--steps", "2",
            "--warmup", "1", "--device", "cpu", "--timeout", str(TIMEOUT), "--json",
            env={"HELPER_PID": str(pidfile)}, timeout=TIMEOUT * 3,
        )  # fmt: skip
    finally:
        _end_helper(pidfile)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-2000:]
    results = {r["variant"]: r for r in json.loads(result.stdout)["results"]}
    assert results["float32"]["status"] == "ok"
    assert results["mixed_bfloat16"]["status"] == "failed"
    assert results["mixed_bfloat16"]["reason"].startswith("killed by SIGILL")
    assert elapsed < BENCH_BOUND, elapsed


# --- output kept as a bounded tail ---------------------------------------------------------


def test_the_tail_keeps_the_last_bytes_at_its_cap_and_cuts_one_over(tmp_path):
    at_cap = tmp_path / "at"
    at_cap.write_bytes(b"a" * 99 + b"\n")  # 100 bytes: kept whole
    tail = Tail(100)
    with open(at_cap, "rb") as stream:
        tail.read(stream)
    assert tail.text() == "a" * 99 and len(tail.kept) == 100
    over = tmp_path / "over"
    over.write_bytes(b"first line\n" + b"b" * 99 + b"\n")  # 111 bytes: the first line is cut
    tail = Tail(100)
    with open(over, "rb") as stream:
        tail.read(stream)
    assert len(tail.kept) == 100 and tail.text() == "b" * 99 and tail.last_line() == "b" * 99


def test_one_line_longer_than_the_tail_keeps_only_its_end(tmp_path):
    path = tmp_path / "long"
    path.write_bytes(b"x" * (3 * streams.STDERR_CHUNK_BYTES) + b"Error: the end\n")
    tail = Tail(64)
    with open(path, "rb") as stream:
        tail.read(stream)
    assert len(tail.kept) == 64
    assert tail.last_line().endswith("Error: the end")
    assert tail.text(10) == "...the end"


FLOOD = """
import os, signal
block = b"e" * (1 << 20)
for _ in range(64):  # 64 MiB on one line
    os.write(2, block)
os.write(2, b"\\nRuntimeError: the last words\\n")
os.kill(os.getpid(), signal.SIGILL)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is read from Linux's /proc")
def test_64_mib_of_stderr_is_not_held_by_the_verifier(tmp_path):
    fake_torch(tmp_path / "site", FLOOD)
    # The verifier in a process of its own, which then reads its own peak resident set (VmHWM:
    # Linux keeps ru_maxrss across execve, so pytest's would count).
    code = (
        "import re, sys\n"
        f"sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
        "from hwcheck.measure.verify import verify\n"
        "seen = verify('torch', 'torch', 'cpu', 'float32', timeout=120)\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print(seen['signal'], int(peak) // 1024, len(seen['stderr']), seen['stderr'].splitlines()[-1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    name, peak_mib, kept, last = done.stdout.split(maxsplit=3)
    assert name == "SIGILL"
    assert last.strip() == "RuntimeError: the last words"
    assert int(kept) <= 2000
    # About 30 MiB here; whole lines of 64 MiB held 40 deep took gigabytes.
    assert int(peak_mib) < 200


# --- answers parsed under a size and a depth bound, finite numbers only ---------------------


def test_an_answer_at_the_depth_bound_is_read_and_one_deeper_is_refused():
    assert parse_answer(b"[" * 32 + b"]" * 32) is not None
    with pytest.raises(AnswerError, match="nested too deeply"):
        parse_answer(b"[" * 33 + b"]" * 33)


def test_an_answer_nested_100000_deep_is_a_clear_refusal():
    with pytest.raises(AnswerError, match="nested too deeply") as refused:
        parse_answer(b"[" * 100_000 + b"]" * 100_000)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_an_answer_holding_a_non_finite_number_is_refused(number):
    with pytest.raises(AnswerError, match="number|float"):
        parse_answer(f'{{"verified": {{"outcome": "ok", "loss": {number}}}}}'.encode())


def test_an_answer_at_the_size_bound_is_read_and_one_byte_over_is_refused():
    line = b'["' + b"a" * 96 + b'"]'  # 100 bytes
    assert parse_answer(line, limit=100) == ["a" * 96]
    with pytest.raises(AnswerError, match="over the 99-byte bound"):
        parse_answer(line, limit=99)


class Ended:
    """A child process that has already exited with `code`."""

    def __init__(self, code: int) -> None:
        self.returncode = code

    def poll(self) -> int:
        return self.returncode


def test_a_verifying_child_whose_answer_holds_nan_is_an_error_saying_so():
    lines: queue.Queue[bytes | None] = queue.Queue()
    lines.put(b'{"verified": {"outcome": "ok", "loss": NaN}}\n')
    lines.put(None)
    refused = answer_line(lines, Ended(0), time.monotonic() + 5, "verified")
    assert isinstance(refused, str)
    block = _unanswered(ended(0, Tail(), refused))
    assert block["outcome"] == "error"
    refusal = "its answer was refused: unusable JSON: NaN is not a JSON number at verified.loss"
    assert block["error"] == f"exited with status 0; {refusal}"


def test_a_verifying_child_that_ended_while_the_pipe_stays_open_is_known_from_its_status():
    lines: queue.Queue[bytes | None] = queue.Queue()  # no end of file ever comes
    started = time.monotonic()
    assert answer_line(lines, Ended(-signal.SIGILL), time.monotonic() + 60, "verified") is None
    assert time.monotonic() - started < 10 * (streams.POLL_SECONDS + streams.DRAIN_SECONDS)


# --- what doctor --verify --json writes reads back ------------------------------------------

CPU = json.loads((FIXTURES / "facts" / "cpu-amx-torch213-jax0102.json").read_text())


def test_a_long_architecture_name_and_a_negative_memory_read_back(tmp_path, capsys):
    seen = _cleaned(
        {
            "outcome": "ok",
            "framework": "torch",
            "arch_list": ["sm_" + "9" * 300, "sm_90"],
            "devices": [
                {"kind": "cpu", "name": "cpu"},
                {"kind": "gpu", "name": "H100", "memory_mib": -1, "compute_capability": "9.0"},
            ],
            "loss": "not a number",
            "seconds": -3,
        }
    )
    assert seen["arch_list"][1] == "sm_90" and len(seen["arch_list"][0]) == 64
    assert seen["devices"][1] == {"kind": "gpu", "name": "H100", "compute_capability": "9.0"}
    assert "loss" not in seen and "seconds" not in seen
    seen["requested"] = {"framework": "torch", "backend": "torch", "device": "cpu", "policy": "float32"}
    facts = {**CPU, "verified": seen}
    assert schema_problem(facts, "facts") is None
    path = tmp_path / "verified.json"
    path.write_text(json.dumps(facts))
    assert main(["doctor", "--facts", str(path), "--framework", "torch", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["facts"]["verified"]["arch_list"][1] == "sm_90"


# --- doctor --measure when the budget ran out before anything was timed --------------------

BLOCK = json.loads((FIXTURES / "bench" / "cpu-amx-torch-float32-bf16.json").read_text())


def _all_failed(reason: str) -> dict:
    block = copy.deepcopy(BLOCK)
    for result in block["results"]:
        result.update(status="failed", reason=reason, ms_per_step=None, speedup=None, noise=None)
    block["best"], block["verdict"], block["comparisons"] = None, "unknown", []
    return block


@pytest.fixture
def failing_bench(monkeypatch, tmp_path):
    import hwcheck.commands.doctor
    import hwcheck.measure.session

    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(tmp_path / "cache"))
    blocks: list[dict] = []
    monkeypatch.setattr(hwcheck.measure.session, "bench", lambda **options: copy.deepcopy(blocks[-1]))
    machine = Machine(copy.deepcopy(CPU), {}, None)
    monkeypatch.setattr(hwcheck.commands.doctor, "read_machine", lambda args: machine)
    return blocks


def test_a_budget_that_ran_out_while_loading_measured_nothing_and_says_what_would_do(failing_bench, capsys):
    failing_bench.append(_all_failed("the --budget ran out while loading"))
    assert main(["doctor", "--measure", "--json", "--framework", "torch", "--budget", "10"]) == 0
    report = json.loads(capsys.readouterr().out)
    measure = report["recommendation"]["measure"]
    assert measure["status"] == "not measured"
    assert measure["reason"].startswith("nothing was measured (float32: the --budget ran out while loading")
    assert "a --budget of 60 s or more" in measure["reason"]
    ids = {f["id"] for f in report["recommendation"]["findings"]}
    assert "measured-tie" not in ids
    assert not (report.get("bench") or [])
    assert main(["doctor", "--measure", "--framework", "torch", "--budget", "10"]) == 0
    assert "Not measured: nothing was measured" in capsys.readouterr().out


def test_precisions_that_crashed_measured_nothing_without_a_budget_to_suggest(failing_bench, capsys):
    failing_bench.append(_all_failed("killed by SIGILL"))
    assert main(["doctor", "--measure", "--json", "--framework", "torch", "--budget", "10"]) == 0
    measure = json.loads(capsys.readouterr().out)["recommendation"]["measure"]
    assert measure["status"] == "not measured"
    assert "killed by SIGILL" in measure["reason"] and "--budget of" not in measure["reason"]


def test_an_answer_with_as_many_refused_values_as_the_cap_reads_back_and_one_more_is_refused():
    from hwcheck.measure.verify import MAX_ITEMS, MAX_REPAIRS

    # Four values the schema refuses in each of the 64 devices kept: 256, the cap.
    device = {"kind": 5, "name": 6, "memory_mib": -1, "compute_capability": 7}
    assert MAX_ITEMS * len(device) == MAX_REPAIRS
    at_cap = _cleaned({"outcome": "ok", "devices": [dict(device) for _ in range(MAX_ITEMS)]})
    assert at_cap["outcome"] == "ok" and at_cap["devices"] == [{}] * MAX_ITEMS
    assert schema_problem({**CPU, "verified": at_cap}, "facts") is None
    over = _cleaned({"outcome": "ok", "devices": [dict(device) for _ in range(MAX_ITEMS)], "loss": "x"})
    assert over["outcome"] == "error"
    assert over["error"] == "the verifying process's answer does not fit the facts schema"
