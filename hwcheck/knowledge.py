"""Reads the knowledge tables in rules/knowledge/ (TOML data; no advice lives in Python)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from hwcheck.errors import InputError
from hwcheck.inputs import MAX_NESTING, MAX_RULES_BYTES, decode_utf8, read_bytes, too_deep
from hwcheck.versions import major_minor, parse_version, version_key


def rules_dir() -> Path:
    """The shipped rules/ folder: inside the wheel, or at the top of a source checkout."""
    packaged = Path(__file__).parent / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent / "rules"


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file, raising InputError with the file and the parser's complaint."""
    raw = read_bytes(path, expected="a TOML file", max_bytes=MAX_RULES_BYTES)
    key = _cache_key(raw)
    cached = _cached_parse(key)
    if cached is not None:
        return cached
    text = decode_utf8(raw, path, expected="a TOML file")
    import tomllib  # imported here: ~8 ms that a cached parse never pays

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(path, f"malformed TOML: {error}") from None
    except RecursionError:
        raise InputError(path, f"TOML nested too deeply (more than {MAX_NESTING} levels)") from None
    if too_deep(document):
        raise InputError(path, f"TOML nested too deeply (more than {MAX_NESTING} levels)")
    _store_parse(key, document)
    return document


# Parsed rules and tables are cached as JSON: tomllib costs doctor ~30 ms a run
# (import and parse of rules/), reading the cached JSON a sixth of that
# (benchmarks/toml_cache.py). An entry is named by the hash of the bytes it was
# parsed from, with the versions of everything that reads it, so it can only
# ever stand for exactly those bytes; and it is read only from a directory that
# no one but the user can write.
CACHE_FORMAT = 2


def cache_dir() -> Path | None:
    """Where parsed TOML is cached (HWCHECK_CACHE_DIR, else the XDG cache); None disables."""
    configured = os.environ.get("HWCHECK_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hwcheck"


@cache
def _cel_version() -> str:
    # The installed distribution's dist-info name; importlib.metadata would cost ~10 ms.
    import importlib.util

    spec = importlib.util.find_spec("cel")
    for location in (spec.submodule_search_locations or ()) if spec else ():
        try:
            names = os.listdir(os.path.dirname(location))
        except OSError:
            continue
        for name in names:
            if name.startswith("common_expression_language-") and name.endswith(".dist-info"):
                return name
    return "unknown"


def _cache_key(raw: bytes) -> str:
    # hashlib costs ~4 ms to import (it loads OpenSSL); the built-in BLAKE2 module does not.
    try:
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    from hwcheck import __version__

    digest = blake2b(digest_size=20)
    stamp = f"hwcheck-toml {CACHE_FORMAT} {__version__} {sys.implementation.cache_tag} {_cel_version()}\0"
    digest.update(stamp.encode())
    digest.update(raw)
    return digest.hexdigest()


def content_key(path: Path) -> str | None:
    """A key that changes when the file's bytes (or hwcheck, Python, CEL) change; None if unreadable."""
    try:
        return _cache_key(read_bytes(path, expected="a TOML file", max_bytes=MAX_RULES_BYTES))
    except InputError:
        return None  # reading it for real will say what is wrong


def _private_cache_dir(create: bool) -> Path | None:
    """The cache directory if only this user can write it (made 0700 when `create`), else None."""
    directory = cache_dir()
    uid = getattr(os, "geteuid", lambda: None)()
    if directory is None or uid is None:
        return None  # no owners to check (Windows): no cache
    try:
        if create and not directory.exists():
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir(mode=0o700, exist_ok=True)
        info = directory.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o022:
        return None
    return directory


def _cached_parse(key: str) -> dict[str, Any] | None:
    directory = _private_cache_dir(create=False)
    if directory is None:
        return None
    try:
        entry = json.loads(
            read_bytes(directory / f"{key}.json", expected="a cache entry", max_bytes=MAX_RULES_BYTES * 4)
        )
    except (InputError, ValueError, RecursionError):
        return None  # absent or damaged: parsed again and rewritten
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("document"), dict):
        return None
    return entry["document"]


def _store_parse(key: str, document: dict[str, Any]) -> None:
    directory = _private_cache_dir(create=True)
    if directory is None:
        return
    try:
        text = json.dumps({"key": key, "document": document}, allow_nan=False)
    except (TypeError, ValueError):
        return  # TOML dates, times, nan and inf have no JSON form: such a file is simply not cached
    entry = directory / f"{key}.json"
    temporary = directory / f".{key}.{os.getpid()}.tmp"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, entry)
    except OSError:
        # A full disk or odd cache location is fine: the file is parsed every time.
        temporary.unlink(missing_ok=True)


