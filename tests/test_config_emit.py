"""The script emitter as pure functions: what each script contains, its settings, its safety."""

from __future__ import annotations

import ast
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.emit import FRAMEWORKS, ScriptSpec, emit_script
from hwcheck.emit.machine import keras_major, precision_features
from hwcheck.emit.settings import settings_for
from hwcheck.emit.template import Prose, Word, fill, literal
from hwcheck.facts import load_facts
from hwcheck.recommendation import POLICIES, Reason, Recommendation

EMITTED = Path(__file__).parent / "emitted" / "facts"
GOLDEN = Path(__file__).parent / "golden" / "emit"
# A V100 machine: float16 with loss scaling is the advice there, the guard falls back to float32.
GOLDEN_FACTS = EMITTED / "v100x8-tf216.json"


def every_spec() -> list[ScriptSpec]:
    """One spec per distinct script the emitter can write."""
    specs = [
        ScriptSpec("keras", policy, keras_major=keras)
        for policy, keras in itertools.product(POLICIES, (2, 3))
    ]
    specs += [
        ScriptSpec("keras-custom", policy, keras_major=keras, guard=guard, has_bfloat16=bf16)
        for policy, keras, guard, bf16 in itertools.product(POLICIES, (2, 3), (True, False), (True, False))
    ]
    specs += [
        ScriptSpec("torch", policy, guard=guard, has_tf32=tf32)
        for policy, guard, tf32 in itertools.product(POLICIES, (True, False), (True, False))
    ]
    specs += [
        ScriptSpec("jax", policy, guard=guard, has_bfloat16=bf16)
        for policy, guard, bf16 in itertools.product(POLICIES, (True, False), (True, False))
    ]
    return specs


def spec_id(spec: ScriptSpec) -> str:
    return (
        f"{spec.framework}-{spec.policy}-k{spec.keras_major}"
        f"{'-guard' if spec.guard else ''}{'-bf16' if spec.has_bfloat16 else ''}"
        f"{'-tf32' if spec.has_tf32 else ''}"
    )


def tree_of(spec: ScriptSpec) -> ast.Module:
    return ast.parse(emit_script(spec))


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Top-level functions by name and methods as Class.method."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def called_names(node: ast.AST) -> list[str]:
    """Names of everything called under `node` (f() -> 'f', a.b.f() -> 'f'), in source order."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    calls.sort(key=lambda call: (call.lineno, call.col_offset))
    names = []
    for call in calls:
        function = call.func
        names.append(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    return names


def attribute_names(tree: ast.AST) -> set[str]:
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def constants(tree: ast.Module) -> dict[str, object]:
    """Module-level NAME = literal assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def gradient_tape_blocks(tree: ast.AST) -> list[ast.With]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        and any("GradientTape" in ast.unparse(item.context_expr) for item in node.items)
    ]


# --- every script is valid Python and lint-clean -------------------------------------------


@pytest.mark.parametrize("spec", every_spec(), ids=spec_id)
def test_every_script_compiles(spec):
    compile(emit_script(spec), spec_id(spec), "exec")


