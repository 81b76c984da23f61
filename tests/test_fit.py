"""`hwcheck fit` (issue 22 part 3): model states against the ZeRO paper and DeepSpeed's own
estimators, against the bytes a real torch step holds on this CPU (exactly), activations
against what autograd really keeps (within 25 %), the GPUs the process sees, and bad input."""

from __future__ import annotations

import importlib.util
import json

import pytest
from profiles import machine, nvidia

from conftest import FIXTURES, run_hwcheck
from hwcheck.recommendation.fit import Plan, activations, estimate, model_states
from hwcheck.recommendation.model_shape import from_config, from_count

LLAMA_7B = FIXTURES / "models" / "llama-2-7b.json"
GB = 10**9


# The ZeRO paper, Figure 1: Ψ = 7.5B parameters, Nd = 64 GPUs, mixed-precision Adam (K = 12).
@pytest.mark.parametrize(("stage", "paper_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_model_states_match_the_zero_paper(stage, paper_gb):
    states = model_states(from_count(7_500_000_000), Plan(policy="mixed_float16", gpus=64, zero=stage))
    assert abs(sum(states.values()) / GB - paper_gb) <= 0.10 * paper_gb
    # 2 + 2 + 12 bytes per parameter: fp16 weights, fp16 gradients, fp32 master copy and Adam's two moments.
    whole = model_states(from_count(1000), Plan(policy="mixed_bfloat16", zero=0))
    assert whole == {"weights": 2000, "gradients": 2000, "optimizer": 8000, "master_weights": 4000}


needs_deepspeed = pytest.mark.skipif(
    importlib.util.find_spec("deepspeed") is None,
    reason="DeepSpeed is not installed: its estimators cannot run",
)


@needs_deepspeed
@pytest.mark.parametrize("offload", [False, True])
def test_zero2_agrees_with_deepspeeds_estimator(offload):
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    params = 7_500_000_000
    _, deepspeed_gpu = estimate_zero2_model_states_mem_needs(params, 8, 8, cpu_offload=offload)
    ours = sum(model_states(from_count(params), Plan(gpus=64, zero=2, offload=offload)).values())
    assert abs(ours - deepspeed_gpu) <= 0.10 * deepspeed_gpu
    if offload:
        # ZeRO-Offload keeps only the 16-bit weights on the GPU: both count 2 bytes a parameter.
        assert ours == deepspeed_gpu == 2 * params
    else:
        # DeepSpeed counts 18 bytes per partitioned parameter where the paper counts 14: its
        # ZeRO-2 also holds a float32 copy of its gradient partition for the optimizer step.
        assert deepspeed_gpu - ours == pytest.approx(4 * params / 64, abs=64)


@needs_deepspeed
def test_zero3_agrees_with_deepspeeds_estimator():
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs

    shape = from_config(json.loads(LLAMA_7B.read_text()))
    largest = max(a * b for a, b in (s for s in shape.shapes if len(s) == 2))
    _, deepspeed_gpu, _ = estimate_zero3_model_states_mem_needs(
        shape.parameters, largest, 8, 8, cpu_offload=False
    )
    ours = sum(model_states(shape, Plan(gpus=64, zero=3)).values())
    assert abs(ours - deepspeed_gpu) <= 0.10 * deepspeed_gpu


transformers = pytest.importorskip("transformers", reason="the real models are built with transformers")
torch = pytest.importorskip("torch")

TINY = {
    "gpt2": dict(model_type="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=128,
                 attn_pdrop=0.0, activation_function="gelu"),
    "llama": dict(model_type="llama", hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=512, tie_word_embeddings=False),
}  # fmt: skip


def tiny_model(kind: str):
    options = {key: value for key, value in TINY[kind].items() if key != "model_type"}
    config = transformers.AutoConfig.for_model(TINY[kind]["model_type"], **options)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.train()
    return model, config.to_dict()


def make_optimizer(name: str, parameters):
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(parameters, lr=1e-3, relative_step=False, scale_parameter=False)
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=1e-3, momentum=0.9)
    return {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](parameters, lr=1e-3)


def tensor_bytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().nbytes()
    return 0


@pytest.mark.parametrize("kind", list(TINY))
@pytest.mark.parametrize("optimizer", ["adamw", "adam", "sgd", "adafactor"])
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_model_states_are_exactly_what_a_real_step_holds(kind, optimizer, policy):
    model, config = tiny_model(kind)
    shape = from_config(config)
    assert shape.parameters == sum(p.numel() for p in model.parameters())
    step = make_optimizer(optimizer, model.parameters())
    ids = torch.randint(0, 512, (2, 32), generator=torch.Generator().manual_seed(1))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=policy != "float32"):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    step.step()
    real = {
        "weights": sum(tensor_bytes(p) for p in model.parameters()),
        "gradients": sum(tensor_bytes(p.grad) for p in model.parameters()),
        "optimizer": sum(tensor_bytes(v) for state in step.state.values() for v in state.values()),
        "master_weights": 0,
    }
    assert model_states(shape, Plan(policy=policy, optimizer=optimizer)) == real


