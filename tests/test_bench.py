"""`hwcheck bench`: real runs on this CPU, in subprocesses, with no faked timings."""

from __future__ import annotations

import json
import os
import time

import pytest

from conftest import run_hwcheck
from hwcheck.facts import schema_problem

# A user script that needs no framework: gradient descent on a scalar, with ways to fail chosen
# per policy through environment variables the tests set.
SCRIPT = """
import math
import os
import time


def make_step(policy, loss_scaling=True):
    failure = os.environ.get("BENCH_FAIL_" + policy.upper() + ("" if loss_scaling else "_NOSCALE"))
    if failure == "abort":
        os.abort()
    if failure == "raise":
        raise RuntimeError("no " + policy + " here")
    state = {"w": 3.0}

    def step():
        if failure == "hang":
            time.sleep(600)
        if failure == "nan" and state["w"] < 2.0:
            return math.nan
        state["w"] -= 0.1 * 2 * state["w"]
        print("noise on stdout from the user's step")
        return state["w"] ** 2

    return step
"""


def _bench_json(*args, env=None, timeout=240):
    result = run_hwcheck("bench", "--json", *args, env=env, timeout=timeout)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert schema_problem(document, "bench") is None
    return document, result


def _by_variant(document):
    return {r["variant"]: r for r in document["results"]}


def _assert_finished(result):
    assert result["status"] == "ok", result["reason"]
    timing = result["ms_per_step"]
    assert 0 < timing["min"] <= timing["median"] <= timing["max"]
    assert result["loss"]["finite"] is True
    assert result["peak_memory_mib"] > 0


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(SCRIPT)
    return path


def test_torch_mlp_on_the_cpu():
    document, result = _bench_json(
        "--framework", "torch", "--workload", "mlp", "--steps", "2", "--warmup", "1", "--device", "cpu"
    )
    assert result.stderr == ""  # no progress bars under --json
    assert document["device"]["kind"] == "cpu"
    assert document["workload"]["sizes"]["batch"] > 0
    results = _by_variant(document)
    # No TF32 on a CPU, so no float32+tf32 run.
    assert list(results) == ["float32", "mixed_bfloat16", "mixed_float16", "mixed_float16-noscale"]
    for variant in results.values():
        if variant["status"] == "ok":
            _assert_finished(variant)
            assert variant["speedup"] > 0
    _assert_finished(results["float32"])
    assert results["float32"]["speedup"] == 1.0
    assert results["float32"]["loss"]["decreased"] is True
    assert "torch" in document["framework_versions"]


def test_keras_on_tensorflow_on_the_cpu():
    document, _ = _bench_json(
        "--framework",
        "keras",
        "--policies",
        "float32,mixed_float16",
        "--steps",
        "4",
        "--warmup",
        "1",
        "--device",
        "cpu",
        env={"KERAS_BACKEND": "tensorflow"},
    )
    results = _by_variant(document)
    assert list(results) == ["float32", "mixed_float16"]
    _assert_finished(results["float32"])
    _assert_finished(results["mixed_float16"])
    assert results["float32"]["speedup"] == 1.0
    assert results["float32"]["loss"]["decreased"] is True
    # mixed_float16 on a CPU runs with oneDNN off, and says why.
    assert any("TF_ENABLE_ONEDNN_OPTS=0" in note for note in results["mixed_float16"]["notes"])
    assert {"keras", "tensorflow"} <= set(document["framework_versions"])


def test_a_user_script_benches(script):
    document, _ = _bench_json("--script", str(script), "--steps", "6", "--warmup", "1", "--device", "cpu")
    assert document["workload"] == {"name": "script", "script": str(script), "sizes": None}
    for result in document["results"]:
        _assert_finished(result)
        assert result["loss"]["decreased"] is True
        assert result["loss"]["last"] < result["loss"]["first"]


