"""NVIDIA GPU models and compute capabilities: the [gpus] and [architectures] tables of nvidia.toml."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import load
from hwcheck.base.versions import major_minor, parse_version, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FEATURES = ("tensor_cores", "tf32", "bf16", "fp8")
_NAME_SEPARATORS = r"[\s\-_/(),]+"
_PCI_DEVICE_ID = r"(?:0x)?([0-9a-f]{4})"


def _name_tokens(name: str, drop_leading: frozenset[str]) -> tuple[str, ...]:
    tokens = [token for token in re.split(_NAME_SEPARATORS, name.lower()) if token]
    while tokens and tokens[0] in drop_leading:
        tokens.pop(0)
    return tuple(tokens)


class _GpuIndex(NamedTuple):
    drop_leading: frozenset[str]
    variant_tokens: tuple[re.Pattern[str], ...]
    # first name token -> (all name tokens, entry), longest names first
    by_first_token: dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]]
    exceptions: tuple[tuple[re.Pattern[str], dict[str, Any]], ...]
    # "0x2184" -> entry
    by_pci_device_id: dict[str, dict[str, Any]]


@cache
def _gpu_index() -> _GpuIndex:
    table = load("nvidia")["gpus"]
    drop_leading = frozenset(table["matching"]["drop_leading"])
    by_first_token: dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]] = {}
    for entry in table["gpu"]:
        for spelling in (entry["name"], *entry.get("aliases", ())):
            tokens = _name_tokens(spelling, drop_leading)
            by_first_token.setdefault(tokens[0], []).append((tokens, entry))
    for candidates in by_first_token.values():
        # Longest first: "H100 80GB HBM3" (the SXM board) before "H100" plus variant tokens.
        candidates.sort(key=lambda candidate: len(candidate[0]), reverse=True)
    return _GpuIndex(
        drop_leading=drop_leading,
        variant_tokens=tuple(re.compile(p) for p in table["matching"]["variant_tokens"]),
        by_first_token=by_first_token,
        exceptions=tuple(
            (re.compile(rule["name_regex"], re.IGNORECASE), rule) for rule in table.get("exceptions", ())
        ),
        by_pci_device_id={
            device_id: entry for entry in table["gpu"] for device_id in entry.get("pci_device_ids", ())
        },
    )


@lru_cache(maxsize=512)
def _matching_entry(name: str) -> dict[str, Any] | None:
    index = _gpu_index()
    tokens = _name_tokens(name, index.drop_leading)
    if not tokens:
        return None
    for candidate, entry in index.by_first_token.get(tokens[0], ()):
        rest = tokens[len(candidate) :]
        if tokens[: len(candidate)] == candidate and all(
            any(variant.match(token) for variant in index.variant_tokens) for token in rest
        ):
            return entry
    return None


def _exception_for(name: str) -> dict[str, Any] | None:
    return next((rule for pattern, rule in _gpu_index().exceptions if pattern.search(name)), None)


def _entry_by_pci_device_id(device_id: Any) -> dict[str, Any] | None:
    match = re.fullmatch(_PCI_DEVICE_ID, device_id.strip().lower()) if isinstance(device_id, str) else None
    return _gpu_index().by_pci_device_id.get(f"0x{match.group(1)}") if match else None


def gpu_model(name: str | None, pci_device_id: str | None = None) -> dict[str, Any] | None:
    """The knowledge-base entry for a GPU name as NVML prints it, else for its PCI device id."""
    entry = _matching_entry(name.strip()) if isinstance(name, str) else None
    if entry is None:
        # Early drivers call a board newer than themselves "Graphics Device": its PCI id still says which.
        entry = _entry_by_pci_device_id(pci_device_id)
    if entry is None:
        return None
    model = {
        "name": entry["name"],
        "compute_capability": entry["compute_capability"],
        "segment": entry["segment"],
    }
    if "tensor_cores" in entry:
        model["tensor_cores"] = entry["tensor_cores"]
    exception = (_exception_for(name) if isinstance(name, str) else None) or _exception_for(entry["name"])
    if exception and "tensor_cores" in exception:
        model["tensor_cores"] = exception["tensor_cores"]
        model["exception"] = exception["reason"]
    return model


def gpu_model_by_pci_id(device_id: str) -> dict[str, Any] | None:
    """The knowledge-base entry for a PCI device id ("0x2184", vendor 0x10de), or None when unlisted."""
    return gpu_model(None, device_id)


def compute_capability_for(name: str) -> str | None:
    """The compute capability of the GPU called `name`, or None when the name is unknown."""
    model = gpu_model(name)
    return model["compute_capability"] if model else None


@cache
def _families() -> tuple[tuple[re.Pattern[str], dict[str, Any]], ...]:
    rows = load("nvidia")["gpus"].get("families", ())
    return tuple((re.compile(row["name_regex"], re.IGNORECASE), row) for row in rows)


def gpu_family(name: str | None) -> dict[str, Any] | None:
    """The family of a name the table lacks, by nvidia.toml [[gpus.families]] patterns, or None."""
    if not isinstance(name, str) or gpu_model(name) is not None:
        return None
    for pattern, row in _families():
        if pattern.search(name.strip()):
            return {key: row[key] for key in ("family", "compute_capability", "reason", "source")}
    return None


@cache
def _architectures() -> tuple[dict[str, str], dict[str, tuple[int, ...]]]:
    table = load("nvidia")["architectures"]
    families = {row["compute_capability"]: row["family"] for row in table["capability"]}
    minimums = {feature: version_key(table["features"][feature]["minimum"]) for feature in FEATURES}
    return families, minimums


def architecture(compute_capability: str) -> dict[str, Any]:
    """Family and precision features of a compute capability (features False when unparseable)."""
    families, minimums = _architectures()
    capability = major_minor(compute_capability) if isinstance(compute_capability, str) else None
    parsed = parse_version(capability)
    return {
        "compute_capability": capability,
        "family": families.get(capability) if capability else None,
        **{feature: parsed is not None and parsed >= minimums[feature] for feature in FEATURES},
    }


def gpu_features(
    compute_capability: str | None, name: str | None = None, pci_device_id: str | None = None
) -> dict[str, Any]:
    """Architecture features for a GPU, with the per-model exceptions of nvidia.toml [gpus] applied."""
    model = gpu_model(name, pci_device_id) if name or pci_device_id else None
    if not compute_capability and model:
        compute_capability = model["compute_capability"]
    features = architecture(compute_capability) if compute_capability else architecture("")
    exception = _exception_for(name) if name else None
    tensor_cores = (model or {}).get("tensor_cores", (exception or {}).get("tensor_cores"))
    if tensor_cores is False:
        # TF32, bf16 and FP8 all run on Tensor Cores, so a part without them has none of them.
        features.update(dict.fromkeys(FEATURES, False))
        features["exception"] = (model or {}).get("exception") or (exception or {}).get("reason")
    return features


def fp8_floors(capabilities: list[str]) -> dict[str, str | None]:
    """The CUDA and cuBLAS FP8 training needs on GPUs of these capabilities (nvidia.toml [fp8_training]).

    The highest floor of any GPU; `source` cites the rows that set them. None where no row applies.
    """
    rows = load("nvidia")["fp8_training"]["floor"]
    cuda: tuple[int, ...] = ()
    cublas: tuple[int, ...] = ()
    texts: dict[str, str | None] = {"cuda": None, "cublas": None}
    sources: list[str] = []
    for capability in capabilities:
        gpu = version_key(capability)
        for row in rows:
            low, high = (
                version_key(row["compute_capability_min"]),
                version_key(row.get("compute_capability_max")),
            )
            if not gpu or gpu < low or (high and gpu > high):
                continue
            if version_key(row["cuda"]) > cuda:
                cuda, texts["cuda"] = version_key(row["cuda"]), row["cuda"]
            if row.get("cublas") and version_key(row["cublas"]) > cublas:
                cublas, texts["cublas"] = version_key(row["cublas"]), row["cublas"]
            if row["source"] not in sources:
                sources.append(row["source"])
    return {**texts, "source": "; ".join(sources) or None}
