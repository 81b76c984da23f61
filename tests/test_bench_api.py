"""hwcheck.bench(...) from Python, and the scripts `hwcheck config` emits benched as they are."""

from __future__ import annotations

import json

import pytest

from conftest import run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.engine.verdict import RECOMMENDABLE
from hwcheck.facts import schema_problem

# Gradient descent on a scalar: no framework to import, so the API test stays fast.
SCALAR_SCRIPT = """
def make_step(policy, *, loss_scaling=True):
    state = {"w": 3.0}

    def step():
        state["w"] -= 0.2 * state["w"]
        return state["w"] ** 2

    return step
"""


def test_hwcheck_bench_measures_a_script_from_python(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCALAR_SCRIPT)
    import hwcheck.measure.runner  # a submodule import must not rebind hwcheck.bench(...)

    assert callable(hwcheck.bench) and "bench" in hwcheck.__all__
    document = hwcheck.bench(
        script=script, framework="torch", policies="float32,mixed_bfloat16", steps=3, warmup=1, device="cpu"
    )
    assert schema_problem(document, "bench") is None
    assert document["workload"] == {"name": "script", "script": str(script), "sizes": None}
    assert [r["variant"] for r in document["results"]] == ["float32", "mixed_bfloat16"]
    for result in document["results"]:
        assert result["status"] == "ok", result["reason"]
        assert result["loss"]["decreased"] is True
    assert (document["steps"], document["warmup"]) == (3, 1)
    with pytest.raises(InputError):
        hwcheck.bench(script=tmp_path / "missing.py")


def test_a_file_beside_the_script_that_shadows_a_framework_is_refused(tmp_path):
    (tmp_path / "model.py").write_text(SCALAR_SCRIPT)
    (tmp_path / "torch.py").write_text("")
    result = run_hwcheck("bench", "--script", str(tmp_path / "model.py"), "--device", "cpu")
    assert result.returncode == 2
    assert "torch.py would be imported instead of the torch package" in result.stderr


FRAMEWORKS = [
    pytest.param("torch", {}, "torch", id="torch"),
    pytest.param("keras", {"KERAS_BACKEND": "tensorflow"}, "tensorflow", id="keras-on-tensorflow"),
    pytest.param("jax", {}, "optax", id="jax"),
]


@pytest.mark.parametrize(("framework", "env", "needs"), FRAMEWORKS)
def test_config_then_bench_the_emitted_script(tmp_path, framework, env, needs):
    """`hwcheck config --framework F -o t.py && hwcheck bench --script t.py` (SPEC §5, issue 10)."""
    pytest.importorskip(needs)
    script = tmp_path / "t.py"
    emitted = run_hwcheck("config", "--framework", framework, "-o", str(script), env=env)
    assert emitted.returncode == 0, emitted.stderr
    # No --framework: bench takes the one the script imports.
    result = run_hwcheck(
        "bench",
        "--script",
        str(script),
        "--policies",
        ",".join(p for p in RECOMMENDABLE if p != "float32+tf32"),
        "--steps",
        "2",
        "--warmup",
        "1",
        "--device",
        "cpu",
        "--json",
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert schema_problem(document, "bench") is None
    assert document["framework"] == framework
    assert document["backend"] == (env.get("KERAS_BACKEND") or framework)
    for entry in document["results"]:
        assert entry["status"] == "ok", f"{entry['variant']}: {entry['reason']}"
        assert entry["loss"]["finite"] is True
    assert document["recommended"]["ms_per_step"] is not None
