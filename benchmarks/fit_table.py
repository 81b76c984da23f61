"""`hwcheck fit` against the ZeRO paper, DeepSpeed's estimators and real models on this CPU.

    python benchmarks/fit_table.py

Prints three tables: the paper's Figure 1 (7.5B parameters, 64 GPUs, mixed-precision Adam);
DeepSpeed's own estimators where DeepSpeed is installed; and tiny GPT-2 and Llama models
built in code with transformers, trained one step on the CPU: the bytes of their parameters,
gradients and optimizer state (hwcheck's figure and the real one), and the activations
autograd keeps (saved tensors, each storage once, parameters left out) against hwcheck's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hwcheck.recommendation.fit import Plan, activations, model_states  # noqa: E402
from hwcheck.recommendation.model_shape import from_config, from_count  # noqa: E402

PAPER = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}


def paper_table() -> None:
    """Print hwcheck's ZeRO stages beside the paper's Figure 1."""
    print("ZeRO paper, Figure 1: 7.5B parameters, 64 GPUs, mixed-precision Adam (GB per GPU)")
    print(f"{'stage':<7}{'paper':>8}{'hwcheck':>10}{'diff':>8}")
    shape = from_count(7_500_000_000)
    for stage, paper in PAPER.items():
        states = model_states(shape, Plan(policy="mixed_float16", gpus=64, zero=stage))
        # The paper leaves out the float32 gradient partition DeepSpeed's optimizers step on.
        ours = sum(v for k, v in states.items() if k != "float32_gradients") / 1e9
        print(f"{stage:<7}{paper:>8.1f}{ours:>10.2f}{(ours - paper) / paper:>+8.1%}")


def deepspeed_table() -> None:
    """Print hwcheck's totals beside DeepSpeed's own estimators, where DeepSpeed is installed."""
    if importlib.util.find_spec("deepspeed") is None:
        print("\nDeepSpeed is not installed: its estimators are not compared")
        return
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    print("\nDeepSpeed's ZeRO-2 estimator against hwcheck (7.5B parameters, GB per GPU)")
    print(f"{'GPUs':<6}{'offload':<9}{'DeepSpeed':>10}{'hwcheck':>10}{'diff':>8}")
    shape = from_count(7_500_000_000)
    for gpus in (8, 64, 512):
        for offload in (False, True):
            _, theirs = estimate_zero2_model_states_mem_needs(7_500_000_000, gpus, 1, cpu_offload=offload)
            ours = sum(model_states(shape, Plan(gpus=gpus, zero=2, offload=offload)).values())
            diff = (ours - theirs) / theirs
            print(f"{gpus:<6}{str(offload):<9}{theirs / 1e9:>10.2f}{ours / 1e9:>10.2f}{diff:>+8.1%}")


def real_table() -> None:
    """Print hwcheck's model states and activations beside what one AdamW step holds on this CPU."""
    import torch
    import transformers

    print("\nReal models on this CPU, one AdamW step (bytes)")
    print(f"{'model':<7}{'policy':<16}{'batch x seq':<12}{'states real':>12}{'hwcheck':>10}"
          f"{'activ. real':>13}{'hwcheck':>10}{'diff':>8}")  # fmt: skip
    configs = {
        "gpt2": transformers.GPT2Config(n_embd=128, n_layer=4, n_head=4, vocab_size=1000, n_positions=512,
                                        attn_pdrop=0.0, activation_function="gelu"),
        "llama": transformers.LlamaConfig(hidden_size=128, intermediate_size=344, num_hidden_layers=4,
                                          num_attention_heads=4, num_key_value_heads=2, vocab_size=1000),
    }  # fmt: skip
    for name, config in configs.items():
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
        model.train()
        shape = from_config(config.to_dict())
        for policy in ("float32", "mixed_bfloat16"):
            for batch, seq_len in ((2, 128), (4, 512)):
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                ids = torch.randint(0, 1000, (batch, seq_len))
                kept = _saved(model, ids, policy != "float32")
                optimizer.step()
                real = sum(p.untyped_storage().nbytes() * 2 for p in model.parameters()) + sum(
                    v.untyped_storage().nbytes() for s in optimizer.state.values() for v in s.values()
                )
                plan = Plan(policy=policy, batch=batch, seq_len=seq_len, on_gpu=False)
                states = model_states(shape, plan)
                ours = sum(v for k, v in states.items() if k != "working_copy")
                # Autograd's saved tensors hold autocast's 16-bit weight copies too.
                estimated = (activations(shape, plan) or 0) + states["working_copy"]
                print(
                    f"{name:<7}{policy:<16}{f'{batch} x {seq_len}':<12}{real:>12}{ours:>10}"
                    f"{kept:>13}{estimated:>10}{(estimated - kept) / kept:>+8.1%}"
                )
                model.zero_grad(set_to_none=True)


def _saved(model, ids, autocast: bool) -> int:
    import torch

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


if __name__ == "__main__":
    paper_table()
    deepspeed_table()
    real_table()