def test_a_script_without_loss_scaling_skips_unscaled_float16(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text("def make_step(policy):\n    return lambda: 1.0\n")
    document, _ = _bench_json(
        "--script",
        str(path),
        "--steps",
        "2",
        "--warmup",
        "1",
        "--device",
        "cpu",
        "--policies",
        "float32,float32+tf32,mixed_float16-noscale",
    )
    assert _by_variant(document)["float32+tf32"]["status"] == "skipped"
    assert _by_variant(document)["float32+tf32"]["reason"] == "no TF32 on a CPU"
    skipped = _by_variant(document)["mixed_float16-noscale"]
    assert skipped["status"] == "skipped"
    assert "loss_scaling" in skipped["reason"]
    assert _by_variant(document)["float32"]["status"] == "ok"


def test_crashes_and_nan_are_reported_while_the_others_finish(script):
    env = {
        "BENCH_FAIL_MIXED_FLOAT16": "abort",
        "BENCH_FAIL_MIXED_BFLOAT16": "raise",
        "BENCH_FAIL_MIXED_FLOAT16_NOSCALE": "nan",
    }
    document, _ = _bench_json(
        "--script", str(script), "--steps", "6", "--warmup", "1", "--device", "cpu", env=env
    )
    results = _by_variant(document)
    _assert_finished(results["float32"])
    assert results["mixed_float16"]["status"] == "failed"
    assert "SIGABRT" in results["mixed_float16"]["reason"]
    assert results["mixed_bfloat16"]["status"] == "failed"
    assert results["mixed_bfloat16"]["reason"] == "RuntimeError: no mixed_bfloat16 here"
    nan = results["mixed_float16-noscale"]
    assert nan["status"] == "failed"
    assert nan["reason"].startswith("non-finite")
    assert nan["loss"]["finite"] is False
    assert document["best"]["variant"] == "float32"


# Each exchange with a child, its start-up and imports included, may take this long: ten times
# what loading takes on an idle machine (~1 s), so that a loaded one does not cut the float32
# child "while loading" (it did at 4 s on a busy CI machine).
HANG_TIMEOUT = 20


def test_a_hanging_step_is_cut_at_the_timeout(script):
    started = time.monotonic()
    document, _ = _bench_json(
        "--script",
        str(script),
        "--policies",
        "float32,mixed_bfloat16",
        "--timeout",
        str(HANG_TIMEOUT),
        "--steps",
        "3",
        "--warmup",
        "1",
        "--device",
        "cpu",
        env={"BENCH_FAIL_MIXED_BFLOAT16": "hang"},
    )
    elapsed = time.monotonic() - started
    results = _by_variant(document)
    _assert_finished(results["float32"])
    assert results["mixed_bfloat16"]["status"] == "failed"
    assert results["mixed_bfloat16"]["reason"].startswith(f"timed out after {HANG_TIMEOUT} s")
    # Cut at the timeout, not after the step's 600 s (idle, the run takes the timeout and ~3 s).
    assert elapsed < 300


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("def make_step(policy):\n    return (\n", "syntax error at line"),
        ("def build(policy):\n    pass\n", "defines no top-level make_step"),
        ("make_step = 3\n", "make_step is not a function (found int)"),
    ],
)
def test_a_bad_script_is_one_line_and_exit_2(tmp_path, content, expected):
    path = tmp_path / "bad.py"
    if content is not None:
        path.write_text(content)
    result = run_hwcheck("bench", "--script", str(path), "--policies", "float32", "--device", "cpu")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "bad.py" in lines[0] and expected in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--framework", "mxnet"], "hwcheck bench: error: argument --framework: unknown framework 'mxnet'"),
        (["--policies", "float64"], "hwcheck bench: error: argument --policies: unknown precision 'float64'"),
        (["--steps", "0"], "hwcheck bench: error: argument --steps: must be from 1"),
        (["--warmup", "0"], "hwcheck bench: error: argument --warmup: must be from 1"),
        (["--timeout", "nan"], "hwcheck bench: error: argument --timeout: must be above 0"),
        (["--timeout", "-1"], "hwcheck bench: error: argument --timeout: must be above 0"),
    ],
)
def test_bad_options_are_exit_2_without_a_traceback(args, expected):
    result = run_hwcheck("bench", *args)
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    # argparse's usage line may come first; the error is the last line, whole.
    assert result.stderr.strip().splitlines()[-1].startswith(expected), result.stderr


def test_the_python_api_checks_its_numbers_too():
    from hwcheck import bench
    from hwcheck.base.errors import InputError

    for options in ({"steps": 0}, {"warmup": -1}, {"timeout": float("inf")}, {"steps": True}):
        with pytest.raises(InputError):
            bench(**options)


