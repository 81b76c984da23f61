"""PyTorch MPS per release and macOS, tensorflow-metal and jax-metal pairings: rules/knowledge/apple.toml."""

from __future__ import annotations

from hwcheck.base.tables import load
from hwcheck.base.versions import parse_version, version_at_least, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _rows(name: str) -> list[dict[str, Any]]:
    return sorted(load("apple")[name], key=lambda row: version_key(row.get("torch") or row.get("plugin")))


def torch_mps_floor(torch: str | None) -> dict[str, Any] | None:
    """The torch_mps row that holds for a PyTorch release (its min_macos); None before MPS (1.12)."""
    if parse_version(torch) is None:
        return None
    rows = [row for row in _rows("torch_mps") if version_at_least(torch, row["torch"])]
    return dict(rows[-1]) if rows else None


def last_torch_for_macos(macos: str | None) -> str | None:
    """The first PyTorch release whose MPS no longer runs on `macos` ("2.9" for macOS 13.x); None if none."""
    if parse_version(macos) is None:
        return None
    too_new = [row["torch"] for row in _rows("torch_mps") if not version_at_least(macos, row["min_macos"])]
    return too_new[0] if too_new else None


def torch_autocast_dtypes(torch: str | None, macos: str | None) -> list[str]:
    """The dtypes torch.autocast('mps') runs in for this PyTorch and macOS (a floor needs a known macOS)."""
    dtypes = []
    for row in load("apple")["torch_autocast"]:
        if not version_at_least(torch, row["torch"]):
            continue
        if "min_macos" in row and not version_at_least(macos, row["min_macos"]):
            continue
        dtypes.append(str(row["dtype"]))
    return dtypes


def torch_grad_scaler(torch: str | None) -> bool:
    """Whether torch.amp.GradScaler('mps') works in this PyTorch release."""
    return version_at_least(torch, load("apple")["torch_grad_scaler"]["torch"])


def bfloat16_macos() -> str:
    """The oldest macOS whose Metal Performance Shaders compute in bfloat16."""
    return str(load("apple")["bfloat16"]["min_macos"])


def tensorflow_metal(plugin: str | None) -> dict[str, Any] | None:
    """The tensorflow_metal row of an installed tensorflow-metal release (matched by major.minor.patch)."""
    return _release("tensorflow_metal", plugin)


def tensorflow_metal_for(tensorflow: str | None) -> dict[str, Any] | None:
    """The tensorflow-metal release made for a TensorFlow release; None when no row covers it."""
    return next((row for row in _rows("tensorflow_metal") if _within(tensorflow, row, "tensorflow")), None)


def tensorflow_metal_fits(row: dict[str, Any], tensorflow: str | None) -> bool:
    """Whether a tensorflow-metal row loads into this TensorFlow release."""
    return _within(tensorflow, row, "tensorflow")


def jax_metal(plugin: str | None) -> dict[str, Any] | None:
    """The jax_metal row of an installed jax-metal release."""
    return _release("jax_metal", plugin)


def newest_jax_metal() -> dict[str, Any]:
    """The newest jax-metal release the table knows."""
    return dict(_rows("jax_metal")[-1])


def _release(table: str, plugin: str | None) -> dict[str, Any] | None:
    wanted = version_key(plugin)[:3]
    if not wanted:
        return None
    row = next((row for row in _rows(table) if version_key(row["plugin"])[:3] == wanted), None)
    return dict(row) if row else None


def _within(version: str | None, row: dict[str, Any], key: str) -> bool:
    """`version` between row[key_first] and row[key_last] by major.minor (no last: open above)."""
    if parse_version(version) is None:
        return False
    minor = version_key(version)[:2]
    first = version_key(row[f"{key}_first"])[:2]
    last = row.get(f"{key}_last")
    return first <= minor and (last is None or minor <= version_key(last)[:2])