def saved_for_backward(model, ids, autocast: bool) -> int:
    """The bytes autograd keeps for the backward pass, each storage once, parameters left out."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    return sum(kept.values())


@pytest.mark.parametrize("kind", list(TINY))
@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize(("batch", "seq_len"), [(2, 64), (4, 128)])
def test_activations_are_within_a_quarter_of_what_autograd_keeps(kind, policy, batch, seq_len):
    model, config = tiny_model(kind)
    ids = torch.randint(0, 512, (batch, seq_len), generator=torch.Generator().manual_seed(2))
    real = saved_for_backward(model, ids, policy != "float32")
    estimated = activations(from_config(config), Plan(policy=policy, batch=batch, seq_len=seq_len))
    assert abs(estimated - real) <= 0.25 * real, (estimated, real)


def test_a_7b_model_on_one_and_eight_80gb_gpus():
    shape = from_config(json.loads(LLAMA_7B.read_text()))
    assert shape.parameters == 6_738_415_616  # Llama 2 7B
    one = estimate(shape, Plan(policy="mixed_bfloat16", batch=1, seq_len=4096), 80 * 2**30)
    assert one["fits"] is False and one["suggestions"]
    eight = estimate(shape, Plan(policy="mixed_bfloat16", gpus=8, zero=3, batch=1, seq_len=4096), 80 * 2**30)
    assert eight["fits"] is True


def test_json_has_the_shape_the_issue_names(tmp_path):
    result = run_hwcheck("fit", "--model", str(LLAMA_7B), "--gpu-memory", "80", "--gpus", "8", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) >= {"fits", "device_memory", "per_device", "suggestions", "plan"}
    assert list(document["per_device"]) == [
        "weights", "gradients", "optimizer", "master_weights", "activations", "total"
    ]  # fmt: skip
    assert document["device_memory"] == 80 * 2**30
    assert document["per_device"]["total"] == sum(
        v for k, v in document["per_device"].items() if k != "total"
    )


def test_the_memory_is_that_of_the_mig_slice_the_process_sees(tmp_path):
    gpus = nvidia("h100-80gb-hbm3-mig")
    slice_uuid = next(d for d in gpus["gpus"][0]["mig_devices"] if d["profile"] == "2g.20gb")["uuid"]
    facts = machine(gpus, {"environment": {"CUDA_VISIBLE_DEVICES": slice_uuid}})
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    result = run_hwcheck("fit", "--params", "2e9", "--facts", str(path), "--policy", "bf16", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["device_memory"] == 20096 * 2**20
    assert document["fits"] is False  # 32 GB of model states: not in a 20 GB slice of the 80 GB H100
    assert any(s["change"].startswith("--zero 1 --offload") for s in document["suggestions"])


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--params", "-5"), "--params"),
        (("--params", "0"), "--params"),
        (("--params", "7e9", "--zero", "7"), "--zero"),
        (("--params", "7e9", "--optimizer", "lion"), "--optimizer"),
        (("--params", "7e9", "--gpus", "0"), "--gpus"),
        (("--params", "7e9", "--zero", "0", "--offload"), "--offload"),
    ],
)
def test_bad_input_is_one_line_naming_the_option(args, named):
    result = run_hwcheck("fit", *args)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert named in last and "Traceback" not in result.stderr


def test_a_config_without_the_fields_names_the_option_and_the_field(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    result = run_hwcheck("fit", "--model", str(config))
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1 and "--model" in result.stderr and "num_hidden_layers" in result.stderr
    )
    config.write_text(json.dumps({"model_type": "t5"}))
    assert "'t5' is not one hwcheck lays out" in run_hwcheck("fit", "--model", str(config)).stderr
