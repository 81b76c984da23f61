"""Node Feature Discovery labels: a features.d file that nfd-worker turns into node labels.

Format (NFD customization guide, "Local feature source" / "Input format"): one
`<namespace>/<name>[=<value>]` per line, `#` comments, `# +expiry-time=<RFC3339>`
directives, at most 64 KiB, dot files ignored (so a file is written as a dot file and
renamed). nfd-master keeps a label only if its key is a Kubernetes qualified name with a
namespace outside kubernetes.io (feature.node.kubernetes.io is always allowed) and its
value a valid label value (k8s.io/apimachinery pkg/util/validation: IsQualifiedName,
IsValidLabelValue; NFD pkg/apis/nfd/validate Label()).
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import TYPE_CHECKING, Any

from hwcheck.base import __version__
from hwcheck.base.numbers import whole_or_none
from hwcheck.base.versions import parse_version

if TYPE_CHECKING:
    from datetime import datetime

    from hwcheck.devices import Device
    from hwcheck.recommendation import Recommendation

DEFAULT_FEATURE_FILE = "/etc/kubernetes/node-feature-discovery/features.d/hwcheck"
# NFD's own namespace: nfd-master never denies it (-deny-label-ns cannot touch it).
DEFAULT_NAMESPACE = "feature.node.kubernetes.io"
NAME_PREFIX = "hwcheck-"
MAX_FEATURE_FILE_BYTES = 65536  # source/local MaxFeatureFileSize
MIB = 2**20
# Failing checks (and node warnings) labelled one by one, at most: the rest are in hwcheck-errors.
MAX_CHECK_LABELS = 16

# Compiled on first use (re caches them): the CLI imports this module for its defaults.
# Always used with re.fullmatch: `$` would also match before a trailing newline.
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_NOT_VALUE_CHARACTERS = r"[^-A-Za-z0-9_.]+"
_ALLOWED_KUBERNETES_NAMESPACES = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")


def node_labels(facts: dict[str, Any], recommendation: Recommendation) -> dict[str, str]:
    """Label names (without namespace) and values for this machine's facts and advice."""
    from hwcheck import devices, knowledge
    from hwcheck.engine.seen import seen_devices
    from hwcheck.facts import section

    # The GPU labels describe the GPUs the recommendation was made for: those the process sees.
    backend, found = seen_devices(facts, recommendation.framework)
    framework = recommendation.framework
    labels = {
        "policy": recommendation.policy,
        # Whose policy it is: the framework (or trainer) the advice was written for, and the
        # policy again under its name, so that nodes advised for several frameworks can say each.
        "framework": framework,
        f"{framework}.policy": recommendation.policy,
        "device": recommendation.device,
        "loss-scaling": _bool(recommendation.loss_scaling),
        "errors": str(sum(f.severity == "error" for f in recommendation.findings)),
        "version": __version__,
    }
    if isinstance(recommendation.native, str):
        labels[f"{framework}.precision"] = recommendation.native  # Lightning's or Accelerate's word
    labels.update(readiness_labels(recommendation))
    nvidia = [device for device in found if device.vendor == "nvidia"]
    if nvidia:
        labels.update(_nvidia_labels(facts, nvidia, backend))
    training = devices.training(facts, backend)
    gpus = [device for device in training if device.kind == "gpu"]
    labels.update(device_labels(gpus, labels))
    labels.update(precision_labels("gpu", gpus, labels))
    accelerators = [device for device in training if device.kind == "accelerator"]
    if accelerators:
        labels["accelerator.count"] = str(len(accelerators))
        labels["accelerator.product"] = sorted({device.name for device in accelerators})[0]
        labels.update(precision_labels("accelerator", accelerators, labels))
    apple = [device for device in found if device.vendor == "apple"]
    if apple:
        labels["apple-gpu.model"] = apple[0].name
        macos = section(facts, "os").get("macos")
        if parse_version(macos):
            labels["apple-gpu.macos"] = str(macos)
    intel = [device for device in found if device.vendor == "intel"]
    if intel:
        labels["intel-gpu.count"] = str(len(intel))
        labels["intel-gpu.xmx"] = _bool(all(device.bfloat16 is True for device in intel))
    cpu = section(facts, "cpu")
    flags = cpu.get("flags")
    if knowledge.arch_family(cpu.get("arch")) == "x86" and "flags" in cpu and isinstance(flags, list):
        labels["cpu.amx-bf16"] = _bool("amx_bf16" in flags)
        labels["cpu.avx512-bf16"] = _bool("avx512_bf16" in flags)
    if section(facts, "tpu").get("present"):
        labels["tpu"] = "true"
        if (facts.get("tpu") or {}).get("type"):
            labels["tpu.type"] = label_value(facts["tpu"]["type"])
    return {name: label_value(value) for name, value in labels.items()}


