"""The advice speaks the framework the user runs: its own API in every line, never another's.

Every profile of tests/profiles.py and every fixture facts file is advised for each framework
(and Keras 3 on each backend); no reason, finding, remedy or apply line may name another
framework's API. Then the lines themselves are checked for what each framework needs.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from profiles import BY_NAME, PROFILES

from conftest import FIXTURES, run_hwcheck
from hwcheck import recommend_policy
from hwcheck.probes.frameworks import keras_config_backend
from hwcheck.recommendation import Recommendation, recommend

# (framework, KERAS_BACKEND) -> what its advice must never contain (case-insensitive regexes).
OTHER_APIS = {
    ("tensorflow", None): (r"torch", r"jax"),
    ("keras", "tensorflow"): (r"torch", r"jax"),
    ("keras", "torch"): (r"\btf\.", r"tensorflow", r"jax", r"jit_compile", r"TF_ENABLE_ONEDNN"),
    ("keras", "jax"): (r"\btf\.", r"tensorflow", r"torch", r"TF_ENABLE_ONEDNN"),
    ("torch", None): (
        r"keras",
        r"\btf\.",
        r"tensorflow",
        r"jax",
        r"set_global_policy",
        r"LossScaleOptimizer",
        r"mixed_b?float16",
        r"jit_compile",
        r"TF_ENABLE_ONEDNN",
    ),
    ("jax", None): (
        r"keras",
        r"\btf\.",
        r"tensorflow",
        r"torch",
        r"set_global_policy",
        r"LossScaleOptimizer",
        r"mixed_b?float16",
        r"jit_compile",
        r"TF_ENABLE_ONEDNN",
    ),
}


def machines() -> list[tuple[str, dict, dict | None]]:
    """(name, facts, probes) of every profile and fixture facts file."""
    found = [(profile.name, profile.facts, profile.probes) for profile in PROFILES]
    for path in sorted((FIXTURES / "facts").glob("*.json")):
        found.append((path.name, json.loads(path.read_text()), None))
    return found


def with_keras_backend(facts: dict, backend: str | None) -> dict:
    """The facts with KERAS_BACKEND set (and nothing else changed)."""
    if backend is None:
        return facts
    facts = copy.deepcopy(facts)
    facts.setdefault("environment", {})["KERAS_BACKEND"] = backend
    return facts


def keras_major(facts: dict) -> str:
    """The major version of the installed Keras ("" when none)."""
    keras = (facts.get("frameworks") or {}).get("keras") or {}
    return str(keras.get("version") or "").split(".")[0]


# Findings that name a device hwcheck has no advice for and the software installed for it.
INVENTORY_FINDINGS = {"accelerator-without-advice", "accelerator-unknown"}
# It says what hwcheck's own check runs with (torch.distributed) and so what it could not check:
# a word about the tool, not training advice in another framework's API.
TOOL_FINDINGS = {"distributed-skipped"}


def texts(recommendation: Recommendation) -> list[str]:
    """Everything the user reads: reasons, findings and remedies, and the apply lines."""
    found = [reason.message for reason in recommendation.reasons]
    for finding in recommendation.findings:
        if finding.id in INVENTORY_FINDINGS | TOOL_FINDINGS:
            continue  # they list what is installed for a device (torch-npu), whatever the framework
        found += [finding.message, finding.remedy or ""]
    return found + list(recommendation.apply)


@pytest.mark.parametrize(
    "framework, keras_backend", list(OTHER_APIS), ids=lambda value: str(value) if value else "-"
)
def test_no_advice_names_another_frameworks_api(framework, keras_backend):
    checked = 0
    for name, facts, probes in machines():
        recommendation = recommend(
            with_keras_backend(facts, keras_backend), probes=probes, framework=framework
        )
        backend = keras_backend
        if keras_backend and keras_major(facts) == "2":
            backend = "tensorflow"  # Keras 2 runs on TensorFlow whatever KERAS_BACKEND says
        assert recommendation.framework == framework
        assert recommendation.backend == (backend or framework)
        forbidden = [re.compile(pattern, re.IGNORECASE) for pattern in OTHER_APIS[framework, backend]]
        assert "rule-error" not in {f.id for f in recommendation.findings}, (name, recommendation.findings)
        for text in texts(recommendation):
            # A filesystem path names a folder, not an API: /opt/torch/.venv holds JAX too.
            text = re.sub(r"(?<![\w.])/[^\s,;()'\"]+", "<path>", text)
            for pattern in forbidden:
                assert not pattern.search(text), f"{name} under {framework}/{keras_backend}: {text!r}"
            checked += 1
    assert checked > len(PROFILES) * 2  # every machine said something


def advice(profile_name: str, framework: str, **environment: str) -> Recommendation:
    """The recommendation for a profile's machine under `framework`, with extra environment."""
    profile = BY_NAME[profile_name]
    facts = copy.deepcopy(profile.facts)
    facts.setdefault("environment", {}).update(environment)
    return recommend(facts, probes=profile.probes, framework=framework)


