"""`hwcheck config` on recorded machines: what it writes, where, and how it fails."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT, run_hwcheck

EMITTED = Path(__file__).parent / "emitted" / "facts"
A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")
V100 = str(EMITTED / "v100x8-tf216.json")
V100_LEGACY_KERAS = str(EMITTED / "v100x8-tf216-legacy-keras.json")
SAPPHIRE_RAPIDS = str(EMITTED / "sapphire-rapids-vm-cpu-only.json")


def constants(text: str) -> dict[str, object]:
    """Module-level NAME = literal assignments of a script."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def test_v100_gets_a_float16_loop_with_a_float32_fallback(tmp_path):
    result = run_hwcheck(
        "config", "--framework", "keras-custom", "-o", str(tmp_path / "train.py"), "--facts", V100
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {tmp_path / 'train.py'} (keras-custom, mixed_float16")
    script = (tmp_path / "train.py").read_text()
    values = constants(script)
    assert values["POLICY"] == "mixed_float16"
    # V100s (CC 7.0) have no bfloat16, so the guard falls back to float32.
    assert values["FALLBACK_POLICY"] == "float32"
    assert "scale_loss" in script and "get_scaled_loss" not in script  # Keras 3.3.3 installed
    settings = json.loads((tmp_path / "train.settings.json").read_text())
    assert settings["script"] == "train.py"
    assert settings["policy"]["chosen_with"] == "recommendation"
    assert "Tesla V100-SXM2-16GB" in settings["policy"]["reason"]
    assert settings["loss_scaling"]["initial_scale"] == 32768
    assert settings["precision_guard"]["fallback_policy"] == "float32"
    assert settings["tf32"]["value"] == "n/a"
    assert "gpu-tensor-core-shapes" in {finding["id"] for finding in settings["findings"]}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["train.py", "train.settings.json"]


def test_keras2_comes_from_the_facts_and_keras_version_overrides_it(tmp_path):
    legacy = run_hwcheck("config", "--framework", "keras-custom", "-o", "-", "--facts", V100_LEGACY_KERAS)
    assert legacy.returncode == 0, legacy.stderr
    assert "get_scaled_loss" in legacy.stdout and "for Keras 2." in legacy.stdout
    forced = run_hwcheck(
        "config",
        "--framework",
        "keras-custom",
        "-o",
        "-",
        "--facts",
        V100_LEGACY_KERAS,
        "--keras-version",
        "3",
    )
    assert forced.returncode == 0, forced.stderr
    assert "get_scaled_loss" not in forced.stdout and "scale_loss" in forced.stdout


def test_a100_torch_script_bfloat16_with_tf32(tmp_path):
    output = tmp_path / "torch_train.py"
    result = run_hwcheck("config", "--framework", "torch", "-o", str(output), "--facts", A100)
    assert result.returncode == 0, result.stderr
    assert constants(output.read_text())["POLICY"] == "mixed_bfloat16"
    assert "use_tf32(self.device)" in output.read_text()
    settings = json.loads((tmp_path / "torch_train.settings.json").read_text())
    assert settings["tf32"]["value"] == "on"
    assert settings["loss_scaling"]["value"] == "none"
    assert "keras_version" not in settings


def test_torch_target_is_judged_as_pytorch(tmp_path):
    # The same A100 box with a CPU-only PyTorch: only the torch target gets the error finding.
    facts = json.loads(Path(A100).read_text())
    facts["frameworks"]["torch"] = {"version": "2.13.0+cpu", "cuda": None}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    finding_ids = {}
    for framework in ("torch", "keras"):
        result = run_hwcheck(
            "config",
            "--framework",
            framework,
            "-o",
            str(tmp_path / f"train-{framework}.py"),
            "--facts",
            str(path),
        )
        assert result.returncode == 0, result.stderr
        settings = json.loads((tmp_path / f"train-{framework}.settings.json").read_text())
        finding_ids[framework] = {finding["id"] for finding in settings["findings"]}
    assert "torch-cpu-only-build" in finding_ids["torch"]
    assert "torch-cpu-only-build" not in finding_ids["keras"]


def test_float16_forced_on_a_cpu_is_emitted_with_a_warning(tmp_path):
    result = run_hwcheck(
        "config",
        "--framework",
        "keras-custom",
        "-o",
        str(tmp_path / "t.py"),
        "--facts",
        SAPPHIRE_RAPIDS,
        "--policy",
        "mixed_float16",
    )
    assert result.returncode == 0, result.stderr
    assert "mixed_float16 on a CPU runs slower than float32" in result.stderr
    script = (tmp_path / "t.py").read_text()
    # The AMX CPU runs bfloat16 fast, so that is where the guard goes.
    assert constants(script)["FALLBACK_POLICY"] == "mixed_bfloat16"
    assert 'jit_compile = policy == "mixed_float16" and not gpu_visible()' in script
    policy = json.loads((tmp_path / "t.settings.json").read_text())["policy"]
    assert policy["chosen_with"] == "--policy"
    assert "hwcheck recommends mixed_bfloat16 here" in policy["reason"]


def test_no_fallback_and_steps_reach_the_script():
    result = run_hwcheck(
        "config", "--framework", "torch", "-o", "-", "--facts", V100, "--no-fallback", "--steps", "17"
    )
    assert result.returncode == 0, result.stderr
    assert constants(result.stdout)["STEPS"] == 17
    assert "PrecisionGuard" not in result.stdout and "GradScaler" in result.stdout


def test_dash_prints_the_script_and_writes_nothing(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hwcheck", "config", "--framework", "keras", "-o", "-", "--facts", V100],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    compile(result.stdout, "stdout", "exec")
    assert result.stdout.startswith('"""Train a Keras 3 model in mixed_float16 (any backend).')
    assert list(tmp_path.iterdir()) == []


def test_an_existing_script_is_replaced_whole_only_with_force(tmp_path):
    output = tmp_path / "train.py"
    output.write_text("old contents\n")
    output.chmod(0o640)
    refused = run_hwcheck("config", "--framework", "keras", "-o", str(output), "--facts", V100)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"hwcheck: error: {output}: already exists; --force replaces it"
    ]
    assert output.read_text() == "old contents\n" and [p.name for p in tmp_path.iterdir()] == ["train.py"]
    result = run_hwcheck("config", "--framework", "keras", "-o", str(output), "--facts", V100, "--force")
    assert result.returncode == 0, result.stderr
    assert output.read_text().startswith('"""Train a Keras 3 model')
    assert output.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.settings.json"]


def test_an_existing_settings_file_alone_is_not_overwritten(tmp_path):
    settings = tmp_path / "train.settings.json"
    settings.write_text("{}\n")
    result = run_hwcheck("config", "--framework", "keras", "-o", str(tmp_path / "train.py"), "--facts", V100)
    assert result.returncode == 2 and f"{settings}: already exists" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["train.settings.json"]


def test_script_and_settings_are_written_together_or_not_at_all(tmp_path):
    # The settings file's name is taken by a directory: the script must not appear alone.
    (tmp_path / "train.settings.json").mkdir()
    output = tmp_path / "train.py"
    result = run_hwcheck("config", "--framework", "keras", "-o", str(output), "--facts", V100, "--force")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"hwcheck: error: {tmp_path / 'train.settings.json'}: is a directory, not a regular file: not written"
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["train.settings.json"]


def test_unknown_policy_is_one_line_and_exit_2(tmp_path):
    result = run_hwcheck(
        "config",
        "--framework",
        "keras",
        "-o",
        str(tmp_path / "t.py"),
        "--facts",
        V100,
        "--policy",
        "mixed_float8",
    )
    assert result.returncode == 2
    # A usage error: config's usage, then one line with the closest policy.
    assert result.stderr.startswith("usage: hwcheck config ")
    assert result.stderr.strip().splitlines()[-1] == (
        "hwcheck config: error: argument --policy: unknown policy 'mixed_float8'; "
        "did you mean mixed_float16? expected one of mixed_float16, mixed_bfloat16, float32"
    )
    assert list(tmp_path.iterdir()) == []


def test_unwritable_path_is_one_line_and_exit_2(tmp_path):
    # A folder that cannot be made (a file stands where it would be); missing ones are made.
    (tmp_path / "no").write_text("a file, not a folder")
    target = tmp_path / "no" / "such" / "dir" / "train.py"
    result = run_hwcheck("config", "--framework", "keras", "-o", str(target), "--facts", V100)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hwcheck: error: {target}: cannot write")
    assert "Traceback" not in result.stderr


def test_bad_steps_and_bad_facts_exit_2(tmp_path):
    steps = run_hwcheck("config", "--framework", "keras", "-o", "-", "--facts", V100, "--steps", "0")
    assert steps.returncode == 2 and "--steps" in steps.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    facts = run_hwcheck("config", "--framework", "keras", "-o", "-", "--facts", str(broken))
    assert facts.returncode == 2
    assert facts.stderr.strip().splitlines() == [
        f"hwcheck: error: {broken}: malformed JSON at line 1 column 2: "
        "Expecting property name enclosed in double quotes"
    ]


def test_config_never_writes_float16_for_a_model_it_says_overflows_there(tmp_path):
    # A T5 pretrained in bfloat16 on a V100 (no bfloat16): doctor says float16 gives inf and NaN
    # losses, so config writes float32 and says so; --insist writes float16 all the same.
    facts = str(FIXTURES / "facts" / "v100-torch241-t5-base.json")
    model = str(FIXTURES / "models" / "t5-base.json")
    arguments = ("config", "--framework", "torch", "--model", model, "--facts", facts)
    switched = run_hwcheck(*arguments, "-o", str(tmp_path / "a.py"))
    assert switched.returncode == 0, switched.stderr
    assert "float32 is written instead of mixed_float16" in switched.stderr
    policy = json.loads((tmp_path / "a.settings.json").read_text())["policy"]
    assert policy["value"] == "float32" and policy["chosen_with"] == "switched"
    assert "overflows float16" in policy["reason"]
    insisted = run_hwcheck(*arguments, "--insist", "-o", str(tmp_path / "b.py"))
    assert insisted.returncode == 0 and "written instead" not in insisted.stderr
    assert json.loads((tmp_path / "b.settings.json").read_text())["policy"]["value"] == "mixed_float16"
    # On an H100 the same model asked for in float16 gets bfloat16, which it was pretrained in.
    h100 = str(FIXTURES / "facts" / "h100-torch211-t5-base.json")
    asked = run_hwcheck(
        "config",
        "--framework",
        "torch",
        "--model",
        model,
        "--facts",
        h100,
        "--policy",
        "float16",
        "-o",
        str(tmp_path / "c.py"),
    )
    assert json.loads((tmp_path / "c.settings.json").read_text())["policy"]["value"] == "mixed_bfloat16", (
        asked.stderr
    )
