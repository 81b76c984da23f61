"""`hwcheck fit` and `config --framework deepspeed` against host memory, `--model` by directory or
Hugging Face id (a cache laid out under a temporary folder, never the network), honest verdicts,
and bounded work. The memory figures replayed below are the ones this probe read on a 2-core
Xeon VM (MemTotal 25276510208, MemAvailable 23322333184, cgroup v1 without a limit)."""

from __future__ import annotations

import json
import time
import tracemalloc
from dataclasses import replace

import pytest

from conftest import FIXTURES, run_hwcheck
from hwcheck.cli import main
from hwcheck.probes import memory
from hwcheck.recommendation.fit import HostMemory, Plan, estimate
from hwcheck.recommendation.model_shape import from_config
from hwcheck.recommendation.zero_plan import deepspeed_plan

LLAMA_7B = FIXTURES / "models" / "llama-2-7b.json"
H100 = FIXTURES / "facts" / "h100-anchor-torch211.json"  # one H100 80GB visible
VM_MEMORY = {
    "total_bytes": 25276510208,
    "available_bytes": 23322333184,
    "cgroup": {"version": 1, "limit_bytes": None, "usage_bytes": 41058304},
}
GIB = 2**30


def write(root, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


MEMINFO = "MemTotal:       24684092 kB\nMemFree:         1000000 kB\nMemAvailable:   22775716 kB\n"


def test_the_probe_reads_meminfo_and_the_lowest_cgroup_v2_limit_on_the_path(tmp_path):
    write(tmp_path, "proc/meminfo", MEMINFO)
    write(tmp_path, "proc/self/cgroup", "0::/kubepods/pod1/box\n")
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/memory.max", "max\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/memory.max", "8589934592\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/box/memory.max", "max\n")
    write(tmp_path, "sys/fs/cgroup/kubepods/pod1/box/memory.current", "1073741824\n")
    facts = memory.read(tmp_path)
    assert facts == {
        "total_bytes": 24684092 * 1024,
        "available_bytes": 22775716 * 1024,
        "cgroup": {"version": 2, "limit_bytes": 8589934592, "usage_bytes": 1073741824},
    }
    # The pod's 8 GiB bound what the process may hold, less what it holds already.
    assert memory.usable(facts) == (8 * GIB, 7 * GIB)


def test_the_probe_reads_cgroup_v1_and_says_no_limit_for_the_huge_default(tmp_path):
    write(tmp_path, "proc/meminfo", MEMINFO)
    write(tmp_path, "proc/self/cgroup", "4:memory:/docker/abc\n1:cpu:/\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.usage_in_bytes", "41058304\n")
    assert memory.read(tmp_path)["cgroup"] == {"version": 1, "limit_bytes": None, "usage_bytes": 41058304}
    write(tmp_path, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "4294967296\n")
    assert memory.read(tmp_path)["cgroup"]["limit_bytes"] == 4 * GIB


def test_nothing_readable_is_unknown_not_zero(tmp_path):
    assert memory.read(tmp_path) == {}
    assert memory.usable({}) == (None, None)
    # In a cgroup whose limit could not be read, the machine's total is no bound: unknown.
    assert memory.usable({"total_bytes": 10, "cgroup": {"version": 2}}) == (None, None)


def facts_file(tmp_path, host: dict | None) -> str:
    facts = json.loads(H100.read_text())
    if host is not None:
        facts["memory"] = host
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    return str(path)


def fit(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["fit", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_an_offload_plan_beyond_host_memory_does_not_fit(tmp_path, capsys):
    plan = ("--model", str(LLAMA_7B), "--gpu-memory", "80", "--zero", "2", "--offload", "--gpus", "8")
    status, out, _ = fit(capsys, *plan, "--facts", facts_file(tmp_path, VM_MEMORY))
    assert status == 0
    assert "fits: no: the offloaded states exceed the host memory" in out
    assert "fits: yes" not in out
    # 16 bytes per parameter on the node's host, 8 GPUs' shares: 100.4 GiB for Llama 2 7B.
    assert "  total                       100.41 GiB" in out and "21.72 GiB available of 23.54 GiB" in out
    status, out, _ = fit(capsys, *plan, "--facts", facts_file(tmp_path, VM_MEMORY), "--json")
    document = json.loads(out)
    assert document["fits"] is False and document["host"]["fits"] is False
    # Adam's step counter per tensor too; each GPU's share rounded up to a byte.
    assert document["host"]["per_node"]["total"] == pytest.approx(16 * 6_738_415_616 + 4 * 291, abs=8)
    status, out, _ = fit(capsys, *plan, "--host-memory", "256")
    assert "fits: yes" in out


def test_unknown_host_memory_is_said_not_taken_as_fitting(tmp_path, capsys):
    plan = ("--model", str(LLAMA_7B), "--gpu-memory", "80", "--zero", "2", "--offload", "--gpus", "8")
    _, out, _ = fit(capsys, *plan, "--facts", facts_file(tmp_path, None))
    assert "host memory: unknown (the facts file holds no memory section" in out
    assert "fits: unknown: the host memory is unknown, the offloaded states need 100.41 GiB" in out


def test_a_count_without_a_shape_says_activations_are_unknown(tmp_path, capsys):
    _, out, _ = fit(
        capsys, "--params", "1e9", "--gpu-memory", "80", "--facts", facts_file(tmp_path, VM_MEMORY)
    )
    assert "fits: model states fit; activations unknown" in out and "fits: yes" not in out
    _, out, _ = fit(capsys, "--params", "1e9", "--gpu-memory", "80", "--json", "--facts", str(H100))
    document = json.loads(out)
    assert document["fits"] is None and document["model_states_fit"] is True
    assert document["per_device"]["activations"] is None


def test_every_part_is_named_and_the_headroom_is_part_of_the_verdict(capsys):
    shape = from_config(json.loads(LLAMA_7B.read_text()))
    plan = Plan(gpus=8, zero=3, seq_len=4096)
    figures = estimate(shape, plan, 80 * GIB)
    parts = figures["per_device"]
    assert parts["cuda_context"] == 10**9 and parts["communication_buckets"] > 0
    counted = sum(v for k, v in parts.items() if k not in ("fragmentation", "total", "cuda_context"))
    assert parts["fragmentation"] == pytest.approx(0.10 * counted, abs=1)
    assert figures["fits"] is True
    # The same plan on a GPU just above the parts without the headroom: with --headroom the
    # headroom decides (no); by default it is within the estimate's measured error (tight).
    tight = parts["total"] - parts["fragmentation"] + 1
    assert estimate(shape, replace(plan, headroom=0.10), tight)["fits"] is False
    assert estimate(shape, plan, tight)["verdict"] == "tight"


def test_the_deepspeed_plan_skips_offload_the_host_cannot_hold():
    shape = from_config(json.loads(LLAMA_7B.read_text()))
    plan = Plan(gpus=1, zero=0)
    small = HostMemory(25 * GIB, 23 * GIB, "a 25 GiB node")
    choice = deepspeed_plan(shape, plan, 80 * GIB, small)
    assert choice.fits is False and "needs 100.4 GiB of host memory per node" in choice.note
    big = HostMemory(512 * GIB, 500 * GIB, "a 512 GiB node")
    assert deepspeed_plan(shape, plan, 80 * GIB, big)[:3] == (1, True, True)


def test_config_never_writes_an_offload_plan_the_host_cannot_hold(tmp_path):
    args = ("config", "--framework", "deepspeed", "--policy", "bf16", "--model", str(LLAMA_7B))
    small = facts_file(tmp_path, VM_MEMORY)
    result = run_hwcheck(*args, "--facts", small, "-o", str(tmp_path / "t.py"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "needs 100.4 GiB of host memory per node, 21.7 GiB is available" in result.stderr
    assert not (tmp_path / "t.py").exists() and not (tmp_path / "t.deepspeed.json").exists()
    big = dict(VM_MEMORY, total_bytes=512 * GIB, available_bytes=500 * GIB)
    result = run_hwcheck(*args, "--facts", facts_file(tmp_path, big), "-o", str(tmp_path / "t.py"))
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "t.deepspeed.json").read_text())
    assert config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def hub_cache(tmp_path, repo: str, config: dict) -> dict[str, str]:
    """A Hugging Face cache holding only `repo`'s config.json, laid out as huggingface_hub does."""
    folder = tmp_path / "hub" / ("models--" + repo.replace("/", "--"))
    revision = "0123456789abcdef0123456789abcdef01234567"
    write(folder, "refs/main", revision)
    write(folder, f"snapshots/{revision}/config.json", json.dumps(config))
    return {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}


GPT2 = {
    "model_type": "gpt2",
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "vocab_size": 50257,
    "n_positions": 1024,
}


def test_a_model_id_is_read_from_the_local_cache_and_a_directory_from_its_config(
    tmp_path, monkeypatch, capsys
):
    pytest.importorskip("huggingface_hub")
    for key, value in hub_cache(tmp_path, "openai-community/gpt2", GPT2).items():
        monkeypatch.setenv(key, value)
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    status, out, err = fit(capsys, "--model", "openai-community/gpt2", "--gpu-memory", "24", "--json")
    assert status == 0, err
    assert json.loads(out)["parameters"] == 124_439_808  # GPT-2 small
    folder = tmp_path / "gpt2-model"
    write(folder, "config.json", json.dumps(GPT2))
    status, out, _ = fit(capsys, "--model", str(folder), "--gpu-memory", "24", "--json")
    assert json.loads(out)["parameters"] == 124_439_808
    status, _, err = fit(capsys, "--model", "someone/not-cached", "--gpu-memory", "24")
    assert status == 2 and err.count("\n") == 1
    assert "no config.json for this Hugging Face model id in the local cache" in err
    assert "pass a config.json or a model directory" in err
    (tmp_path / "empty").mkdir()
    status, _, err = fit(capsys, "--model", str(tmp_path / "empty"))
    assert status == 2 and "is a directory without a config.json" in err


# A 70B Llama (Llama 2 70B's shape fields).
LLAMA_70B = {
    "model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
    "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096,
}  # fmt: skip


def test_a_70b_model_and_ten_million_layers_are_quick_and_small():
    start = time.perf_counter()
    shape = from_config(LLAMA_70B)
    estimate(shape, Plan(gpus=8, zero=3, seq_len=4096, batch=4), 80 * GIB)
    elapsed = time.perf_counter() - start
    assert shape.parameters == 68_976_648_192
    # Measured idle on a 2-core Xeon VM: 0.4 ms with the tables loaded; ten times the 100 ms goal is allowed.
    assert elapsed < 1.0
    deep = dict(LLAMA_70B, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                num_key_value_heads=4, num_hidden_layers=10_000_000)  # fmt: skip
    assert len(json.dumps(deep)) < 300
    tracemalloc.start()
    start = time.perf_counter()
    huge = from_config(deep)
    figures = estimate(huge, Plan(gpus=8, zero=3), 80 * GIB)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert huge.tensors == 9 * 10_000_000 + 3 and len(huge.groups) < 10
    assert figures["fits"] is False and figures["suggestions"] is not None
    assert elapsed < 2.0 and peak < 5 * 2**20


@pytest.mark.parametrize(
    "arguments",
    [
        ("--params", "7e9"),
        ("--model", str(FIXTURES / "models" / "gpt2.json")),
        ("--model", str(FIXTURES / "models" / "t5-small.json"), "--zero", "2", "--gpus", "4"),
    ],
)
def test_every_part_shown_says_what_it_is_and_an_absent_step_says_why(arguments):
    from hwcheck.render.fit_text import LABELS, MEANINGS

    result = run_hwcheck("fit", *arguments, "--gpu-memory", "80", env={"COLUMNS": "80"})
    assert result.returncode in (0, 1), result.stderr
    lines = result.stdout.splitlines()
    figures = lines[lines.index("per GPU:") + 1 : lines.index("what the parts are:")]
    meanings = lines[lines.index("what the parts are:") + 1 :]
    for line in figures:
        label = line[2:26].strip()
        if label == "total":
            continue
        (key,) = [key for key, shown in LABELS.items() if shown == label]
        assert f"  {label}: {MEANINGS[key]}" in meanings
        assert len(f"  {label}: {MEANINGS[key]}") <= 80
    shown = {line[2:26].strip() for line in figures}
    if "optimizer step" not in shown and "--params" not in arguments:
        assert any(line.startswith("  optimizer step: none: ") for line in meanings)