def _nvidia_labels(facts: dict[str, Any], gpus: list[Device], backend: str) -> dict[str, str]:
    """The NVIDIA GPUs' labels: count, product (the weakest GPU's model) and what they compute in."""
    from hwcheck import devices
    from hwcheck.devices import cuda_visibility as visibility

    visible = list(visibility.resolve(devices.complete(facts), backend).gpus)
    known = [gpu for gpu in gpus if gpu.architecture]
    weakest = min(known, key=lambda gpu: parse_version(gpu.architecture) or (), default=None)
    labels = {
        "gpu.count": str(len(gpus)),
        # GPU Feature Discovery's name for the model (one name per fact): the weakest GPU's.
        "gpu.product": _weakest_model(visible, weakest.label if weakest else None),
    }
    if len({gpu.architecture for gpu in known}) > 1 or len({gpu.float16 for gpu in known}) > 1:
        labels["gpu.mixed"] = "true"
    if any(gpu.mig for gpu in gpus):
        labels["gpu.mig"] = "true"
    if weakest is not None and len(known) == len(gpus):
        major, minor = str(weakest.architecture).split(".")[:2]
        # GPU Feature Discovery's names (gpu.compute.major/minor), one name per fact.
        labels["gpu.compute.major"] = major
        labels["gpu.compute.minor"] = minor
        labels["gpu.fp16-tensor-cores"] = _bool(all(gpu.float16 for gpu in known))
        labels["gpu.bf16"] = _bool(all(gpu.bfloat16 for gpu in known))
        labels["gpu.tf32"] = _bool(all(gpu.tf32 for gpu in known))
        labels["gpu.fp8"] = _bool(all(gpu.fp8 for gpu in known))
    labels.update(_gfd_labels(facts, gpus))
    return labels


def readiness_labels(recommendation: Recommendation) -> dict[str, str]:
    """`ready` (true unless a finding is an error) and one label per failing check and node warning.

    Known, absent and unknown are three things: where readiness is unknown no `ready` label is
    written, so a scheduler selecting on `hwcheck-ready` neither takes nor rules out the node.
    A scheduler selects on `hwcheck-ready=true`; `hwcheck-failing.<check>=true` and
    `hwcheck-warning.<check>=true` name what stops or slows training (recommendation/readiness.py),
    MAX_CHECK_LABELS of each at most, a check's id cut to fit a label name's 63 characters.
    """
    from hwcheck.recommendation.readiness import readiness

    state = readiness((finding.id, finding.severity) for finding in recommendation.findings)
    labels = {} if state["ready"] is None else {"ready": _bool(state["ready"])}
    for kind, checks in (("failing", state["failing"]), ("warning", state["warnings"])):
        for check in checks[:MAX_CHECK_LABELS]:
            room = 63 - len(f"{NAME_PREFIX}{kind}.")
            name = re.sub(r"[^A-Za-z0-9]+\Z", "", label_value(check)[:room])
            if name:
                labels[f"{kind}.{name}"] = "true"
    return labels