def joined(recommendation: Recommendation) -> str:
    return "\n".join(recommendation.apply)


# --- the lines each framework gets --------------------------------------------------------


def test_torch_on_ampere_gets_bf16_autocast_and_tf32_matmuls_without_a_scaler():
    recommendation = advice("torch-cuda-a100", "torch")
    lines = joined(recommendation)
    assert (recommendation.compute_dtype, recommendation.loss_scaling, recommendation.tf32) == (
        "bfloat16",
        False,
        True,
    )
    assert "torch.autocast(device_type='cuda', dtype=torch.bfloat16)" in lines
    assert "torch.set_float32_matmul_precision('high')" in lines
    assert "GradScaler" not in lines


def test_torch_on_volta_gets_float16_autocast_with_gradscaler_and_no_tf32():
    recommendation = advice("v100-torch-float16", "torch")
    lines = joined(recommendation)
    assert recommendation.compute_dtype == "float16" and recommendation.loss_scaling
    assert not recommendation.tf32  # Volta has no TF32
    assert "torch.amp.GradScaler('cuda')" in lines and "scaler.scale(loss).backward()" in lines
    assert "dtype=torch.float16" in lines
    assert "set_float32_matmul_precision" not in lines


def test_torch_on_an_amx_cpu_gets_cpu_autocast_in_bfloat16():
    recommendation = advice("sapphire-rapids-8480plus-torch", "torch")
    assert recommendation.device == "cpu" and recommendation.compute_dtype == "bfloat16"
    assert "torch.autocast(device_type='cpu', dtype=torch.bfloat16)" in joined(recommendation)
    assert "4.7 ms/step" in recommendation.reasons[0].message  # PyTorch's own measurement


def test_jax_on_an_amx_cpu_stays_float32_because_xla_bf16_measured_slower():
    recommendation = advice("sapphire-rapids-8480plus-jax", "jax")
    assert (recommendation.policy, recommendation.device) == ("float32", "cpu")
    assert "XLA" in recommendation.reasons[0].message
    assert "astype" not in joined(recommendation)


def test_jax_gets_float32_params_with_bfloat16_compute_plain_and_flax():
    lines = joined(advice("h100-anchor-jax", "jax"))
    assert "p.astype(jnp.bfloat16), params" in lines
    assert ".astype(jnp.float32)" in lines  # the loss in float32
    assert "param_dtype=jnp.float32" in lines and "dtype=jnp.bfloat16" in lines


def test_jax_float16_says_loss_scaling_is_manual():
    recommendation = advice("v100-torch-float16", "jax")
    assert recommendation.loss_scaling
    assert "loss scaling by hand" in joined(recommendation)


def test_keras_float16_gets_the_policy_and_loss_scale_optimizer():
    recommendation = advice("v100-torch-float16", "keras", KERAS_BACKEND="torch")
    lines = joined(recommendation)
    assert "keras.mixed_precision.set_global_policy('mixed_float16')" in lines
    assert "keras.optimizers.LossScaleOptimizer(optimizer)" in lines
    assert "tf.keras" not in lines


def test_tf_keras_gets_tf_keras_spelling():
    lines = joined(advice("h100-prefer-float16", "tensorflow"))
    assert "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')" in lines