@cache
def load(name: str) -> dict[str, Any]:
    """The knowledge table rules/knowledge/NAME.toml."""
    return read_toml(rules_dir() / "knowledge" / f"{name}.toml")


FEATURES = ("tensor_cores", "tf32", "bf16", "fp8")
_NAME_SEPARATORS = re.compile(r"[\s\-_/(),]+")
_PCI_DEVICE_ID = re.compile(r"(?:0x)?([0-9a-f]{4})")


def _name_tokens(name: str, drop_leading: frozenset[str]) -> tuple[str, ...]:
    tokens = [token for token in _NAME_SEPARATORS.split(name.lower()) if token]
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
    table = load("gpus")
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
    match = _PCI_DEVICE_ID.fullmatch(device_id.strip().lower()) if isinstance(device_id, str) else None
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
def _architectures() -> tuple[dict[str, str], dict[str, tuple[int, ...]]]:
    table = load("architectures")
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
    """Architecture features for a GPU, with the per-model exceptions of gpus.toml applied."""
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


@cache
def _tensorflow_builds() -> dict[str, dict[str, Any]]:
    rows = load("tensorflow")["build"]
    return {release: row for row in rows if (release := major_minor(row["version"])) is not None}


def _python_versions(tested_range: str) -> list[str]:
    # "3.9-3.12" -> ["3.9", "3.10", "3.11", "3.12"]
    low, _, high = tested_range.partition("-")
    low_parts, high_parts = parse_version(low), parse_version(high)
    if not low_parts or not high_parts or low_parts[0] != high_parts[0] or len(low_parts) < 2:
        return [tested_range]
    return [f"{low_parts[0]}.{minor}" for minor in range(low_parts[1], high_parts[1] + 1)]


def tensorflow_build(version: str) -> dict[str, Any] | None:
    """TensorFlow's tested Linux GPU configuration for a release ("2.16.1" matches 2.16.x)."""
    release = major_minor(version) if isinstance(version, str) else None
    row = _tensorflow_builds().get(release) if release is not None else None
    if row is None:
        return None
    table = load("tensorflow")
    parsed = version_key(row["version"])
    return {
        "version": row["version"],
        "cuda": row["cuda"],
        "cudnn": row["cudnn"],
        "python": _python_versions(row["python"]),
        "python_range": row["python"],
        "compiler": row["compiler"],
        "build_tools": row["build_tools"],
        "keras": 3 if parsed >= version_key(table["keras"]["keras3_from"]) else 2,
        "windows_native_gpu": parsed[:2] <= version_key(table["windows"]["last_native_gpu"]),
        "windows_gpu": dict(row["windows_gpu"]) if "windows_gpu" in row else None,
    }


def tensorflow_missing_kernels(version: str | None, compute_capability: str | None) -> str | None:
    """Why TensorFlow `version`'s pip wheels cannot run a GPU of `compute_capability`; None if they can."""
    release, capability = parse_version(major_minor(version)), parse_version(compute_capability)
    if release is None or capability is None:
        return None
    for row in load("tensorflow").get("missing_kernels", []):
        first, last = version_key(row["tensorflow_from"]), version_key(row["tensorflow_through"])
        if capability >= version_key(row["compute_capability_min"]) and first <= release <= last:
            return row["source"]
    return None


def newest_tensorflow_for_cuda(cuda_version: str | None) -> str | None:
    """The newest TensorFlow release built for a CUDA of `cuda_version`'s major version or older.

    A driver runs any CUDA of its own major version through minor version
    compatibility, so this is the newest release an old driver can still run.
    """
    supported = parse_version(cuda_version)
    if supported is None:
        return None
    runnable = [
        row["version"] for row in load("tensorflow")["build"] if version_key(row["cuda"])[:1] <= supported[:1]
    ]
    return max(runnable, key=version_key, default=None)


@cache
def _cuda_toolkits() -> tuple[list[tuple[tuple[int, ...], dict[str, Any]]], dict[int, dict[str, Any]]]:
    table = load("cuda_drivers")
    toolkits = sorted(
        ((version_key(row["version"]), row) for row in table["toolkit"]), key=lambda pair: pair[0]
    )
    compat = {row["cuda_major"]: row for row in table["minor_compatibility"]}
    return toolkits, compat


