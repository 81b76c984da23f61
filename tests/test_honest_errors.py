"""The errors a newcomer meets: one line naming the problem and the next command, never a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck

H100 = str(FIXTURES / "facts" / "h100-anchor-torch211.json")  # torch, no TensorFlow
A100_TF = str(FIXTURES / "facts" / "a100-sxm4x4-tf216.json")  # TensorFlow 2.16
FULL = "/dev/full"


def _shell(command: str) -> tuple[int, str]:
    import subprocess

    result = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stderr


@pytest.mark.skipif(not Path(FULL).exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args",
    [
        "doctor --json",
        "doctor",
        "config --framework torch -o -",
        "report -o -",
    ],
)
def test_a_failed_write_to_stdout_is_one_line_and_exit_2(args: str) -> None:
    status, stderr = _shell(f"{sys.executable} -m hwcheck {args} --facts {H100} > {FULL}")
    assert status == 2, stderr
    assert stderr.splitlines() == ["hwcheck: error: cannot write standard output: No space left on device"]


@pytest.mark.parametrize(
    "args, usage",
    [
        (["doctor", "--policy", "bf16"], "usage: hwcheck doctor "),
        (["report", "--json"], "usage: hwcheck report "),
        (["config", "--framework", "torch", "-o", "-", "--why-not", "fp16"], "usage: hwcheck config "),
    ],
)
def test_a_usage_error_shows_the_subcommands_usage(args: list[str], usage: str) -> None:
    result = run_hwcheck(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage), result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"hwcheck {args[0]}: error: ")


def test_the_ray_install_hint_is_the_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwcheck.base.errors import InputError
    from hwcheck.inventory import ray_collect

    page = (ROOT / "docs" / "inventory.md").read_text(encoding="utf-8")
    assert "pip install '.[ray]'" in page
    for document in (ROOT / "README.md", *(ROOT / "docs").rglob("*.md")):
        assert "hwcheck[ray]" not in document.read_text(encoding="utf-8"), document
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(InputError, match=r"pip install '\.\[ray\]'"):
        ray_collect._import_ray()
    for path in (ROOT / "hwcheck").rglob("*.py"):
        assert "hwcheck[ray]" not in path.read_text(encoding="utf-8"), path


def test_a_script_for_a_framework_that_is_not_installed_says_so(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    result = run_hwcheck("config", "--framework", "keras-custom", "--facts", H100, "-o", str(script))
    assert result.returncode == 0 and script.exists()
    assert result.stderr.strip() == (
        f"hwcheck: warning: the script needs TensorFlow, which is not installed on the machine in {H100}: "
        "it fails on import until you run pip install 'tensorflow[and-cuda]'"
    )
    installed = run_hwcheck("config", "--framework", "keras-custom", "--facts", A100_TF, "-o", "-")
    assert installed.returncode == 0 and "warning" not in installed.stderr


@pytest.mark.parametrize(
    ("facts", "framework", "runs_on"),
    [
        ("mi300x-x8-torch251-rocm62.json", "deepspeed", "torch"),  # PyTorch on ROCm, no DeepSpeed
        ("h100-anchor-torch211.json", "lightning", "torch"),
        ("a100-sxm4x4-tf216.json", "hf-trainer", None),  # no PyTorch: its line comes first
    ],
)
def test_config_and_doctor_give_one_install_line_for_a_missing_trainer(
    tmp_path: Path, facts: str, framework: str, runs_on: str | None
) -> None:
    """The framework a trainer runs on is reinstalled only where it is missing, in both commands."""
    import json

    path = str(FIXTURES / "facts" / facts)
    config = run_hwcheck("config", "--framework", framework, "--facts", path, "-o", str(tmp_path / "t.py"))
    said = config.stderr.strip().split("it fails on import until you run ", 1)[1]
    doctor = run_hwcheck("doctor", "--framework", framework, "--facts", path, "--json")
    findings = json.loads(doctor.stdout)["recommendation"]["findings"]
    remedy = next(f["remedy"] for f in findings if f["id"] == "trainer-not-installed")
    assert said == remedy
    assert ("index-url" in said or "pip install torch" in said) == (runs_on is None), said


def test_facts_says_which_environment_it_used() -> None:
    import json

    shell = run_hwcheck(
        "doctor", "--facts", H100, "--framework", "torch", "--json", env={"CUDA_VISIBLE_DEVICES": "-1"}
    )
    alone = run_hwcheck("doctor", "--facts", H100, "--framework", "torch", "--json")
    # The file's environment decides (none set there: the GPU is seen); the shell's is named, not mixed in.
    assert json.loads(shell.stdout)["recommendation"] == json.loads(alone.stdout)["recommendation"]
    assert "CUDA_VISIBLE_DEVICES='-1' is not used" in shell.stderr
    assert f"environment recorded in {H100}" in shell.stderr
    assert "not used" not in alone.stderr