def test_keras_on_the_torch_backend_turns_on_tf32_matmuls_through_torch():
    recommendation = advice("h100-anchor-keras-json-torch", "keras")
    assert recommendation.backend == "torch"  # from keras.json
    lines = joined(recommendation)
    assert "set_global_policy('mixed_bfloat16')" in lines
    assert "torch.set_float32_matmul_precision('high')" in lines


def test_keras_backend_variable_overrides_keras_json():
    recommendation = advice("h100-anchor-keras-json-torch", "keras", KERAS_BACKEND="jax")
    assert recommendation.backend == "jax"
    assert "gpu-tf32-jax" in {f.id for f in recommendation.findings}


def test_keras_backend_that_is_not_installed_is_an_error_naming_it():
    recommendation = advice("h100-anchor-torch", "keras")  # no TensorFlow there, no KERAS_BACKEND
    error = next(f for f in recommendation.findings if f.id == "keras-backend-not-installed")
    assert error.severity == "error" and recommendation.has_errors
    assert "TensorFlow" in error.message and "import keras fails" in error.message
    assert "KERAS_BACKEND" in error.remedy


def test_tf32_override_off_turns_the_tf32_line_off():
    recommendation = advice("h100-anchor-torch", "torch", NVIDIA_TF32_OVERRIDE="0")
    assert not recommendation.tf32
    assert "set_float32_matmul_precision" not in joined(recommendation)
    assert "gpu-tf32-override-off" in {f.id for f in recommendation.findings}


@pytest.mark.parametrize(
    "framework, finding_id, api",
    [
        ("tensorflow", "gpu-tf32-default", "enable_tensor_float_32_execution"),
        ("torch", "gpu-tf32-torch", "torch.backends.cudnn.allow_tf32"),
        ("jax", "gpu-tf32-jax", "jax_default_matmul_precision"),
    ],
)
def test_tf32_finding_is_the_runtimes_own(framework, finding_id, api):
    findings = {f.id: f for f in advice("h100-anchor-torch", framework).findings}
    assert finding_id in findings and api in findings[finding_id].remedy
    assert not {"gpu-tf32-default", "gpu-tf32-torch", "gpu-tf32-jax"} - {finding_id} & set(findings)


# --- picking the framework when none is named -------------------------------------------


def only(frameworks: dict, environment: dict | None = None) -> dict:
    return {"schema_version": 1, "frameworks": frameworks, "environment": environment or {}}


@pytest.mark.parametrize(
    "facts, expected",
    [
        (only({"torch": {"version": "2.5.1"}}), "torch"),
        (only({"jax": {"version": "0.4.35"}}), "jax"),
        # Several frameworks: hwcheck's order, PyTorch first.
        (only({"tensorflow": {"version": "2.16.1"}, "torch": {"version": "2.5.1"}}), "torch"),
        (only({"tensorflow": {"version": "2.16.1"}, "jax": {"version": "0.4.35"}}), "tensorflow"),
        # TensorFlow 2.16+ installs Keras 3: TensorFlow is still the only framework.
        (only({"tensorflow": {"version": "2.16.1"}, "keras": {"version": "3.3.3"}}), "tensorflow"),
        # A PyTorch trainer says PyTorch, whatever else is installed.
        (
            only(
                {
                    "tensorflow": {"version": "2.21.0"},
                    "jax": {"version": "0.10.2"},
                    "torch": {"version": "2.13.0"},
                    "transformers": {"version": "5.23.0"},
                }
            ),
            "torch",
        ),
        (
            only({"keras": {"version": "3.5.0"}, "torch": {"version": "2.5.1"}}, {"KERAS_BACKEND": "torch"}),
            "keras",
        ),
        # KERAS_BACKEND without Keras 3 says nothing about the script.
        (only({"torch": {"version": "2.5.1"}}, {"KERAS_BACKEND": "torch"}), "torch"),
        # Nothing installed: the hardware's advice, written in the first framework's words.
        (only({}), "torch"),
    ],
)
def test_framework_is_picked_from_the_installed_ones_and_said(facts, expected):
    recommendation = recommend(facts)
    assert recommendation.framework == expected
    assumed = next(f for f in recommendation.findings if f.id == "framework-assumed")
    assert "--framework" in assumed.remedy


