"""CPU bfloat16 classes on recorded /proc/cpuinfo dumps: each class and runtime, its evidence."""

from __future__ import annotations

import pytest
from profiles import NO_PCI_ACCELERATOR, TORCH_CPU, cpu, machine, with_tensorflow

from hwcheck.engine import build_context
from hwcheck.recommendation import recommend

JAX_CPU = {"frameworks": {"jax": {"version": "0.10.2", "jaxlib": "0.10.2"}}}
RUNTIMES = {"torch": TORCH_CPU, "tensorflow": with_tensorflow("2.21.0", python="3.11.7"), "jax": JAX_CPU}


def facts_for(dump: str, runtime: str, **os_facts: str) -> dict:
    """A CPU-only machine from a recorded dump with one framework installed."""
    return machine(cpu(dump), NO_PCI_ACCELERATOR, RUNTIMES[runtime], {"os": os_facts} if os_facts else {})


# dump -> its class, and the policy per runtime (from rules/knowledge/cpu_features.toml's evidence).
BF16 = "mixed_bfloat16"
CASES = [
    ("intel-sapphirerapids-xeon-platinum-8480plus", "amx_bf16", BF16, BF16, "float32"),
    ("intel-sapphirerapids-class-vm-hwcheck-dev", "amx_bf16", BF16, BF16, "float32"),
    ("amd-zen4-epyc-9654", "avx512_bf16", "mixed_bfloat16", "float32", "float32"),
    ("amd-epyc-avx512bf16-vm-hwcheck-dev", "avx512_bf16", "mixed_bfloat16", "float32", "float32"),
    ("arm-graviton3-neoverse-v1", "arm_bf16", "float32", "float32", "float32"),
    ("arm-neoverse-v2", "arm_bf16", "float32", "float32", "float32"),
    ("amd-zen3-ryzen9-5950x", "none", "float32", "float32", "float32"),
    ("intel-haswell-xeon-e5-2680v3", "none", "float32", "float32", "float32"),
    ("intel-cascadelake-xeon-platinum-8260m", "none", "float32", "float32", "float32"),
    ("apple-m1-asahi-linux", "none", "float32", "float32", "float32"),
    ("arm-graviton2-neoverse-n1", "none", "float32", "float32", "float32"),
]


@pytest.mark.parametrize(("dump", "bf16_class", "torch", "tensorflow", "jax"), CASES)
def test_each_class_gets_the_policy_its_evidence_supports(dump, bf16_class, torch, tensorflow, jax):
    for runtime, policy in (("torch", torch), ("tensorflow", tensorflow), ("jax", jax)):
        facts = facts_for(dump, runtime)
        assert build_context(facts, framework=runtime)["cpu"]["bf16_class"] == bf16_class
        recommendation = recommend(facts, framework=runtime)
        assert (recommendation.policy, recommendation.device) == (policy, "cpu"), runtime
        message = recommendation.reasons[0].message
        # Every CPU decision cites its evidence (what was measured, where: a [source]) or says none is known.
        cited = "[" in message and "]" in message
        assert cited or "no measurement of bfloat16 training" in message, message
        # The old blanket claim, contradicted by measurements on AVX-512 BF16, is gone.
        assert "runs slower than float32 on such CPUs" not in message


def test_avx512_bf16_in_tensorflow_says_the_evidence_is_split_and_to_measure():
    recommendation = recommend(facts_for("amd-zen4-epyc-9654", "tensorflow"), framework="tensorflow")
    message = recommendation.reasons[0].message
    assert "the evidence on bfloat16 is split" in message and "hwcheck doctor --measure" in message
    assert "1.28x" in message and "tensorflow.org/guide/mixed_precision" in message
    assert "cpu-bf16-measure" in {finding.id for finding in recommendation.findings}


def test_avx512_bf16_in_torch_cites_the_measurement_with_its_date_and_spread():
    recommendation = recommend(facts_for("amd-epyc-avx512bf16-vm-hwcheck-dev", "torch"), framework="torch")
    message = recommendation.reasons[0].message
    assert "1.89x" in message and "1.72-2.20x" in message and "2026-11-25" in message


def test_amx_under_a_kernel_before_5_16_warns():
    # Mainline Linux enables AMX tile state from 5.16; distributions backport it, so an old release warns.
    facts = facts_for("intel-sapphirerapids-xeon-platinum-8480plus", "torch", release="5.10.0-28-amd64")
    context = build_context(facts, framework="torch")["cpu"]
    assert (context["bf16_class"], context["amx_kernel_too_old"]) == ("amx_bf16", True)
    recommendation = recommend(facts, framework="torch")
    assert "cpu-amx-kernel-too-old" in {finding.id for finding in recommendation.findings}
    newer = facts_for("intel-sapphirerapids-xeon-platinum-8480plus", "torch", release="6.8.0-45-generic")
    assert build_context(newer, framework="torch")["cpu"]["amx_kernel_too_old"] is False


@pytest.mark.parametrize("runtime", ["torch", "tensorflow", "jax"])
def test_float16_on_a_cpu_says_what_each_framework_does(runtime):
    zen4 = recommend(facts_for("amd-zen4-epyc-9654", runtime), framework=runtime)
    text = " ".join(zen4.why_not("mixed_float16"))
    assert {"torch": "PyTorch", "tensorflow": "oneDNN", "jax": "JAX"}[runtime] in text
    # A framework's figure is not stated as another's.
    if runtime != "tensorflow":
        assert "450x" not in text
    assert "has no float16 arithmetic" in text
    # A CPU with AVX512-FP16 / AMX-FP16 does float16 math natively: "emulated" would be false.
    sapphire = recommend(facts_for("intel-sapphirerapids-xeon-platinum-8480plus", runtime), framework=runtime)
    native = " ".join(sapphire.why_not("mixed_float16"))
    assert "emulated" not in native and "does have float16 arithmetic" in native


@pytest.mark.parametrize("dump", [case[0] for case in CASES])
@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_the_class_reads_as_words_and_borrowed_evidence_says_why_it_applies(dump, runtime):
    # "slower than float32 on no bfloat16 instructions" read as if the label were a machine;
    # each class is named by its phrase after "on", and evidence measured on another CPU says
    # why it holds for this one.
    from hwcheck.knowledge.cpu import _bf16_classes

    recommendation = recommend(facts_for(dump, runtime), framework=runtime)
    texts = [reason.message for reason in recommendation.reasons]
    texts += [finding.message for finding in recommendation.findings]
    for policy in ("float32", "mixed_bfloat16", "mixed_float16"):
        texts += recommendation.why_not(policy)
    text = " ".join(texts)
    for row in _bf16_classes():
        assert f"on {row['label']}" not in text, (row["label"], text)
    if "[measured" in text or "[hwcheck bench" in text:
        assert "it applies here because" in text, text
