"""Property tests: any facts document the schema accepts gets a coherent recommendation.

The strategies are written by hand after hwcheck/facts/schema/facts.schema.json (hypothesis-jsonschema
0.23 cannot drive hypothesis 6.170), mixing values real machines report (GPU names from the
knowledge table, TensorFlow and CUDA versions, CPU flags) with arbitrary text and nulls, so
both the rules' happy paths and their handling of odd facts are exercised. Every generated
document is checked against the schema first, so a strategy that drifts from it fails loudly.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import PROFILES

from hwcheck.base.tables import load
from hwcheck.cli import main
from hwcheck.facts import validate_facts
from hwcheck.probes import PROBE_NAMES
from hwcheck.recommendation import DEVICES, FRAMEWORKS, POLICIES, PREFERENCES, SEVERITIES, recommend

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GPU_NAMES = sorted(
    {gpu["name"] for gpu in load("nvidia")["gpus"]["gpu"]}
    | {alias for gpu in load("nvidia")["gpus"]["gpu"] for alias in gpu.get("aliases", ())}
    | {"Graphics Device", "Orin (nvgpu)", "NVIDIA GeForce GTX 1660 Ti", "NVIDIA H100 80GB HBM3"}
)
TF_VERSIONS = [row["version"] for row in load("tensorflow")["build"]] + ["2.16.1", "2.3.0", "2.22.0rc0"]
CUDA_VERSIONS = [row["version"] for row in load("nvidia")["cuda_drivers"]["toolkit"]] + [
    "11.0",
    "12.4",
    "13.1",
    "10.1",
]
CPU_FLAGS = [row["name"] for row in load("cpu_features")["flag"]] + ["lm", "sse4_2", "avx512_vnni"]

text = st.text(max_size=24)
maybe_text = st.none() | text


def versions(*known: list[str]) -> st.SearchStrategy:
    """A version field: a real release, a dotted number, free text (<= 64 chars) or null."""
    real = [version for group in known for version in group]
    dotted = st.from_regex(r"\d{1,3}(\.\d{1,3}){0,3}", fullmatch=True)
    return st.none() | st.sampled_from(real or ["1.0"]) | dotted | st.text(max_size=64)


def section(required: dict | None = None, **optional: st.SearchStrategy) -> st.SearchStrategy:
    """An object whose every field may be missing (unknown), as the schema allows."""
    return st.fixed_dictionaries(required or {}, optional=optional)


any_version = versions(TF_VERSIONS, CUDA_VERSIONS)
capabilities = (
    st.none()
    | st.sampled_from(["3.0", "6.0", "7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "12.0"])
    | st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}", fullmatch=True)
)
gpu = section(
    {"name": st.sampled_from(GPU_NAMES) | st.text(max_size=256)},
    index=st.integers(0, 64),
    vendor=st.sampled_from(["nvidia", "amd", "intel", "apple", "other"]),
    arch=st.none() | st.sampled_from(["gfx90a", "gfx942", "gfx908", "gfx1100", "gfx1032", "gfx1151"]) | text,
    compute_capability=capabilities,
    memory_mib=st.none() | st.integers(0, 2**21),
    mig=st.none() | st.booleans(),
    uuid=maybe_text,
    serial=maybe_text,
    pci_bus_id=maybe_text,
)
hex_id = st.from_regex(r"0x[0-9a-f]{4}", fullmatch=True)
pci_device = section(
    {
        "address": text,
        "vendor_id": st.sampled_from(["0x10de", "0x1002", "0x1ae0"]) | hex_id,
        "device_id": st.sampled_from(["0x1eb8", "0x2330", "0x2184", "0x005e", "0x0063"]) | hex_id,
    },
    vendor=st.sampled_from(["nvidia", "amd", "google", "intel", "other"]),
    **{"class": st.none() | st.sampled_from(["0x030200", "0x030000", "0x120000"]) | text},
    driver=st.none() | st.sampled_from(["nvidia", "nouveau", "vfio-pci"]) | text,
    device_nodes=st.none() | st.booleans(),
)
library = section(
    version=any_version,
    source=st.sampled_from(["pip", "loader", "header", "nvcc"]) | text,
    path=maybe_text,
    found=st.lists(section(version=any_version, source=text, path=maybe_text), max_size=3),
)
facts_documents = section(
    {"schema_version": st.just(1)},
    os=section(
        system=st.sampled_from(["Linux", "Windows", "Darwin"]) | text,
        release=text,
        machine=text,
        wsl=st.booleans(),
        container=st.none() | st.sampled_from(["docker"]) | text,
    ),
    python=section(
        version=versions(["3.6.9", "3.10.12", "3.11.7", "3.13.1"]), implementation=text, executable=text
    ),
    environment=st.dictionaries(
        st.sampled_from(["TF_ENABLE_ONEDNN_OPTS", "CUDA_VISIBLE_DEVICES", "TPU_ACCELERATOR_TYPE"]) | text,
        st.sampled_from(["0", "1", ""]) | text,
        max_size=3,
    ),
    cpu=section(
        arch=st.sampled_from(["x86_64", "aarch64", "ppc64le", "i686", "AMD64", ""]) | text,
        vendor=st.none() | st.sampled_from(["GenuineIntel", "AuthenticAMD"]) | text,
        model=maybe_text,
        flags=st.lists(st.sampled_from(CPU_FLAGS) | text, unique=True, max_size=12),
        logical_cpus=st.integers(1, 4096),
        source=text,
    ),
    gpus=st.lists(gpu, max_size=4),
    nvidia_driver=section(
        version=versions(["418.43", "515.105.01", "550.54.15", "595.80"]),
        cuda=versions(CUDA_VERSIONS),
        nvml_version=any_version,
    ),
    pci=section(devices=st.lists(pci_device, max_size=4)),
    cuda=library,
    cudnn=library,
    tpu=section(
        present=st.booleans(),
        type=st.none() | st.sampled_from(["v2", "v3", "v4", "v5e", "v5p", "v6e"]) | text,
        chips=st.none() | st.integers(0, 64),
        detected_by=st.lists(text, max_size=2),
    ),
    frameworks=section(
        tensorflow=section(
            version=versions(TF_VERSIONS),
            package=st.sampled_from(["tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-tpu"]) | text,
            cuda_build=st.booleans(),
            rocm_build=st.booleans(),
            cuda=versions(CUDA_VERSIONS),
            cudnn=versions(["8", "9", "8.9", "9.3"]),
            location=text,
        ),
        keras=section(
            version=any_version,
            tf_keras=any_version,
            legacy=st.booleans(),
            tf_keras_major=st.sampled_from([2, 3, None]),
        ),
        torch=section(version=versions(["2.5.1+cu124", "2.13.0+cpu"]), cuda=versions(CUDA_VERSIONS)),
        jax=section(version=any_version, jaxlib=any_version),
    ),
)
probe_statuses = st.none() | st.dictionaries(
    st.sampled_from(PROBE_NAMES),
    st.fixed_dictionaries(
        {"status": st.sampled_from(["ok", "absent", "error", "timeout", "file"]), "reason": maybe_text}
    ),
)


def check_coherent(recommendation, facts: dict) -> None:
    """What must hold for any machine: a known policy and device, and advice that matches them."""
    assert recommendation.policy in POLICIES
    assert recommendation.device in DEVICES
    assert recommendation.loss_scaling == (recommendation.policy == "mixed_float16")
    # SPEC §3: float16 is GPU advice only (on CPUs it ran 450x slower than float32): NVIDIA's,
    # Apple's (mps) or Intel's (xpu).
    if recommendation.policy == "mixed_float16":
        assert recommendation.device in ("gpu", "mps", "xpu")
    if recommendation.device == "gpu":
        # The runtime names the vendor: CUDA drives NVIDIA's GPUs, ROCm AMD's.
        vendor = {"cuda": "nvidia", "rocm": "amd"}[recommendation.runtime]
        assert any(g.get("vendor", "nvidia") == vendor for g in facts.get("gpus", []))
    else:
        assert recommendation.runtime == recommendation.device
    for device, vendor in (("mps", "apple"), ("xpu", "intel")):
        if recommendation.device == device:
            assert any(g.get("vendor") == vendor for g in facts.get("gpus", []))
    if recommendation.device == "tpu":
        assert facts.get("tpu", {}).get("present") is True
    assert recommendation.reasons
    for finding in recommendation.findings:
        assert finding.severity in SEVERITIES and finding.id and finding.message
    json.dumps(recommendation.to_dict())


@SETTINGS
@given(facts_documents, st.sampled_from(FRAMEWORKS), st.sampled_from((None, *PREFERENCES)), probe_statuses)
def test_any_valid_facts_document_gets_a_coherent_recommendation(facts, framework, prefer, probes):
    validate_facts(facts, "generated")
    check_coherent(recommend(facts, probes=probes, framework=framework, prefer=prefer), facts)


# Fields the schema requires (the document's version, a GPU's name, a PCI device's identity).
REQUIRED = frozenset({"schema_version", "name", "address", "vendor_id", "device_id"})


def _drop_paths(document: dict, choices: list[bool]) -> dict:
    """A copy of `document` without the optional fields whose coin in `choices` came up True."""
    coins = iter(choices)

    def prune(value):
        if isinstance(value, dict):
            # A bench block is dropped whole or kept whole: its own schema requires most of its keys.
            return {
                k: v if k == "measurements" else prune(v)
                for k, v in value.items()
                if k in REQUIRED or not next(coins, False)
            }
        if isinstance(value, list):
            return [prune(item) for item in value]
        return value

    return prune(document)


@SETTINGS
@given(st.sampled_from(PROFILES), st.lists(st.booleans(), max_size=80), st.sampled_from((None, *PREFERENCES)))
def test_real_machines_with_facts_missing_still_get_a_coherent_recommendation(profile, coins, prefer):
    facts = _drop_paths(profile.facts, coins)
    validate_facts(facts, profile.name)
    check_coherent(recommend(facts, framework=profile.framework, prefer=prefer), facts)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts_documents)
def test_doctor_reads_any_valid_facts_file_and_exits_0_or_1(facts):
    handle, path = tempfile.mkstemp(suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(facts, file)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["doctor", "--json", "--facts", path])
    finally:
        os.unlink(path)
    assert status in (0, 1), err.getvalue()
    report = json.loads(out.getvalue())
    expected = recommend(facts, probes=report["probes"])
    assert report["recommendation"]["policy"] == expected.policy
    assert status == (1 if expected.has_errors else 0)