def test_a_trainer_picks_pytorch_and_names_itself():
    facts = only(
        {
            "tensorflow": {"version": "2.21.0"},
            "torch": {"version": "2.13.0"},
            "lightning": {"version": "2.6.6"},
        }
    )
    assumed = next(f for f in recommend(facts).findings if f.id == "framework-assumed")
    assert "a PyTorch trainer is installed (lightning)" in assumed.message


def test_with_nothing_installed_no_one_framework_is_named_to_install():
    recommendation = recommend(only({}))
    assumed = next(f for f in recommendation.findings if f.id == "framework-assumed")
    assert "no framework is installed, so the advice is for the hardware" in assumed.message
    texts = " ".join(f"{f.message} {f.remedy or ''}" for f in recommendation.findings)
    assert "pip install" not in texts
    assert not {"tf-not-installed", "framework-not-installed"} & {f.id for f in recommendation.findings}


def test_a_named_framework_is_not_assumed():
    recommendation = recommend(only({"torch": {"version": "2.5.1"}}), framework="jax")
    assert recommendation.framework == "jax"
    assert "framework-assumed" not in {f.id for f in recommendation.findings}


def test_recommend_policy_takes_every_framework_and_refuses_others():
    facts = BY_NAME["torch-cuda-a100"].facts
    for framework in ("keras", "tensorflow", "torch", "jax"):
        recommendation = recommend_policy(facts, framework=framework)
        assert recommendation.framework == framework and str(recommendation) == "mixed_bfloat16"
    with pytest.raises(ValueError, match="unknown framework"):
        recommend_policy(facts, framework="mxnet")


# --- keras.json -----------------------------------------------------------------------


def test_keras_json_backend_is_read_where_keras_looks(tmp_path):
    (tmp_path / "keras.json").write_text(json.dumps({"floatx": "float32", "backend": "jax"}))
    assert keras_config_backend({"KERAS_HOME": str(tmp_path)}) == "jax"
    home = tmp_path / "home"
    (home / ".keras").mkdir(parents=True)
    (home / ".keras" / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert keras_config_backend({"HOME": str(home)}) == "torch"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"backend": 3}', '{"floatx": "float32"}'])
def test_keras_json_without_a_readable_backend_gives_none(tmp_path, content):
    (tmp_path / "keras.json").write_text(content)
    assert keras_config_backend({"KERAS_HOME": str(tmp_path)}) is None


def test_no_keras_json_gives_none(tmp_path):
    assert keras_config_backend({"KERAS_HOME": str(tmp_path / "absent")}) is None


# --- the CLI ------------------------------------------------------------------------------

KERAS_OR_TENSORFLOW_API = re.compile(
    r"keras\.|\btf\.|set_global_policy|LossScaleOptimizer|enable_tensor_float_32|jit_compile|mixed_b?float16"
)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_doctor_for_torch_and_jax_shows_no_keras_or_tensorflow_api(framework):
    facts = FIXTURES / "facts" / "a100-sxm4x4-tf216.json"
    result = run_hwcheck("doctor", "--facts", str(facts), "--framework", framework)
    advice_part = result.stdout[result.stdout.index("Recommendation:") :]
    assert not KERAS_OR_TENSORFLOW_API.search(advice_part), advice_part
    assert "bfloat16" in advice_part and "TF32 on" in advice_part


def test_doctor_json_carries_the_decision_and_the_native_lines():
    facts = FIXTURES / "facts" / "a100-sxm4x4-tf216.json"
    result = run_hwcheck("doctor", "--json", "--facts", str(facts), "--framework", "torch")
    recommendation = json.loads(result.stdout)["recommendation"]
    assert recommendation["framework"] == recommendation["backend"] == "torch"
    assert (recommendation["compute_dtype"], recommendation["tf32"]) == ("bfloat16", True)
    assert any("torch.autocast" in line for line in recommendation["apply"])
    assert recommendation["policy"] == "mixed_bfloat16"  # the Keras rendering stays
