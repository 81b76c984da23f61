"""A hostile model config (`fit --model`) is a one-line error naming it, never a traceback."""

from __future__ import annotations

import json

import pytest

from conftest import run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.recommendation.model_shape import from_config_file

GPT2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 2, "vocab_size": 100}
LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "vocab_size": 100,
    "intermediate_size": 128,
}


@pytest.mark.parametrize(
    "config",
    [
        {**GPT2, "resid_pdrop": 2**63 - 1},  # the 64-bit bound of every integer from outside
        {**GPT2, "attn_pdrop": -(2**63)},
        {**LLAMA, "attention_dropout": 2**63 - 1},
    ],
    ids=["gpt2-dropout", "gpt2-negative", "llama-dropout"],
)
def test_a_number_at_the_integer_bound_is_read_as_the_number_it_is(tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    shape = from_config_file(path)
    assert shape.parameters > 0


@pytest.mark.parametrize(
    "value", [2**63, -(2**63) - 1, 10**400], ids=["just-over", "just-under", "401-digits"]
)
def test_an_integer_beyond_64_bits_is_one_line_naming_the_config(tmp_path, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GPT2, "resid_pdrop": value}))
    with pytest.raises(InputError, match="is beyond 64 bits") as raised:
        from_config_file(path)
    assert str(raised.value).startswith(f"--model {path}: ") and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "config, field",
    [
        ({**LLAMA, "hidden_size": 10**29}, "hidden_size"),
        ({**LLAMA, "vocab_size": -(10**29)}, "vocab_size"),
        ({**GPT2, "n_embd": 10**29}, "n_embd"),
        ({**LLAMA, "rope_scaling": {"factors": [1, 2, 10**29]}}, "rope_scaling.factors[2]"),
    ],
    ids=["llama-hidden", "llama-vocab-negative", "gpt2-embedding", "nested"],
)
def test_a_30_digit_integer_is_refused_naming_its_field(tmp_path, config, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(InputError, match="30 digits") as raised:
        from_config_file(path)
    assert str(raised.value).endswith(f" at {field}") and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"model_type": "gpt2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"model_type": "gpt2", "x": ' + "[" * 40 + "]" * 40 + "}", "nested too deeply"),
        ('{"model_type": "gpt2", "n_embd": 1e400}', "too large"),
        ('{"model_type": "gpt2", "n_embd": NaN}', "NaN"),
    ],
    ids=["deeper-than-python", "deep", "huge-float", "nan"],
)
def test_an_unusable_config_is_an_input_error_naming_the_option(tmp_path, text, problem):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(InputError, match=problem) as raised:
        from_config_file(path)
    assert str(raised.value).startswith(f"--model {path}: ")


def test_fit_on_a_deeply_nested_config_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "gpt2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_hwcheck("fit", "--model", str(path))
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"--model {path}" in result.stderr and "nested too deeply" in result.stderr
