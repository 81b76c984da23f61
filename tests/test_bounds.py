"""Bounded work and numbers from outside: every loop over input is linear, every input has a cap,
and every number read from outside text is ASCII digits of bounded length (issue 21, classes 1-2).

Linearity is shown without clocks: the inputs' dicts count how often they are read, and the
count must grow with the input, not with its square (benchmarks/scaling.py has the timings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.base.numbers import MAX_DIGITS, leading_whole, parse_whole, whole_or_none
from hwcheck.base.versions import parse_version
from hwcheck.devices.cuda_visibility import arch_list_missing, resolve
from hwcheck.engine import measured
from hwcheck.facts.bench import blocks_of

HUGE = "9" * 4400  # more digits than Python's int() converts


class Counted(dict[str, Any]):
    """A dict that counts the reads made through get() and the comparisons made with ==."""

    reads = 0
    comparisons = 0

    def get(self, key: str, default: Any = None) -> Any:
        Counted.reads += 1
        return super().get(key, default)

    def __eq__(self, other: object) -> bool:
        Counted.comparisons += 1
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _reset_counts() -> None:
    Counted.reads = Counted.comparisons = 0


def gpu_facts(count: int, *, mig: bool = False) -> dict[str, Any]:
    gpus = []
    for index in range(count):
        gpu = Counted(
            index=index,
            vendor="nvidia",
            name="NVIDIA A100-SXM4-80GB",
            compute_capability="8.0",
            uuid=f"GPU-{index:08x}-0000-0000-0000-000000000000",
            mig=mig,
        )
        if mig:
            gpu["mig_devices"] = [
                Counted(
                    uuid=f"MIG-{index:08x}-1111-0000-0000-000000000000",
                    profile="1g.10gb",
                    gpu_instance_id=1,
                    compute_instance_id=0,
                )
            ]
        gpus.append(gpu)
    return {"schema_version": 1, "gpus": gpus}


def reads_for(count: int, variable: str) -> int:
    facts = gpu_facts(count, mig=variable == "MIG")
    key = "mig_devices" if variable == "MIG" else None
    identifiers = [(gpu[key][0] if key else gpu)["uuid"] for gpu in facts["gpus"]]
    Counted.reads = 0
    seen = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": ",".join(reversed(identifiers))}})
    assert len(seen.gpus) == count and seen.stopped_at is None
    return Counted.reads


@pytest.mark.parametrize("variable", ["GPU", "MIG"])
def test_selecting_gpus_by_uuid_reads_each_gpu_a_bounded_number_of_times(variable):
    # Before: each identifier scanned every GPU (and rebuilt every MIG device): n * n reads.
    small, large = reads_for(200, variable), reads_for(800, variable)
    assert large <= 5 * small
    assert large < 40 * 800


def test_legacy_mig_names_are_found_by_their_parent_and_ids():
    facts = gpu_facts(300, mig=True)
    names = [f"MIG-{gpu['uuid']}/1/0" for gpu in facts["gpus"]]
    Counted.reads = 0
    seen = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": ",".join(names)}})
    assert [gpu["uuid"] for gpu in seen.gpus] == [gpu["mig_devices"][0]["uuid"] for gpu in facts["gpus"]]
    assert Counted.reads < 40 * 300


def test_uuid_prefixes_still_resolve_and_ambiguity_is_named():
    facts = gpu_facts(20)
    one = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": "GPU-0000000a"}})
    assert [gpu["index"] for gpu in one.gpus] == [10]
    many = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": "GPU-000000"}})
    assert many.gpus == () and "20 GPU UUIDs begin with it" in many.stop_reason


def test_repeated_bench_blocks_are_dropped_without_comparing_every_pair():
    block = {"framework": "torch", "steps": 1}
    blocks = [Counted(block, steps=number) for number in range(2000)]
    assert len(blocks_of([{"benches": [*blocks, *blocks]}])) == 2000
    assert Counted.comparisons == 0


def test_bench_blocks_are_matched_to_the_gpus_once(monkeypatch):
    facts = gpu_facts(500)
    blocks = [{"device": {"kind": "gpu", "name": "NVIDIA A100-SXM4-80GB"}, "n": n} for n in range(500)]
    monkeypatch.setattr("hwcheck.facts.bench.measured", lambda _facts: blocks)
    monkeypatch.setattr(measured, "_same_runtime", lambda *_: True)
    monkeypatch.setattr(measured, "_label", lambda block: str(block["n"]))
    monkeypatch.setattr(measured, "_summary", lambda block: {})
    monkeypatch.setattr(measured, "_judge", lambda *_: ([], []))
    Counted.reads = 0
    found = measured.variables({**facts, "measurements": {}}, "torch", "torch")
    assert found["applicable"] == 500
    assert Counted.reads <= 2 * 500  # before: every block read every GPU's name


def test_too_many_gpus_is_one_clear_error(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"schema_version": 1, "gpus": [{"name": "x"}] * 100_001}))
    result = run_hwcheck("doctor", "--facts", str(path))
    assert result.returncode == 2
    assert "has more than 100000 items" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_filled_messages_are_capped_so_reports_stay_readable(tmp_path):
    # 3,000 UUIDs in CUDA_VISIBLE_DEVICES made a finding longer than inventory accepts.
    facts = gpu_facts(3000)
    identifiers = ",".join(gpu["uuid"] for gpu in facts["gpus"][::2])
    facts_path = tmp_path / "facts.json"
    facts_path.write_text(json.dumps({**facts, "environment": {"CUDA_VISIBLE_DEVICES": identifiers}}))
    report = tmp_path / "report.json"
    assert run_hwcheck("report", "--facts", str(facts_path), "-o", str(report)).returncode == 0
    findings = json.loads(report.read_text())["recommendation"]["findings"]
    assert max(len(finding["message"]) for finding in findings) <= 4096
    merged = run_hwcheck("inventory", str(report), "--json")
    assert merged.returncode == 0, merged.stdout + merged.stderr


# --- numbers from outside ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("１", "ASCII digits"),
        ("٣", "ASCII digits"),
        ("²", "ASCII digits"),
        ("1_000", "ASCII digits"),
        ("-1", "ASCII digits"),
        ("", "ASCII digits"),
        (HUGE, f"{len(HUGE)} digits is too long (at most {MAX_DIGITS})"),
        ("65536", "65536 is too large (at most 65535)"),
    ],
)
def test_parse_whole_refuses_with_the_source(text, problem):
    with pytest.raises(InputError) as caught:
        parse_whole(text, "SOURCE_VARIABLE", maximum=65535)
    assert str(caught.value).startswith("SOURCE_VARIABLE: ") and problem in str(caught.value)
    assert len(str(caught.value)) < 200


def test_parse_whole_reads_ascii():
    assert parse_whole("0042", "x") == 42
    assert whole_or_none("１２") is None and whole_or_none(HUGE) is None
    assert leading_whole("+3gpu", "x") == 3 and leading_whole("gpu", "x") is None


def test_a_fullwidth_digit_is_no_gpu_index():
    facts = gpu_facts(2)
    seen = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": "１"}})
    assert seen.gpus == () and seen.stopped_at == "１"


@pytest.mark.parametrize("value", [HUGE, f"0,{HUGE}", f"MIG-GPU-00000000/{HUGE}/0", f"+{HUGE}gpu"])
def test_an_index_too_long_to_read_stops_cuda_there(tmp_path, value):
    facts = gpu_facts(2, mig=True)
    seen = resolve({**facts, "environment": {"CUDA_VISIBLE_DEVICES": value}})
    assert seen.stopped_at is not None and seen.stopped_at.endswith(value.split(",")[-1])
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({**facts, "environment": {"CUDA_VISIBLE_DEVICES": value}}))
    result = run_hwcheck("doctor", "--facts", str(path), "--json")
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr


def test_versions_and_arch_lists_read_ascii_digits_only():
    assert parse_version("１２.４") is None
    assert parse_version(f"12.{HUGE}") is None
    assert parse_version("2.17.0rc1") == (2, 17, 0)
    assert arch_list_missing(f"{HUGE}.0;8.0", ["8.0", "9.0"]) == ["9.0"]


def test_cuda_header_with_an_absurd_version(tmp_path):
    from hwcheck.probes.nvidia.cuda import _header_version

    header = tmp_path / "cuda.h"
    header.write_bytes(f"#define CUDA_VERSION {HUGE}\n".encode())
    assert _header_version("cuda", header) is None


def test_ray_port_too_large_is_a_clear_error():
    from hwcheck.inventory.ray_collect import _check_reachable

    for port in ("99999", HUGE):
        with pytest.raises(InputError) as caught:
            _check_reachable(f"ray://127.0.0.1:{port}")
        assert "the port" in str(caught.value)


def test_a_site_rule_pattern_with_an_absurd_repeat_count_is_refused(tmp_path: Path):
    rules = tmp_path / "site.toml"
    rules.write_text(
        "[[rule]]\n"
        'id = "site-huge-repeat"\n'
        'severity = "info"\n'
        f"when = \"cpu.model.matches('a{{{HUGE[:900]}}}')\"\n"
        'message = "x"\n'
        'remedy = "y"\n'
    )
    result = run_hwcheck("doctor", "--facts", "tests/emitted/facts/v100x8-tf216.json", "--rules", str(rules))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "site-huge-repeat" in result.stderr


@pytest.mark.parametrize("steps", ["１０", HUGE])
def test_numeric_options_read_ascii_digits_only(steps):
    result = run_hwcheck("bench", "--steps", steps, "--workload", "mlp")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_matching_paths_finds_what_glob_finds_and_reads_a_huge_folder_only_to_its_cap(tmp_path, monkeypatch):
    import glob

    from hwcheck.base import inputs

    for name in (
        "jax_cuda12_plugin/_a.so",
        "jax_cuda12_plugin/_b.so",
        "jax_cuda13_plugin/_c.so",
        "jax_cudaX_plugin/_d.so",
        "jax_cuda12_plugin/.hidden.so",
        "torch/lib/libtorch_cuda.so",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    for pattern in (
        "jax_cuda1[0-9]_plugin/_*.so",
        "torch/lib/libtorch_cuda.so",
        "torch/lib/nothing.so",
        "*/_?.so",
        "missing/*.so",
    ):
        expected = sorted(glob.glob(str(tmp_path / pattern)))
        assert inputs.matching_paths(str(tmp_path), pattern, limit=100) == expected, pattern
    assert inputs.matching_paths(str(tmp_path), "jax_cuda1[0-9]_plugin/_*.so", limit=2) == [
        str(tmp_path / "jax_cuda12_plugin/_a.so"),
        str(tmp_path / "jax_cuda12_plugin/_b.so"),
    ]
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for number in range(50):
        (crowded / f"lib{number:02}.so").write_bytes(b"")
    monkeypatch.setattr(inputs, "MAX_LISTED", 10)
    assert len(inputs.matching_paths(str(tmp_path), "crowded/lib*.so", limit=100)) == 10