def cuda_driver_minimum(cuda_version: str) -> dict[str, Any] | None:
    """Minimum drivers for a CUDA toolkit ("12.4" is the GA release, "12.4.1" Update 1)."""
    parsed = parse_version(cuda_version) if isinstance(cuda_version, str) else None
    if not parsed or len(parsed) < 2:
        return None
    toolkits, compat = _cuda_toolkits()
    family = compat.get(parsed[0])
    if family is None:
        return None
    same_minor = [(version, row) for version, row in toolkits if version[:2] == parsed[:2]]
    if len(parsed) == 2:
        release = same_minor[0][1] if same_minor else None
    else:
        # An update the table does not list needs at least the newest listed one before it.
        release = next((row for version, row in reversed(same_minor) if version <= parsed[:3]), None)
    return {
        "cuda": ".".join(str(part) for part in parsed),
        "toolkit": release["label"] if release else None,
        "linux": release["linux"] if release else None,
        "windows": release.get("windows") if release else None,
        "minor_compat_linux": family["linux"],
        "minor_compat_windows": family["windows"],
    }


@cache
def _cpu_flags() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in load("cpu_features")["flag"]}


def cpu_feature(flag: str) -> dict[str, Any] | None:
    """What a /proc/cpuinfo flag means for training, or None for flags the table does not know."""
    row = _cpu_flags().get(flag.strip().lower()) if isinstance(flag, str) else None
    return dict(row) if row else None


def newest_cuda_for_driver(driver_version: str | None, platform: str = "linux") -> str | None:
    """The newest CUDA toolkit ("12.2") whose every feature a driver version supports, or None.

    Compares against the toolkit driver NVIDIA lists per release (linux or windows); later
    toolkits of the same major may still run through minor version compatibility. NVIDIA lists no
    Windows driver for CUDA 13.x, so on windows the answer stops at 12.9.
    """
    driver = parse_version(driver_version) if isinstance(driver_version, str) else None
    if not driver or platform not in ("linux", "windows"):
        return None
    toolkits, _ = _cuda_toolkits()
    supported = [
        version
        for version, row in toolkits
        if (listed := parse_version(row.get(platform))) is not None and listed <= driver
    ]
    return f"{supported[-1][0]}.{supported[-1][1]}" if supported else None


@cache
def _torch_tables() -> tuple[
    dict[str, dict[str, Any]], dict[str, list[str]], dict[tuple[str, str], dict[str, Any]]
]:
    table = load("torch")
    variants = {row["name"]: row for row in table["variant"]}
    releases = {row["version"]: list(row["variants"]) for row in table["release"]}
    builds = {(row["version"], row["variant"]): row for row in table["build"]}
    return variants, releases, builds


def torch_variants(version: str | None) -> list[str] | None:
    """The CUDA wheel variants ("cu128", ...) a PyTorch release ("2.7.1" matches 2.7) shipped."""
    release = major_minor(version) if isinstance(version, str) else None
    variants = _torch_tables()[1].get(release) if release else None
    return list(variants) if variants is not None else None


def torch_build(version: str | None, variant: str | None) -> dict[str, Any] | None:
    """Architectures of one PyTorch CUDA wheel ("2.7.1", "cu128"), with its CUDA and install index.

    `ptx` is None where no source says whether the wheel carries PTX.
    """
    release = major_minor(version) if isinstance(version, str) else None
    variants, _, builds = _torch_tables()
    row = builds.get((release, variant.strip().lower())) if release and isinstance(variant, str) else None
    if row is None:
        return None
    return {
        "version": row["version"],
        "variant": row["variant"],
        "cuda": variants[row["variant"]]["cuda"],
        "sm": list(row["sm"]),
        "ptx": list(row["ptx"]) if "ptx" in row else None,
        "index_url": variants[row["variant"]]["index_url"],
        "install": load("torch")["install"]["command"].format(version=version, variant=row["variant"]),
        "source": row["source"],
    }


def _architecture_number(name: str) -> tuple[int, int] | None:
    # "sm_86" / "compute_120" -> (8, 6) / (12, 0): the last digit is the minor version.
    digits = name.rpartition("_")[2]
    return (int(digits[:-1]), int(digits[-1])) if digits.isdigit() and len(digits) >= 2 else None


def architectures_run(sm: list[str], ptx: list[str] | None, compute_capability: str | None) -> bool | None:
    """Whether code for `sm` (SASS) or `ptx` (PTX) runs on a GPU of `compute_capability`; None if unknown.

    SASS runs on its own major version at the same or a higher minor (sm_80 on CC 8.6); the
    driver JIT-compiles PTX for any GPU at or above the PTX's architecture.
    """
    parsed = parse_version(compute_capability)
    if parsed is None or len(parsed) < 2:
        return None
    gpu = (parsed[0], parsed[1])
    for name in sm:
        number = _architecture_number(name)
        if number and number[0] == gpu[0] and number[1] <= gpu[1]:
            return True
    return any((number := _architecture_number(name)) and number <= gpu for name in ptx or ())