def feature_file_text(
    labels: dict[str, str],
    *,
    namespace: str = DEFAULT_NAMESPACE,
    now: datetime | None = None,
    ttl_seconds: float | None = None,
) -> str:
    """The features.d file: a header comment, an optional expiry directive, one label a line."""
    from datetime import datetime, timedelta

    problem = namespace_problem(namespace)
    if problem:
        raise ValueError(problem)
    now = now or datetime.now(UTC)
    lines = [
        f"# Written by hwcheck {__version__} (`hwcheck nfd`) at {_rfc3339(now)}.",
        "# The precision recommended for this node (hwcheck-policy, and",
        "# hwcheck-<framework>.policy for the framework it was written for, named in",
        "# hwcheck-framework), and the facts behind it.",
    ]
    if ttl_seconds is not None:
        # NFD drops the labels after this time unless hwcheck rewrites the file first.
        lines.append(f"# +expiry-time={_rfc3339(now + timedelta(seconds=ttl_seconds))}")
    for name, value in labels.items():
        key = f"{namespace}/{NAME_PREFIX}{name}"
        problem = label_problem(key, value)
        if problem:
            raise ValueError(problem)
        lines.append(f"{key}={value}")
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) > MAX_FEATURE_FILE_BYTES:
        raise ValueError(f"feature file larger than NFD's {MAX_FEATURE_FILE_BYTES} byte limit")
    return text


def label_value(text: str) -> str:
    """`text` made a valid label value: other characters become '-', at most 63 characters, and
    "unknown" when no letter or digit of it is left (a value is never empty)."""
    value = re.sub(_NOT_VALUE_CHARACTERS, "-", str(text))[:63]
    return re.sub(r"\A[^A-Za-z0-9]+|[^A-Za-z0-9]+\Z", "", value) or "unknown"


def label_problem(key: str, value: str) -> str | None:
    """Why nfd-master would drop the label `key=value`, or None when it keeps it."""
    namespace, _, name = key.rpartition("/")
    if not namespace:
        return f"{key}: label names need a namespace prefix"
    problem = namespace_problem(namespace)
    if problem:
        return f"{key}: {problem}"
    if len(name) > 63 or not re.fullmatch(_NAME, name):
        return f"{key}: the name part must be 1-63 of [A-Za-z0-9-_.], alphanumeric at both ends"
    if len(value) > 63 or not re.fullmatch(_VALUE, value):
        return f"{key}={value}: values are at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends"
    return None


def namespace_problem(namespace: str) -> str | None:
    """Why nfd-master would refuse labels in `namespace`, or None."""
    if len(namespace) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, namespace):
        return f"namespace {namespace!r} is not a DNS subdomain (lower case, at most 253 characters)"
    kubernetes = namespace == "kubernetes.io" or namespace.endswith(".kubernetes.io")
    allowed = any(namespace == ns or namespace.endswith("." + ns) for ns in _ALLOWED_KUBERNETES_NAMESPACES)
    if kubernetes and not allowed:
        return (
            f"namespace {namespace!r}: nfd-master always denies kubernetes.io namespaces "
            "other than feature.node.kubernetes.io and profile.node.kubernetes.io"
        )
    return None