def test_every_script_passes_py_compile_and_ruff(tmp_path):
    for spec in every_spec():
        (tmp_path / f"train_{spec_id(spec).replace('-', '_')}.py").write_text(emit_script(spec))
    files = sorted(str(path) for path in tmp_path.glob("*.py"))
    for path in files:
        subprocess.run([sys.executable, "-m", "py_compile", path], check=True)
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    # The project's own lint settings (isort, bugbear, pyupgrade ...) with 100-column lines ...
    strict = subprocess.run(
        [
            ruff,
            "check",
            "--no-cache",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--line-length",
            "100",
            *files,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert strict.returncode == 0, strict.stdout
    # ... and ruff's defaults, as a user's project without a config would run it.
    default = subprocess.run(
        [ruff, "check", "--no-cache", "--isolated", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert default.returncode == 0, default.stdout


# --- Keras: the policy before the model, a float32 output ----------------------------------


@pytest.mark.parametrize("spec", [s for s in every_spec() if s.framework.startswith("keras")], ids=spec_id)
def test_keras_sets_the_policy_before_building_the_model(spec):
    tree = tree_of(spec)
    setters = [
        function for function in functions(tree).values() if "set_global_policy" in called_names(function)
    ]
    assert setters, "the policy is never set"
    for function in setters:
        names = called_names(function)
        # Only where the model is then built, after the policy: setting a policy alone
        # (seed 000's "dynamic precision") changes no layer that already exists.
        assert "build_model" in names, function.name
        assert names.index("set_global_policy") < names.index("build_model"), function.name


@pytest.mark.parametrize("spec", [s for s in every_spec() if s.framework.startswith("keras")], ids=spec_id)
def test_keras_model_output_is_float32(spec):
    build_model = functions(tree_of(spec))["build_model"]
    returned = build_model.body[-1]
    assert isinstance(returned, ast.Return)
    outputs = [
        node
        for node in ast.walk(build_model)
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "outputs"
    ]
    assert outputs and "dtype='float32'" in ast.unparse(outputs[0].value)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("keras", (2, 3))
def test_keras_script_leaves_loss_scaling_to_compile(policy, keras):
    text = emit_script(ScriptSpec("keras", policy, keras_major=keras))
    tree = ast.parse(text)
    assert "train_on_batch" in called_names(functions(tree)["Trainer.step"])
    assert "wraps the optimizer in a LossScaleOptimizer by itself" in text
    init = functions(tree)["Trainer.__init__"]
    compile_call = next(
        node
        for node in ast.walk(init)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "compile"
    )
    keywords = {k.arg: ast.unparse(k.value) for k in compile_call.keywords}
    assert keywords["jit_compile"] == "jit_compile(policy)"
    if keras == 3:
        # Keras 3's own switch for the LossScaleOptimizer compile() adds.
        assert keywords["auto_scale_loss"] == "loss_scaling"
        assert "LossScaleOptimizer" not in called_names(tree)
    else:
        # tf_keras has no auto_scale_loss: a fixed scale of 1 stops compile() wrapping.
        assert "LossScaleOptimizer" in called_names(init)
    # The live scale is printed each float16 step: dynamic_scale in Keras 3, loss_scale in Keras 2.
    assert ("dynamic_scale" if keras == 3 else "loss_scale") in attribute_names(tree)
    assert ("loss_scale=" in ast.unparse(functions(tree)["main"])) == (policy == "mixed_float16")


def test_keras3_script_is_backend_neutral():
    for policy in POLICIES:
        tree = tree_of(ScriptSpec("keras", policy))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
        }
        # torch only inside accelerator_visible(), under the torch backend.
        assert imported <= {"__future__", "argparse", "sys", "collections", "keras", "numpy", "torch"}
        assert "tensorflow" not in imported and "tf" not in {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
        }
        # XLA for float16 on TensorFlow only (oneDNN's float16 kernels); Keras decides otherwise.
        jit = ast.unparse(functions(tree)["jit_compile"])
        assert "policy == 'mixed_float16' and backend() == 'tensorflow'" in jit


# --- Keras custom loop: the full dynamic loss-scaling loop for the right Keras -----------


@pytest.mark.parametrize("guard", (True, False))
def test_keras3_loop_scales_inside_the_tape_and_applies(guard):
    tree = tree_of(ScriptSpec("keras-custom", "mixed_float16", keras_major=3, guard=guard))
    step = functions(tree)["Trainer.scaled_step"]
    (tape,) = gradient_tape_blocks(step)
    assert "scale_loss" in called_names(tape), "scale_loss must run inside the GradientTape"
    after_tape = called_names(ast.Module(body=step.body[step.body.index(tape) + 1 :], type_ignores=[]))
    assert after_tape.index("gradient") < after_tape.index("apply")
    gradient = next(
        n for n in ast.walk(step) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "gradient"
    )
    assert ast.unparse(gradient.args[0]) == "scaled_loss"
    init = functions(tree)["Trainer.__init__"]
    assert "LossScaleOptimizer" in called_names(init)


@pytest.mark.parametrize(
    "spec", [s for s in every_spec() if s.keras_major == 3 and s.framework.startswith("keras")], ids=spec_id
)
def test_keras3_scripts_never_use_the_keras2_api(spec):
    # Keras 3's LossScaleOptimizer has no get_scaled_loss: the TensorFlow guide's loop dies
    # with AttributeError there.
    assert not attribute_names(tree_of(spec)) & {
        "get_scaled_loss",
        "get_unscaled_gradients",
        "apply_gradients",
    }


@pytest.mark.parametrize("guard", (True, False))
def test_keras2_loop_uses_get_scaled_loss_and_apply_gradients(guard):
    tree = tree_of(ScriptSpec("keras-custom", "mixed_float16", keras_major=2, guard=guard))
    step = functions(tree)["Trainer.scaled_step"]
    (tape,) = gradient_tape_blocks(step)
    assert "get_scaled_loss" in called_names(tape)
    names = called_names(step)
    assert names.index("get_unscaled_gradients") < names.index("apply_gradients")
    assert "scale_loss" not in names
    # Keras 2 is tf_keras from TensorFlow 2.16 on, tf.keras before.
    text = emit_script(ScriptSpec("keras-custom", "mixed_float16", keras_major=2))
    assert "import tf_keras as keras" in text and "from tensorflow import keras" in text


@pytest.mark.parametrize("framework", ("keras-custom", "torch", "jax"))
@pytest.mark.parametrize("policy", ("mixed_bfloat16", "float32"))
def test_scripts_without_float16_main_have_no_guard_or_overflow_flag(framework, policy):
    text = emit_script(ScriptSpec(framework, policy))
    tree = ast.parse(text)
    assert "PrecisionGuard" not in {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    assert '"--inject-overflow"' not in text
    assert "loss_scale=" not in ast.unparse(functions(tree)["main"])


def test_float16_loop_compiles_with_xla_only_without_a_gpu():
    init = functions(tree_of(ScriptSpec("keras-custom", "mixed_float16")))["Trainer.__init__"]
    (tf_function,) = [
        node
        for node in ast.walk(init)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tf.function"
    ]
    assert ast.unparse(tf_function) == "tf.function(step, jit_compile=jit_compile)"
    (jit,) = [
        node
        for node in ast.walk(init)
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "jit_compile"
    ]
    # bfloat16 (the fallback) is compiled without XLA: on a CPU it is fastest through oneDNN.
    assert ast.unparse(jit.value) == "policy == 'mixed_float16' and (not gpu_visible())"


# --- the precision guard --------------------------------------------------------------------


@pytest.mark.parametrize("keras", (2, 3))
@pytest.mark.parametrize("bf16", (True, False))
def test_guard_falls_back_by_rebuilding(keras, bf16):
    spec = ScriptSpec("keras-custom", "mixed_float16", keras_major=keras, has_bfloat16=bf16)
    tree = tree_of(spec)
    assert constants(tree)["FALLBACK_POLICY"] == ("mixed_bfloat16" if bf16 else "float32")
    main = functions(tree)["main"]
    rebuild = [
        node
        for node in ast.walk(main)
        if isinstance(node, ast.Call) and ast.unparse(node) == "Trainer(FALLBACK_POLICY, previous=trainer)"
    ]
    assert rebuild, "the fallback must rebuild the model"
    carry_over = called_names(functions(tree)["Trainer.carry_over"])
    assert carry_over[:2] == ["set_weights", "get_weights"] and "assign" in carry_over
    assert constants(tree)["GUARD_MIN_LOSS_SCALE"] == 1.0


def test_no_fallback_leaves_the_guard_out():
    for framework in ("keras-custom", "torch"):
        text = emit_script(ScriptSpec(framework, "mixed_float16", guard=False))
        assert "PrecisionGuard" not in text and "FALLBACK_POLICY" not in text
        assert "--inject-overflow" in text  # still there to watch loss scaling at work


# --- PyTorch ------------------------------------------------------------------------------


def test_torch_float16_uses_autocast_and_a_grad_scaler_with_the_defaults():
    tree = tree_of(ScriptSpec("torch", "mixed_float16"))
    values = constants(tree)
    assert (
        values["INITIAL_LOSS_SCALE"],
        values["GROWTH_FACTOR"],
        values["BACKOFF_FACTOR"],
        values["GROWTH_INTERVAL"],
    ) == (2.0**16, 2.0, 0.5, 2000)
    assert "GradScaler" in called_names(functions(tree)["Trainer.__init__"])
    step = functions(tree)["Trainer.step"]
    assert "autocast" in called_names(step)
    scaler_calls = [
        node.func.attr
        for node in sorted(
            (n for n in ast.walk(step) if isinstance(n, ast.Call)),
            key=lambda n: (n.lineno, n.col_offset),
        )
        if isinstance(node.func, ast.Attribute) and ast.unparse(node.func.value) == "self.scaler"
    ]
    assert scaler_calls == ["get_scale", "scale", "step", "update", "get_scale"]
    assert "self.scaler.scale(loss * loss_factor).backward()" in ast.unparse(step)
    # The device is chosen at run time (pick_device asks PyTorch whether the advised one is there).
    assert "pick_device" in called_names(functions(tree)["Trainer.__init__"])
    assert "is_available" in called_names(functions(tree)["device_available"])


def test_torch_autocasts_from_the_policy_and_computes_the_loss_in_float32():
    text = emit_script(ScriptSpec("torch", "mixed_bfloat16"))
    assert constants(ast.parse(text)).get("POLICY") == "mixed_bfloat16"
    assert "torch.autocast(device_type=self.device, dtype=dtype, enabled=dtype is not None)" in text
    assert "loss_fn(logits.float(), labels)" in text
    assert 'AUTOCAST_DTYPES = {"mixed_float16": torch.float16, "mixed_bfloat16": torch.bfloat16}' in text


def test_torch_tf32_only_where_the_gpu_has_it():
    assert "set_float32_matmul_precision" in emit_script(ScriptSpec("torch", "float32", has_tf32=True))
    assert "set_float32_matmul_precision" not in emit_script(ScriptSpec("torch", "float32"))


# --- what the user changes is marked, and steps come from the spec ---------------------------


@pytest.mark.parametrize("spec", every_spec(), ids=spec_id)
def test_one_marked_place_for_model_and_data(spec):
    text = emit_script(spec)
    assert text.count("# YOUR MODEL AND DATA:") == 1
    assert text.count("# End of YOUR MODEL AND DATA.") == 1
    start, end = text.index("# YOUR MODEL AND DATA:"), text.index("# End of YOUR MODEL AND DATA.")
    model = "def init_params" if spec.framework == "jax" else "def build_model"
    assert model in text[start:end]
    assert constants(ast.parse(text))["STEPS"] == spec.steps


# --- JAX ------------------------------------------------------------------------------------


def test_jax_float16_scales_the_loss_and_skips_non_finite_steps():
    tree = tree_of(ScriptSpec("jax", "mixed_float16"))
    scaled = ast.unparse(functions(tree)["make_scaled_step"])
    assert "loss * loss_factor * loss_scale" in scaled
    assert "jnp.where(finite, new, old)" in scaled  # params and optimizer state kept on overflow
    assert "loss_scale / 2" in scaled and "loss_scale * 2" in scaled
    model = ast.unparse(functions(tree)["apply_model"])
    assert "layer['w'].astype(dtype)" in model and "x.astype(jnp.float32)" in model
    assert constants(tree)["INITIAL_LOSS_SCALE"] == 2.0**15
    assert "COMPUTE_DTYPES" in ast.unparse(functions(tree)["Trainer.compile_step"])


# --- the make_step contract (hwcheck bench --script) ------------------------------------------


@pytest.mark.parametrize("spec", every_spec(), ids=spec_id)
def test_every_script_defines_make_step_and_does_nothing_on_import(spec):
    tree = tree_of(spec)
    make_step = functions(tree)["make_step"]
    assert [a.arg for a in make_step.args.args] == ["policy"]
    assert [a.arg for a in make_step.args.kwonlyargs] == ["loss_scaling"]
    assert ast.unparse(make_step.args.kw_defaults[0]) == "True"
    # Importing runs no training and sets no policy: the top level only imports, assigns,
    # defines, and calls main() under the __main__ guard.
    allowed = (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef, ast.ClassDef, ast.Try)
    for node in tree.body[1:]:
        if isinstance(node, ast.If):
            assert ast.unparse(node.test) == "__name__ == '__main__'"
            continue
        assert isinstance(node, allowed), ast.unparse(node)
        if isinstance(node, ast.Assign):
            assert (
                not any(isinstance(n, ast.Call) for n in ast.walk(node.value))
                or ast.unparse(node.value).startswith("keras.losses.")
                or ast.unparse(node.value).startswith("nn.")
            )
    # make_step builds through the Trainer that main() uses too.
    assert "Trainer" in called_names(make_step)
    assert "Trainer" in called_names(functions(tree)["main"])


# --- golden files: every framework x policy, byte for byte -----------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("policy", POLICIES)
def test_emitted_script_matches_its_golden_file(framework, policy, request):
    result = run_hwcheck(
        "config", "--facts", str(GOLDEN_FACTS), "--framework", framework, "--policy", policy, "-o", "-"
    )
    assert result.returncode == 0, result.stderr
    golden = GOLDEN / f"{framework}-{policy}.py.golden"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.stdout, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}: run pytest --update-golden"
    expected = golden.read_text(encoding="utf-8")
    assert result.stdout == expected, f"{golden.name} differs: review, then run pytest --update-golden"


# --- safety: only checked values reach the code ---------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"policy": "mixed_float16\nimport os"},
        {"policy": "float64"},
        {"framework": "flax"},
        {"keras_major": 4},
        {"device": "npu"},
        {"steps": 0},
        {"steps": "10"},
        {"steps": True},
        {"guard": "yes"},
    ],
)
def test_spec_refuses_bad_values(changes):
    values = {"framework": "keras-custom", "policy": "mixed_float16", **changes}
    with pytest.raises(ValueError):
        ScriptSpec(**values)


@pytest.mark.parametrize("text", ["plain", "it's", 'say "hi"', "two\nlines", "back\\slash", "é \u2028"])
def test_literal_strings_read_back_exactly(text):
    assert ast.literal_eval(literal(text)) == text


def test_fill_puts_only_literals_into_code():
    assert ast.literal_eval(fill("$value", value="'); import os; ('")) == "'); import os; ('"
    for bad in ({"a": 1}, [1], float("nan"), object()):
        with pytest.raises(TypeError):
            fill("X = $value", value=bad)
    with pytest.raises(KeyError):
        fill("X = $missing")
    with pytest.raises(ValueError):
        Word("mixed_float16 import os")
    with pytest.raises(ValueError):
        Prose('ends the docstring """')


# --- the settings file ----------------------------------------------------------------------


@pytest.mark.parametrize("spec", every_spec(), ids=spec_id)
def test_every_setting_has_a_value_and_a_reason(spec):
    settings = settings_for(spec)
    for name in (
        "policy",
        "device",
        "loss_scaling",
        "precision_guard",
        "batch_size",
        "xla",
        "tf32",
        "onednn",
    ):
        assert settings[name]["value"] not in (None, ""), name
        assert len(settings[name]["reason"]) > 20, name


def test_settings_loss_scale_parameters():
    keras = settings_for(ScriptSpec("keras-custom", "mixed_float16"))["loss_scaling"]
    assert (keras["initial_scale"], keras["growth_steps"]) == (2**15, 2000)
    torch = settings_for(ScriptSpec("torch", "mixed_float16"))["loss_scaling"]
    assert (
        torch["initial_scale"],
        torch["growth_factor"],
        torch["backoff_factor"],
        torch["growth_interval"],
    ) == (2**16, 2.0, 0.5, 2000)
    assert settings_for(ScriptSpec("keras", "mixed_bfloat16"))["loss_scaling"]["value"] == "none"


def test_settings_follow_the_cpu_measurements():
    bf16 = settings_for(ScriptSpec("keras-custom", "mixed_bfloat16", device="cpu"))
    assert (bf16["xla"]["value"], bf16["onednn"]["value"]) == ("off", "on")
    fp16 = settings_for(ScriptSpec("keras-custom", "mixed_float16", device="cpu"))
    assert fp16["xla"]["value"] == "on without a GPU"
    assert "never advised on a CPU" in fp16["policy"]["reason"]
    assert settings_for(ScriptSpec("keras", "mixed_bfloat16", device="gpu"))["onednn"]["value"] == "n/a"


def test_settings_tf32_only_on_gpus_that_have_it():
    assert settings_for(ScriptSpec("keras", "float32", device="gpu", has_tf32=True))["tf32"]["value"] == "on"
    assert settings_for(ScriptSpec("keras", "float32", device="cpu"))["tf32"]["value"] == "n/a"


def test_settings_explain_a_policy_chosen_against_the_advice():
    advice = Recommendation(
        policy="mixed_bfloat16",
        device="gpu",
        loss_scaling=False,
        reasons=(Reason("gpu-bf16", "Every GPU has compute capability 8.0 or higher."),),
        rejected={"float32": ("float32 runs on TF32 Tensor Cores at best.",)},
    )
    chosen = settings_for(ScriptSpec("keras", "float32"), advice, policy_from_user=True)["policy"]
    assert chosen["chosen_with"] == "--policy"
    assert "recommends mixed_bfloat16" in chosen["reason"]
    assert "TF32 Tensor Cores at best" in chosen["reason"]
    followed = settings_for(ScriptSpec("keras", "mixed_bfloat16"), advice)["policy"]
    assert followed == {
        "value": "mixed_bfloat16",
        "chosen_with": "recommendation",
        "reason": "Every GPU has compute capability 8.0 or higher.",
    }


def test_settings_guard_where_it_cannot_run():
    fit = settings_for(ScriptSpec("keras", "mixed_float16"))["precision_guard"]
    assert fit["value"] == "off" and "keras-custom" in fit["reason"]
    loop = settings_for(ScriptSpec("keras-custom", "mixed_float16", has_bfloat16=True))
    assert loop["precision_guard"]["fallback_policy"] == "mixed_bfloat16"


# --- facts -> what the emitter needs --------------------------------------------------------


def test_keras_major_from_facts():
    assert keras_major({"frameworks": {"keras": {"version": "3.3.3", "tf_keras_major": 2}}}) == 2
    assert keras_major({"frameworks": {"keras": {"version": "2.15.0"}}}) == 2
    assert keras_major({"frameworks": {"keras": {"version": "3.15.1"}}}) == 3
    assert keras_major({}) == 3


def test_precision_features_from_facts():
    a100 = load_facts(FIXTURES / "facts/a100-sxm4x4-tf216.json")
    assert precision_features(a100, "gpu") == {"bfloat16": True, "tf32": True}
    v100 = load_facts(EMITTED / "v100x8-tf216.json")
    assert precision_features(v100, "gpu") == {"bfloat16": False, "tf32": False}
    sapphire_rapids = load_facts(EMITTED / "sapphire-rapids-vm-cpu-only.json")
    assert precision_features(sapphire_rapids, "cpu")["bfloat16"] is True
    haswell = {"cpu": {"arch": "x86_64", "flags": ["avx", "avx2", "fma"]}}
    assert precision_features(haswell, "cpu")["bfloat16"] is False
    assert precision_features({"tpu": {"present": True}}, "tpu")["bfloat16"] is True