def test_jax_mlp_on_the_cpu():
    pytest.importorskip("optax")
    document, _ = _bench_json(
        "--framework",
        "jax",
        "--policies",
        "float32,mixed_float16",
        "--steps",
        "4",
        "--warmup",
        "1",
        "--device",
        "cpu",
    )
    results = _by_variant(document)
    for variant in results.values():
        _assert_finished(variant)
        assert variant["loss"]["decreased"] is True
    assert results["float32"]["speedup"] == 1.0
    assert "jax" in document["framework_versions"]


def test_an_unknown_keras_backend_is_exit_2():
    result = run_hwcheck("bench", "--framework", "keras", env={"KERAS_BACKEND": "mxnet"})
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "hwcheck: error: KERAS_BACKEND: unknown backend 'mxnet'; expected one of tensorflow, jax, torch"
    )


def bench_without(modules: tuple[str, ...], *args: str):
    """`hwcheck bench ARGS` in a fresh interpreter where `modules` cannot be imported."""
    import subprocess
    import sys

    from conftest import ROOT

    # None in sys.modules is how Python marks a module as unimportable: it looks uninstalled.
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from hwcheck.cli import main\n"
        f"sys.exit(main(['bench', *{list(args)!r}]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def test_a_framework_that_is_not_installed_is_exit_2():
    result = bench_without(("jax",), "--framework", "jax")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "hwcheck: error: --framework: jax needs jax, which is not installed: pip install -U jax"
    )


def test_bench_with_no_framework_installed_names_what_to_install():
    result = bench_without(("torch", "keras", "tensorflow", "jax"), "--json")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "hwcheck: error: hwcheck bench: no framework to measure with is installed; install one, then run "
        "hwcheck bench again: pip install torch, or pip install keras tensorflow, or pip install -U jax"
    )


def test_table_and_output_file(script, tmp_path):
    output = tmp_path / "bench.json"
    result = run_hwcheck(
        "bench",
        "--script",
        str(script),
        "--policies",
        "float32,mixed_bfloat16",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--device",
        "cpu",
        "-o",
        str(output),
        env={"COLUMNS": "160"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # standard error is a pipe here: no progress bars
    block = json.loads(output.read_text())
    assert schema_problem(block, "bench") is None
    # The advice depends on this host's CPU (AVX-512 BF16 trains PyTorch in bf16): read it, not assume it.
    policy = block["recommended"]["policy"]
    assert "mixed_bfloat16" in result.stdout and f"Recommended: {policy}" in result.stdout
    assert "measured best" in result.stdout
    assert "noise on stdout" not in result.stdout  # the user's prints stay out of the table


def test_progress_bars_on_a_terminal(script):
    import pty
    import subprocess
    import sys

    from conftest import ROOT

    main, child = pty.openpty()
    args = [
        "--script",
        str(script),
        "--policies",
        "float32",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--device",
        "cpu",
    ]
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    process = subprocess.Popen(
        [sys.executable, "-m", "hwcheck", "bench", *args],
        cwd=ROOT,
        env={**environment, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"},
        stdout=subprocess.PIPE,
        stderr=child,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    table = process.stdout.read().decode()
    assert process.wait(timeout=240) == 0
    bars = b"".join(chunks).decode("utf-8", "replace")
    assert "float32" in bars and "━" in bars and "4/4" in bars  # warm-up and timed steps, on stderr
    assert "━" not in table and "Recommended: " in table


def test_bench_is_not_loaded_by_the_cli_for_other_commands():
    # hwcheck.cli builds only the subcommand it runs; bench's modules come with `bench` alone.
    code = (
        "import sys; from hwcheck.cli import build_parser; build_parser('doctor'); "
        "print('hwcheck.measure' in sys.modules)"
    )
    import subprocess
    import sys

    from conftest import ROOT

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("device", "label"), [("mps", "Apple GPU (MPS)"), ("xpu", "Intel GPU (XPU)")])
def test_bench_on_an_absent_apple_or_intel_gpu_says_so(device, label):
    from hwcheck.probes.apple import gpu as apple_gpu
    from hwcheck.probes.intel import gpu as intel_gpu

    probe = {"mps": apple_gpu, "xpu": intel_gpu}[device]
    if probe.probe().facts.get("gpus"):
        pytest.skip(f"this machine has an {label}")
    result = run_hwcheck("bench", "--framework", "torch", "--device", device, "--steps", "1")
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"{device} asked for, but this machine (" in line and f"has no {label}" in line