def _gfd_labels(facts: dict[str, Any], gpus: list[Device]) -> dict[str, str]:
    """The labels NVIDIA GPU Feature Discovery also writes, under GFD's names: a scheduler may use either.

    GFD (NVIDIA/k8s-device-plugin docs/gpu-feature-discovery, "Generated Labels"): gpu.family
    (the architecture in lower case), gpu.memory (MiB), cuda.driver.major/minor/rev (the driver
    release) and cuda.runtime.major/minor (the CUDA version the driver supports).
    """
    from hwcheck.devices.nvidia import driver_cuda
    from hwcheck.facts import section

    labels: dict[str, str] = {}
    families = {gpu.family for gpu in gpus if gpu.architecture and gpu.family}
    if len(families) == 1:
        labels["gpu.family"] = str(families.pop()).lower()
    # A Jetson's GPU shares the SoC's memory: it has no memory of its own to label.
    memory = [gpu.memory_bytes for gpu in gpus if gpu.memory_bytes and not gpu.unified]
    if memory:
        labels["gpu.memory"] = str(min(memory) // MIB)

    # ASCII digits only (base/numbers): a fullwidth "５３５" is no driver release a label may carry.
    release = str(section(facts, "nvidia_driver").get("version") or "").split(".")
    if len(release) >= 2 and all(whole_or_none(part) is not None for part in release):
        labels["cuda.driver.major"], labels["cuda.driver.minor"] = release[0], release[1]
        if len(release) >= 3:
            labels["cuda.driver.rev"] = release[2]
    cuda = str(driver_cuda(facts) or "").split(".")
    if len(cuda) == 2 and all(whole_or_none(part) is not None for part in cuda):
        labels["cuda.runtime.major"], labels["cuda.runtime.minor"] = cuda
    return labels


def device_labels(found: list[Device], have: dict[str, str]) -> dict[str, str]:
    """Count, product, memory and family of the devices a job runs on, any vendor's, by GFD's names.

    NVIDIA GPU Feature Discovery ("Generated Labels"): gpu.count, gpu.product (the model, spaces
    made dashes), gpu.memory (MiB), gpu.family (the architecture in lower case). Labels already
    written from the NVIDIA rules' variables stay as they are. AMD GPUs also get the AMD GPU node
    labeller's names (https://instinct.docs.amd.com/projects/k8s-device-plugin/en/latest/
    user-guide/configuration.html): amd.com/gpu.device-id (hex, no 0x), amd.com/gpu.vram (GiB, "192G")
    and amd.com/gpu.product-name, here as amd-gpu.device-id, amd-gpu.vram, amd-gpu.product-name.
    """
    if not found:
        return {}
    names = sorted({device.name for device in found})
    labels = {"gpu.count": str(len(found)), "gpu.product": have.get("gpu.product") or names[0]}
    sizes = [device.memory_bytes for device in found]
    known = [size for size in sizes if size]
    if known and len(known) == len(sizes):
        labels["gpu.memory"] = str(min(known) // MIB)
    families = {device.family for device in found}
    if len(families) == 1 and None not in families:
        labels["gpu.family"] = str(next(iter(families))).lower()
    amd = [device for device in found if device.vendor == "amd"]
    if amd and len(amd) == len(found):
        ids = {str(device.product_id or "").removeprefix("0x") for device in amd}
        if len(ids) == 1 and "" not in ids:
            labels["amd-gpu.device-id"] = ids.pop()
        if known and len(known) == len(sizes):
            labels["amd-gpu.vram"] = f"{min(known) // 2**30}G"
        labels["amd-gpu.product-name"] = names[0]
    return {name: value for name, value in labels.items() if name not in have}


def precision_labels(kind: str, found: list[Device], have: dict[str, str]) -> dict[str, str]:
    """`<kind>.bf16` and `<kind>.fp8`, any vendor's: whether every device runs it (the vendor
    tables' `fast` types: rules/knowledge/amd.toml, intel.toml, accelerators.toml, nvidia.toml).

    Three-valued: "false" when one device does not, "true" when every device does, and no label
    when one is unknown, so a scheduler selecting on it neither takes nor rules out the node.
    Labels already written (NVIDIA's, from the rules' variables) stay as they are.
    """
    labels = {}
    for name, feature in (("bf16", "bfloat16"), ("fp8", "fp8")):
        values = [getattr(device, feature) for device in found]
        if not values or f"{kind}.{name}" in have:
            continue
        if False in values:
            labels[f"{kind}.{name}"] = "false"
        elif None not in values:
            labels[f"{kind}.{name}"] = "true"
    return labels


def _weakest_model(gpus: list[dict[str, Any]], weakest: str | None) -> str:
    names = sorted({str(gpu.get("name") or "") for gpu in gpus} - {""})
    if weakest:
        # The engine labels GPUs "NAME (CC x.y)": the model is the longest name it starts with.
        matching = [name for name in names if weakest.startswith(name)]
        if matching:
            return max(matching, key=len)
    return names[0] if names else re.sub(r" \(CC [^)]*\)\Z", "", weakest or "") or "unknown"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _rfc3339(moment: datetime) -> str:

    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
