"""`hwcheck fit`'s total against the peak memory of real training steps.

    python benchmarks/fit_measured.py                          # CPU, float32 and bfloat16
    python benchmarks/fit_measured.py --device cuda --out fit-measured.md
    python benchmarks/fit_measured.py --only gpt2 --steps 2    # one model

Small real models built from configs with transformers (random weights, nothing downloaded):
GPT-2 small, BERT-base, a Llama-shaped, a Mixtral-shaped (mixture of experts) and T5-small, each
trained a few AdamW steps in float32 and in bfloat16 autocast. The figure hwcheck compares is
its total less the CUDA context and the fragmentation headroom, which the measurements below
do not see:

- on CUDA, torch.cuda.max_memory_allocated() after torch.cuda.reset_peak_memory_stats(), the
  model and optimizer already on the GPU (so the peak includes them);
- on the CPU, each run in a child process: its peak resident set (getrusage ru_maxrss) less its
  resident set just before the model is built (its modules already imported, on the meta
  device). tracemalloc cannot see torch's allocations and torch's CPU allocator keeps no peak
  statistics; the RSS also holds the allocator's own slack and pages touched once, so it reads
  high rather than low. Beside it, the same steps on a fresh model with torch's own allocations
  counted (its profiler's allocation and free events, as `hwcheck fit --measure` counts them):
  the peak without the slack.

BERT and the base models without an LM head are trained on the mean square of their last
hidden state (hwcheck lays them out as the base model). `--out FILE` writes a Markdown table
(FILE.md) or JSON (FILE.json) with the date, the machine and every figure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hwcheck.measure.fit_child import counted_peak  # noqa: E402
from hwcheck.recommendation.fit import Plan, estimate  # noqa: E402
from hwcheck.recommendation.model_shape import from_config  # noqa: E402

IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
MODELS = {
    "gpt2": {
        "model_type": "gpt2",
        "n_layer": 12,
        "n_embd": 768,
        "n_head": 12,
        "vocab_size": 50257,
        "n_positions": 1024,
    },
    "bert-base": {
        "model_type": "bert",
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,
        "max_position_embeddings": 512,
    },
    "llama-shaped": {
        "model_type": "llama",
        "hidden_size": 1024,
        "num_hidden_layers": 8,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "intermediate_size": 2816,
        "vocab_size": 32000,
        "max_position_embeddings": 2048,
    },
    "moe-shaped": {
        "model_type": "mixtral",
        "hidden_size": 512,
        "num_hidden_layers": 8,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "intermediate_size": 1408,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "max_position_embeddings": 2048,
    },
    "t5-small": {
        "model_type": "t5",
        "d_model": 512,
        "d_kv": 64,
        "d_ff": 2048,
        "num_layers": 6,
        "num_heads": 8,
        "vocab_size": 32128,
        "decoder_start_token_id": 0,
    },
}
# Batch x tokens per device: the GPU runs fill a good part of an 80 GB GPU in seconds; the CPU
# runs stay small enough for a laptop.
SIZES = {"cuda": {"gpt2": (8, 1024), "bert-base": (16, 512), "llama-shaped": (4, 2048),
                  "moe-shaped": (4, 1024), "t5-small": (8, 512)},
         "cpu": {"gpt2": (2, 128), "bert-base": (2, 128), "llama-shaped": (2, 128),
                 "moe-shaped": (2, 128), "t5-small": (2, 128)}}  # fmt: skip
PRECISIONS = ("float32", "mixed_bfloat16")


def build(name: str, device: str):
    """The transformers model of `name`, built from its config on `device` in training mode."""
    import torch
    import transformers

    options = {key: value for key, value in MODELS[name].items() if key != "model_type"}
    config = transformers.AutoConfig.for_model(MODELS[name]["model_type"], **IDS, **options)
    auto = {"t5": transformers.AutoModelForSeq2SeqLM, "bert": transformers.AutoModel}.get(
        MODELS[name]["model_type"], transformers.AutoModelForCausalLM
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = auto.from_config(config)
    model.train()
    return model, config


def train(name: str, device: str, precision: str, steps: int, count: bool = False) -> dict:
    """Build, train `steps` AdamW steps, and return the measured peak with the run's settings.

    On the CPU with `count`, also `counted`: the same steps on a fresh model, torch's own allocations counted
    (hwcheck's fit_child.counted_peak, what `fit --measure` shows), without the allocator's slack.
    """
    import torch

    batch, tokens = SIZES[device][name]
    if device == "cpu":
        build(name, "meta")  # the model's modules imported (and torch's kernels loaded) before the baseline
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.ones(2, 2).requires_grad_().matmul(torch.ones(2, 2)).sum().backward()
    baseline = _rss() if device == "cpu" else 0
    model, config = build(name, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(3, 1000, (batch, tokens), device=device, generator=None)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    _steps(name, model, optimizer, ids, device, precision, steps)
    seconds = round(time.perf_counter() - start, 2)
    if device == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline
    run = {
        "model": name,
        "precision": precision,
        "batch": batch,
        "seq_len": tokens,
        "params": sum(p.numel() for p in model.parameters()),
        "measured": peak,
        "seconds": seconds,
        "attn_implementation": getattr(config, "_attn_implementation", None),
    }
    if device == "cpu" and count:
        del model, optimizer

        def fresh() -> None:
            again, _ = build(name, device)
            _steps(name, again, torch.optim.AdamW(again.parameters(), lr=1e-4), ids, device, precision, steps)

        run["counted"] = counted_peak(fresh)
    return run


def _steps(name: str, model, optimizer, ids, device: str, precision: str, steps: int) -> None:
    import torch

    for _ in range(steps):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision != "float32"):
            if MODELS[name]["model_type"] == "bert":
                loss = model(input_ids=ids).last_hidden_state.float().pow(2).mean()
            else:
                loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)


def _rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def hwcheck_figure(run: dict, device: str) -> tuple[int, int]:
    """hwcheck's parameter count and allocated total (no CUDA context, no headroom) for `run`."""
    config = {**MODELS[run["model"]], "_attn_implementation": run.get("attn_implementation")}
    shape = from_config(config)
    plan = Plan(policy=run["precision"], batch=run["batch"], seq_len=run["seq_len"], on_gpu=device == "cuda")
    parts = estimate(shape, plan, None)["per_device"]
    return shape.parameters, parts["total"] - parts["cuda_context"] - parts["fragmentation"]


def measure(device: str, names: list[str], steps: int) -> list[dict]:
    """Every model and precision: in this process on CUDA, in a child process each on the CPU."""
    runs = []
    for name in names:
        for precision in PRECISIONS:
            try:
                if device == "cuda":
                    import torch

                    run = train(name, device, precision, steps)
                    torch.cuda.empty_cache()
                else:
                    child = subprocess.run(
                        [sys.executable, __file__, "--child", name, precision, "--steps", str(steps)],
                        capture_output=True, text=True, timeout=900, check=True,
                    )  # fmt: skip
                    run = json.loads(child.stdout.strip().splitlines()[-1])
            except Exception as error:  # a failed run is reported, the others go on
                detail = getattr(error, "stderr", "") or ""
                runs.append(
                    {"model": name, "precision": precision, "error": f"{error!r:.200} {detail[-300:]}"}
                )
                continue
            params, figure = hwcheck_figure(run, device)
            run.update(
                hwcheck=figure,
                hwcheck_params=params,
                error_pct=round(100 * (figure - run["measured"]) / run["measured"], 1),
            )
            if run.get("counted"):
                run["counted_error_pct"] = round(100 * (figure - run["counted"]) / run["counted"], 1)
            runs.append(run)
            print(_row(run), flush=True)
    return runs


def _row(run: dict) -> str:
    if "error" in run:
        return f"| {run['model']} | {run['precision']} | failed: {run['error'][:120]} |||||||"
    counted = run.get("counted")
    return (
        f"| {run['model']} | {run['precision']} | {run['params'] / 1e6:.1f} M "
        f"({'=' if run['params'] == run['hwcheck_params'] else 'hwcheck ' + str(run['hwcheck_params'])}) | "
        f"{run['batch']} x {run['seq_len']} | {run['measured'] / 2**30:.2f} | "
        + (f"{counted / 2**30:.2f} | " if counted else "= measured | ")
        + f"{run['hwcheck'] / 2**30:.2f} | {run['error_pct']:+.1f} % | "
        + (f"{run['counted_error_pct']:+.1f} % |" if counted else "= |")
    )


HEADER = (
    "| model | precision | parameters (hwcheck's count) | batch x tokens | measured peak (GiB) | "
    "counted allocations (GiB) | hwcheck (GiB) | difference | difference to counted |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def machine(device: str) -> dict:
    """Where the runs ran: date, CPU, GPU, library versions."""
    import torch
    import transformers

    found = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": device,
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }
    if device == "cuda":
        found["gpu"] = torch.cuda.get_device_name(0)
    return found


def main() -> int:
    """Compare fit's totals with the measured peaks and print the table; 0 when it ran."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--only", action="append", choices=list(MODELS), help="a model (repeatable)")
    parser.add_argument("--out", type=Path, help="write the table: FILE.md (Markdown) or FILE.json")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(train(args.child[0], "cpu", args.child[1], args.steps, count=True)))
        return 0
    where = machine(args.device)
    print(f"{where}\n{HEADER}", flush=True)
    runs = measure(args.device, args.only or list(MODELS), args.steps)
    if args.out:
        if args.out.suffix == ".json":
            args.out.write_text(json.dumps({"machine": where, "how": __doc__, "runs": runs}, indent=1) + "\n")
        else:
            lines = [f"# hwcheck fit against measured peaks, {where['date']}", "", f"Machine: {where}", "",
                     HEADER, *(_row(run) for run in runs), ""]  # fmt: skip
            args.out.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