def torch_variant(version: str | None, cuda: str | None) -> str | None:
    """The CUDA wheel variant of a PyTorch install: the local version ("2.6.0+cu126") or its CUDA."""
    if isinstance(version, str) and "+" in version:
        local = version.partition("+")[2].strip().lower()
        if re.fullmatch(r"cu\d+", local):
            return local
    parsed = parse_version(cuda)
    return f"cu{parsed[0]}{parsed[1]}" if parsed and len(parsed) >= 2 else None


def torch_dropped(version: str | None, compute_capability: str | None) -> str | None:
    """The source saying PyTorch `version`'s binaries carry no code for this capability, or None."""
    release, parsed = parse_version(major_minor(version)), parse_version(compute_capability)
    if release is None or parsed is None or len(parsed) < 2:
        return None
    arch = f"sm_{parsed[0]}{parsed[1]}"
    for row in load("torch").get("dropped", ()):
        if row["sm"] == arch and release >= version_key(row["torch_from"]):
            return str(row["source"])
    return None


def torch_builds_for(variant: str | None) -> list[dict[str, Any]]:
    """Every PyTorch release's build of one wheel variant ("cu128") the table lists, oldest first."""
    _, releases, _ = _torch_tables()
    builds = [torch_build(release, variant) for release in releases]
    return sorted((b for b in builds if b), key=lambda build: version_key(build["version"]))


def torch_oldest_release() -> str | None:
    """The oldest PyTorch release torch.toml lists variants for ("2.0")."""
    return min(_torch_tables()[1], key=version_key, default=None)


def torch_fix(
    version: str | None, capabilities: list[str], *, oldest_first: bool = False
) -> dict[str, Any] | None:
    """The first PyTorch build from `version`'s release on that runs every GPU (the newest when unknown)."""
    _, releases, _ = _torch_tables()
    floor = version_key(major_minor(version)) if version else ()
    for release in sorted(releases, key=version_key, reverse=not (version or oldest_first)):
        if version_key(release) < floor:
            continue
        for variant in releases[release]:
            build = torch_build(release, variant)
            if build and all(architectures_run(build["sm"], build["ptx"], cc) for cc in capabilities):
                return build
    return None


@cache
def _jax_majors() -> dict[int, dict[str, Any]]:
    return {int(row["cuda_major"]): row for row in load("jax")["cuda_major"]}


def jax_cuda(cuda_major: int | None) -> dict[str, Any] | None:
    """JAX's CUDA wheel family for a CUDA major version: plugin, install command, minimum CC and driver."""
    row = _jax_majors().get(cuda_major) if isinstance(cuda_major, int) else None
    return dict(row) if row else None


def jax_minimum_capability(jaxlib_version: str | None, cuda_major: int | None) -> str | None:
    """The lowest compute capability a jaxlib CUDA build runs on, from the table; None when unknown."""
    row = jax_cuda(cuda_major)
    if row:
        return str(row["minimum_compute_capability"])
    release = parse_version(jaxlib_version)
    floors = [
        (version_key(change["jaxlib"]), change["minimum_compute_capability"])
        for change in load("jax").get("change", ())
        if "minimum_compute_capability" in change
    ]
    reached = [floor for first, floor in sorted(floors) if release is not None and release >= first]
    return reached[-1] if reached else None


@cache
def _platforms() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in load("platforms")["platform"]}


def platform_facts(name: str) -> dict[str, Any]:
    """What rules/knowledge/platforms.toml says about "windows", "wsl2" or "macos" (empty if nothing)."""
    return dict(_platforms().get(name, {}))


def tensorflow_gpu_bfloat16_slow(version: str | None) -> str | None:
    """Why mixed_bfloat16 is slow on GPUs in TensorFlow `version` (the table's evidence), or None."""
    table = load("tensorflow").get("gpu_bfloat16")
    release = parse_version(major_minor(version))
    if not table or release is None or not table.get("unsupported_through"):
        return None
    if release > version_key(table["unsupported_through"]):
        return None
    return "; ".join(str(item) for item in table.get("evidence", ())) or "rules/knowledge/tensorflow.toml"


def tensorflow_architectures(version: str | None) -> dict[str, Any] | None:
    """The SASS (`sm`) and PTX (`ptx`) architectures TensorFlow `version`'s Linux wheel carries, or None."""
    release = major_minor(version) if isinstance(version, str) else None
    row = _tensorflow_builds().get(release) if release is not None else None
    if row is None or "sm" not in row:
        return None
    return {"sm": list(row["sm"]), "ptx": list(row.get("ptx", ())), "source": row.get("arch_source", "")}
