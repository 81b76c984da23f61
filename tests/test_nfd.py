"""`hwcheck nfd`: a Node Feature Discovery feature file that NFD accepts label by label.

The format rules below are taken from NFD's and Kubernetes' documentation, not from
hwcheck's code, so the file is checked against the rules themselves:

- NFD customization guide, "Local feature source" / "Input format"
  (kubernetes-sigs/node-feature-discovery docs/usage/customization-guide.md): lines are
  `<key>[=<value>]`, `#` starts a comment, `# +expiry-time=<RFC3339>` is a directive, the
  label namespace must be given, files over 64 kB are ignored (source/local/local.go:
  MaxFeatureFileSize = 65536), dot files are ignored (write `.name`, then rename).
- nfd-master keeps a label only if the key is a Kubernetes qualified name with a prefix,
  the prefix is not kubernetes.io or *.kubernetes.io unless it is (a subdomain of)
  feature.node.kubernetes.io or profile.node.kubernetes.io, and the value is a valid label
  value (pkg/apis/nfd/validate/validate.go Label(); docs/reference/master-commandline-
  reference.md, -deny-label-ns).
- Kubernetes "Labels and Selectors", syntax and character set, as implemented in
  k8s.io/apimachinery/pkg/util/validation/validation.go: name part <= 63 characters
  matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]; prefix a DNS-1123 subdomain <= 253
  characters, [a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*; value
  <= 63 characters matching (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from inventory_helpers import profile_facts

from conftest import ROOT, run_hwcheck
from hwcheck.cli import main
from hwcheck.inventory.nfd import DEFAULT_FEATURE_FILE, feature_file_text, label_value, node_labels
from hwcheck.recommendation import recommend

K8S_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
K8S_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
K8S_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NFD_MAX_FILE_BYTES = 65536
NFD_ALWAYS_ALLOWED = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")


def nfd_labels(text: str) -> dict[str, str]:
    """Parse a feature file as nfd-worker and nfd-master would, failing on anything they drop."""
    assert len(text.encode()) <= NFD_MAX_FILE_BYTES
    labels: dict[str, str] = {}
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# +"):
                directive, _, value = line[3:].partition("=")
                assert directive == "expiry-time", line
                datetime.strptime(value.strip(), "%Y-%m-%dT%H:%M:%SZ")  # RFC 3339, UTC
            continue
        key, _, value = line.partition("=")
        prefix, slash, name = key.partition("/")
        assert slash, f"{key}: no namespace"
        assert len(prefix) <= 253 and K8S_PREFIX.match(prefix), key
        kubernetes = prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")
        allowed = any(prefix == ns or prefix.endswith("." + ns) for ns in NFD_ALWAYS_ALLOWED)
        assert allowed or not kubernetes, f"{key}: nfd-master denies this namespace"
        assert "/" not in name and len(name) <= 63 and K8S_NAME.match(name), key
        assert len(value) <= 63 and K8S_VALUE.match(value), f"{key}={value}"
        assert key not in labels, f"{key} given twice"
        labels[key] = value
    return labels


def labels_of(profile: str) -> dict[str, str]:
    """The labels hwcheck writes for a profile, read back through the NFD rules."""
    facts = profile_facts(profile)
    text = feature_file_text(node_labels(facts, recommend(facts)))
    prefix = "feature.node.kubernetes.io/hwcheck-"
    return {key.removeprefix(prefix): value for key, value in nfd_labels(text).items()}


@pytest.mark.parametrize(
    ("profile", "expected", "absent"),
    [
        (
            "a100-sxm4x8-epyc",
            {
                "policy": "mixed_bfloat16",
                "device": "gpu",
                "loss-scaling": "false",
                "errors": "0",
                "gpu.count": "8",
                "gpu.product": "NVIDIA-A100-SXM4-80GB",
                "gpu.compute.major": "8",
                "gpu.compute.minor": "0",
                "gpu.fp16-tensor-cores": "true",
                "gpu.bf16": "true",
                "gpu.tf32": "true",
                "gpu.fp8": "false",
                "cpu.amx-bf16": "false",
            },
            # One name per fact (GPU Feature Discovery's): no compute-capability duplicates.
            ("gpu.mixed", "tpu", "gpu.compute-capability", "gpu.compute-capability.major", "gpu.model"),
        ),
        (
            "v100-sxm2x8-broadwell",
            {
                "policy": "mixed_float16",
                "loss-scaling": "true",
                "gpu.product": "Tesla-V100-SXM2-16GB",
                "gpu.compute.major": "7",
                "gpu.compute.minor": "0",
                "gpu.fp16-tensor-cores": "true",
                "gpu.bf16": "false",
                "gpu.tf32": "false",
            },
            (),
        ),
        (
            "h100x8-sapphirerapids",
            {
                "gpu.product": "NVIDIA-H100-80GB-HBM3",
                "gpu.compute.major": "9",
                "gpu.fp8": "true",
                "cpu.amx-bf16": "true",
                "cpu.avx512-bf16": "true",
            },
            (),
        ),
        # The T4's driver is too old for its TensorFlow: CPU advice, one error, and the GPU's
        # capability still labelled (from the knowledge table: nvidia-smi -q has none).
        (
            "t4-vm-old-driver",
            {
                "policy": "float32",
                "device": "cpu",
                "errors": "1",
                "gpu.compute.major": "7",
                "gpu.compute.minor": "5",
            },
            (),
        ),
        (
            "sapphirerapids-cpu",
            {"policy": "mixed_bfloat16", "device": "cpu", "cpu.amx-bf16": "true"},
            ("gpu.count", "gpu.compute.major", "gpu.compute-capability", "gpu.bf16"),
        ),
        (
            "haswell-cpu",
            {"policy": "float32", "device": "cpu", "cpu.amx-bf16": "false", "cpu.avx512-bf16": "false"},
            ("gpu.count",),
        ),
    ],
)
def test_labels_describe_the_policy_and_the_hardware(profile, expected, absent):
    labels = labels_of(profile)
    assert {name: labels.get(name) for name in expected} == expected
    assert not set(absent) & set(labels)
    assert labels["version"]


def test_gpu_models_become_valid_label_values():
    assert label_value("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    assert label_value("  (GeForce) RTX 4090 / 24 GB!! ") == "GeForce-RTX-4090-24-GB"
    long_name = label_value("NVIDIA RTX 6000 Ada Generation " * 4)
    assert len(long_name) <= 63 and K8S_VALUE.match(long_name)


def test_the_command_writes_the_file_atomically_through_a_dot_file(tmp_path, monkeypatch):
    import hwcheck.render.report

    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(profile_facts("a100-sxm4x8-epyc")))
    features_d = tmp_path / "features.d"
    features_d.mkdir()
    (features_d / "hwcheck").write_text("feature.node.kubernetes.io/hwcheck-policy=float32\n")
    renames = []
    real_replace = hwcheck.render.report.os.replace

    def watched_replace(source, target):
        renames.append((Path(source), Path(target), Path(target).read_text()))
        real_replace(source, target)

    monkeypatch.setattr(hwcheck.render.report.os, "replace", watched_replace)
    status = main(["nfd", "-o", str(features_d / "hwcheck"), "--facts", str(facts_file)])
    assert status == 0
    ((temporary, target, before),) = renames
    # NFD skips dot files, so it never reads the half-written one; the old file stays whole.
    assert temporary.parent == features_d and temporary.name.startswith(".")
    assert target == features_d / "hwcheck"
    assert before == "feature.node.kubernetes.io/hwcheck-policy=float32\n"
    labels = nfd_labels(target.read_text())
    assert labels["feature.node.kubernetes.io/hwcheck-policy"] == "mixed_bfloat16"
    assert [p.name for p in features_d.iterdir()] == ["hwcheck"]


def test_nfd_and_report_name_the_file_they_wrote(tmp_path):
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(profile_facts("a100-sxm4x8-epyc")))
    for command, target in (("nfd", tmp_path / "features.d" / "hwcheck"), ("report", tmp_path / "r.json")):
        result = run_hwcheck(command, "-o", str(target), "--facts", str(facts_file))
        assert result.returncode == 0, result.stderr
        assert target.is_file()
        assert result.stdout.strip().startswith("wrote ") and str(target) in result.stdout


def test_ttl_adds_an_expiry_directive_and_dash_prints(tmp_path):
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(profile_facts("t4-vm-old-driver")))
    result = run_hwcheck(
        "nfd", "-o", "-", "--ttl", "3600", "--facts", str(facts_file), "--namespace", "hwcheck.example.com"
    )
    assert result.returncode == 1, result.stderr  # written, but an error-level finding
    labels = nfd_labels(result.stdout)
    assert labels["hwcheck.example.com/hwcheck-errors"] == "1"
    (directive,) = [line for line in result.stdout.splitlines() if line.startswith("# +")]
    expires = datetime.strptime(directive.split("=", 1)[1], "%Y-%m-%dT%H:%M:%SZ")
    expected = datetime.now(UTC).replace(tzinfo=None) + timedelta(hours=1)
    assert abs(expires - expected) < timedelta(minutes=2)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--namespace", "node.kubernetes.io"), "nfd-master always denies"),
        (("--namespace", "Hwcheck.Example"), "not a DNS subdomain"),
        (("-o", "/dev/null/features.d/hwcheck"), "cannot write"),  # a folder that cannot be made
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, arguments, message):
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(profile_facts("haswell-cpu")))
    result = run_hwcheck("nfd", "--facts", str(facts_file), *arguments)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_daemonset_writes_where_nfd_reads_on_every_node():
    yaml = pytest.importorskip("yaml")
    manifest = yaml.safe_load((ROOT / "deploy" / "hwcheck-nfd-daemonset.yaml").read_text())
    assert manifest["kind"] == "DaemonSet" and manifest["apiVersion"] == "apps/v1"
    pod = manifest["spec"]["template"]["spec"]
    assert {"operator": "Exists"} in pod["tolerations"]  # tainted GPU nodes too
    (container,) = pod["containers"]
    script = " ".join(container["command"] + container["args"])
    assert f"hwcheck nfd --ttl 10800 -o {DEFAULT_FEATURE_FILE}" in script
    assert "sleep 3600" in script  # rewritten well before the 3-hour expiry
    (mount,) = container["volumeMounts"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    features_d = str(Path(DEFAULT_FEATURE_FILE).parent)
    assert mount["mountPath"] == volume["hostPath"]["path"] == features_d
    assert features_d == "/etc/kubernetes/node-feature-discovery/features.d"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # Facts replayed from pytorch/pytorch#164943 and the Intel Arc A770 issues (tests/corpus).
        (
            "macos13-m2max-torch210-mps-floor",
            {"device": "cpu", "errors": "1", "apple-gpu.model": "Apple-M2-Max", "apple-gpu.macos": "13.7.4"},
        ),
        (
            "healthy-arc-a770-torch212-xpu",
            {"device": "xpu", "policy": "mixed_bfloat16", "intel-gpu.count": "1", "intel-gpu.xmx": "true"},
        ),
    ],
)
def test_apple_and_intel_gpus_get_their_own_labels(case, expected):
    facts = json.loads((ROOT / "tests/corpus/cases" / f"{case}.json").read_text())
    text = feature_file_text(node_labels(facts, recommend(facts, framework="torch")))
    prefix = "feature.node.kubernetes.io/hwcheck-"
    labels = {key.removeprefix(prefix): value for key, value in nfd_labels(text).items()}
    assert {name: labels.get(name) for name in expected} == expected
    # GPU Feature Discovery's count and product name every vendor's GPUs; the rest stay NVIDIA's.
    assert (labels["gpu.count"], labels["gpu.product"]) == (
        "1",
        labels.get("apple-gpu.model") or "Intel-Arc-A770",
    )
    assert "gpu.compute-capability" not in labels


CPU_AMX = ROOT / "tests" / "fixtures" / "facts" / "cpu-amx-torch213-jax0102.json"
T4_TRAINERS = ROOT / "tests" / "fixtures" / "facts" / "t4-torch201-trainers.json"


def _labels(*arguments: str) -> dict[str, str]:
    result = run_hwcheck("nfd", "-o", "-", *arguments)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
    return dict(line.removeprefix("feature.node.kubernetes.io/hwcheck-").split("=", 1) for line in lines)


@pytest.mark.parametrize(("framework", "policy"), [("torch", "mixed_bfloat16"), ("jax", "float32")])
def test_framework_chooses_whose_policy_the_labels_give_and_names_it(framework, policy):
    # The recorded AMX VM with PyTorch, JAX and TensorFlow: bfloat16 is measured for PyTorch there,
    # not for JAX on the CPU.
    labels = _labels("--framework", framework, "--facts", str(CPU_AMX))
    assert labels["framework"] == framework
    assert labels[f"{framework}.policy"] == labels["policy"] == policy


def test_gpu_labels_carry_gpu_feature_discoverys_names_too():
    labels = _labels("--framework", "lightning", "--facts", str(T4_TRAINERS))
    assert labels["lightning.precision"] == "16-mixed"
    # NVIDIA GPU Feature Discovery's names: gpu.compute.major/minor, gpu.family, gpu.memory,
    # cuda.driver.* (the driver release), cuda.runtime.* (the CUDA version the driver supports).
    expected = {
        "gpu.compute.major": "7",
        "gpu.compute.minor": "5",
        "gpu.family": "turing",
        "gpu.memory": "15360",
        "cuda.driver.major": "515",
        "cuda.driver.minor": "105",
        "cuda.driver.rev": "01",
        "cuda.runtime.major": "11",
        "cuda.runtime.minor": "7",
    }
    assert {name: labels.get(name) for name in expected} == expected


@pytest.mark.parametrize(
    ("fixture", "framework", "ready", "checks"),
    [
        # A V100 whose driver is older than its TensorFlow's CUDA: doctor exits 1 on it.
        ("v100-driver-too-old", "tensorflow", "false", {"failing.driver-too-old-for-framework"}),
        # Recorded in a private mount namespace with a 64 MiB /dev/shm: a warning, still ready.
        ("cpu-docker-shm64m-torch213", "torch", "true", {"warning.node-shm-small"}),
        ("h100-anchor-torch211", "torch", "true", set()),
    ],
)
def test_a_scheduler_can_select_ready_nodes_and_see_what_fails(fixture, framework, ready, checks):
    facts = f"tests/fixtures/facts/{fixture}.json"
    nfd = run_hwcheck("nfd", "-o", "-", "--facts", facts, "--framework", framework)
    doctor = run_hwcheck("doctor", "--json", "--facts", facts, "--framework", framework)
    # One answer: doctor's exit status, nfd's (the file is written all the same) and the label.
    assert nfd.returncode == doctor.returncode == (1 if ready == "false" else 0), nfd.stderr
    lines = [line for line in nfd.stdout.splitlines() if line and not line.startswith("#")]
    labels = dict(line.removeprefix("feature.node.kubernetes.io/hwcheck-").split("=", 1) for line in lines)
    assert labels["ready"] == ready
    assert {name for name in labels if name.startswith(("failing.", "warning."))} == checks
    assert all(labels[name] == "true" for name in checks)


def test_check_labels_stay_valid_and_bounded_whatever_a_site_rule_calls_its_finding():
    from hwcheck.engine.outcome import Finding
    from hwcheck.inventory.nfd import MAX_CHECK_LABELS, readiness_labels

    hostile = ["x" * 80, "--<script>--", "ünïcode.id", *[f"site-error-{n}" for n in range(40)]]
    facts = json.loads((ROOT / "tests" / "fixtures" / "facts" / "h100-anchor-torch211.json").read_text())
    recommendation = recommend(facts)
    recommendation.findings = tuple(Finding(i, "error", "m", "r") for i in hostile)
    labels = readiness_labels(recommendation)
    text = feature_file_text(labels)  # raises if nfd-master would drop a label
    assert labels["ready"] == "false"
    failing = [name for name in labels if name.startswith("failing.")]
    assert 0 < len(failing) <= MAX_CHECK_LABELS
    assert all(len(f"hwcheck-{name}") <= 63 for name in failing)
    written = [line for line in text.splitlines() if not line.startswith("#")]
    assert not [line for line in written if "<" in line or "ü" in line]


def test_unknown_readiness_writes_no_ready_label(monkeypatch):
    # readiness() says unknown (None) where nothing was advised; nfd must not turn that into false.
    from hwcheck.inventory.nfd import readiness_labels
    from hwcheck.recommendation import readiness as module

    unknown = module.readiness(None)
    assert unknown["ready"] is None
    monkeypatch.setattr(module, "readiness", lambda findings: unknown)
    facts = json.loads((ROOT / "tests" / "fixtures" / "facts" / "h100-anchor-torch211.json").read_text())
    labels = readiness_labels(recommend(facts))
    assert "ready" not in labels
    assert not [name for name in labels if name.startswith(("failing.", "warning."))]
