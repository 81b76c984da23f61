"""The writer knows every input: no command writes over a file it read, --force or not.

Also what config refuses before writing: a script named after a module it imports (the
import would find the script itself), and a script that cannot run on the machine it
advises (mixed_float16 with the Hugging Face Trainer on a CPU-only machine stops at once).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.render.report import refuse_inputs

EMITTED = Path(__file__).parent / "emitted" / "facts"
V100 = str(EMITTED / "v100x8-tf216.json")
SAPPHIRE_RAPIDS = str(EMITTED / "sapphire-rapids-vm-cpu-only.json")
LLAMA_7B = FIXTURES / "models" / "llama-2-7b.json"
REPORT = FIXTURES / "reports"


def one_line_error(result, *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_config_never_writes_over_its_model_config_even_with_force(tmp_path):
    model = tmp_path / "model.json"
    shutil.copy(LLAMA_7B, model)
    before = model.read_bytes()
    result = run_hwcheck(
        "config",
        "--framework",
        "deepspeed",
        "--model",
        str(model),
        "-o",
        str(model),
        "--facts",
        V100,
        "--force",
    )
    one_line_error(result, "model.json: is also an input", "not overwritten")
    assert model.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model.json"]


def test_config_never_writes_over_its_facts_through_another_name(tmp_path):
    facts = tmp_path / "facts.py"
    shutil.copy(V100, facts)
    (tmp_path / "link.py").symlink_to(facts.name)
    before = facts.read_bytes()
    result = run_hwcheck(
        "config", "--framework", "torch", "-o", str(tmp_path / "link.py"), "--facts", str(facts), "--force"
    )
    one_line_error(result, "is also an input")
    assert facts.read_bytes() == before


def test_inventory_never_writes_its_html_over_a_rules_file(tmp_path):
    rules = tmp_path / "site.toml"
    rules.write_text('[[rule]]\nid = "site-note"\nwhen = "false"\nseverity = "info"\nmessage = "never"\n')
    before = rules.read_bytes()
    report = next(REPORT.glob("*.json"))
    result = run_hwcheck("inventory", str(report), "--rules", str(rules), "--html", str(rules))
    one_line_error(result, "site.toml: is also an input")
    assert rules.read_bytes() == before


def test_an_input_named_only_in_hwcheck_rules_is_never_written_over(tmp_path):
    rules = tmp_path / "site.toml"
    rules.write_text('[[rule]]\nid = "site-note"\nwhen = "false"\nseverity = "info"\nmessage = "never"\n')
    before = rules.read_bytes()
    result = run_hwcheck(
        "config",
        "--framework",
        "torch",
        "-o",
        str(rules),
        "--facts",
        V100,
        "--force",
        env={"HWCHECK_RULES": str(rules)},
    )
    one_line_error(result, "site.toml: is also an input")
    assert rules.read_bytes() == before


def test_the_same_resolved_path_is_an_input_even_when_it_does_not_exist_yet(tmp_path):
    # Compared by resolved path as well as by device and inode: the same name through "..".
    target = tmp_path / "sub" / ".." / "new.json"
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match="is also an input"):
        refuse_inputs([target], [tmp_path / "new.json"])
    refuse_inputs([tmp_path / "other.json"], [tmp_path / "new.json"])


@pytest.mark.parametrize(
    ("framework", "name"),
    [
        ("torch", "torch.py"),
        ("jax", "jax.py"),
        ("jax", "optax.py"),
        ("deepspeed", "deepspeed.py"),
        ("lightning", "lightning.py"),
        ("hf-trainer", "transformers.py"),
        ("accelerate", "accelerate.py"),
        ("keras", "keras.py"),
        ("keras-custom", "tensorflow.py"),
        ("torch", "numpy.py"),
    ],
)
def test_a_script_named_after_a_module_it_imports_is_refused(tmp_path, framework, name):
    output = tmp_path / name
    result = run_hwcheck("config", "--framework", framework, "-o", str(output), "--facts", V100)
    one_line_error(result, name, "choose another name")
    assert list(tmp_path.iterdir()) == []


def test_a_script_named_after_a_module_only_the_script_imports_is_refused(tmp_path):
    # The emitted torch script imports argparse; torch itself does not list it.
    from hwcheck.commands.config import FRAMEWORK_MODULES, imported_modules

    result = run_hwcheck("config", "--framework", "torch", "-o", "-", "--facts", V100)
    imported = imported_modules(result.stdout) - FRAMEWORK_MODULES
    assert imported, "the script imports standard modules too"
    name = sorted(imported)[0] + ".py"
    result = run_hwcheck("config", "--framework", "torch", "-o", str(tmp_path / name), "--facts", V100)
    one_line_error(result, name, "choose another name")
    assert list(tmp_path.iterdir()) == []


def test_float16_with_the_trainer_on_a_cpu_is_refused_before_writing(tmp_path):
    output = tmp_path / "train.py"
    result = run_hwcheck(
        "config",
        "--framework",
        "hf-trainer",
        "--policy",
        "mixed_float16",
        "-o",
        str(output),
        "--facts",
        SAPPHIRE_RAPIDS,
    )
    one_line_error(result, "--policy", "needs a CUDA GPU", "mixed_bfloat16 or float32")
    assert list(tmp_path.iterdir()) == []


def test_an_output_name_with_control_characters_is_printed_escaped(tmp_path):
    name = "t\x1b]0;x\x07\nforged.py"
    result = run_hwcheck("config", "--framework", "torch", "-o", name, "--facts", V100, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert result.stdout.count("\n") == 1 and "\\x1b" in result.stdout and "\\n" in result.stdout
    assert json.loads((tmp_path / "t\x1b]0;x\x07\nforged.settings.json").read_text())
    assert os.path.exists(tmp_path / name)
