"""Where `--model` finds a model's config.json: a file, a model directory, or a Hugging Face model id.

A model id is looked up through huggingface_hub (an optional dependency, imported only here):
the local cache first, then the Hub when the process is online. Only config.json is fetched,
never weights.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hwcheck.base.errors import InputError

# A Hub repository id: an optional owner and a name, letters, digits, '-', '_' and '.'.
REPO_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
INSTALL = "pip install huggingface_hub"
TIMEOUT_SECONDS = 10


def config_path(text: str) -> Path:
    """The config.json that `--model TEXT` names; InputError (one line) when there is none."""
    source = f"--model {text}"
    path = Path(text)
    if path.is_dir():
        inside = path / "config.json"
        if not inside.is_file():
            raise InputError(
                source, "is a directory without a config.json: pass the model's folder or its config file"
            )
        return inside
    if path.exists() or text.endswith(".json") or text.startswith(("/", ".", "~")):
        return path  # a file, or meant as one: read_text names what is wrong with it
    if not REPO_ID.fullmatch(text) or ".." in text:
        raise InputError(source, "no such file, and not a Hugging Face model id")
    return _from_hub(text, source)


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _from_hub(repo_id: str, source: str) -> Path:
    try:
        import huggingface_hub
    except ImportError:
        raise InputError(
            source,
            f"no such file; to look it up as a Hugging Face model id, install huggingface_hub ({INSTALL})",
        ) from None
    cached = huggingface_hub.try_to_load_from_cache(repo_id, "config.json")
    if isinstance(cached, str):
        return Path(cached)
    if _offline():
        raise InputError(
            source,
            "no such file, and no config.json for this Hugging Face model id in the local cache "
            "(HF_HUB_OFFLINE is set): pass a config.json or a model directory, or run online once",
        )
    import logging

    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.CRITICAL)  # its retry warnings would break the one-line error
    try:
        return Path(huggingface_hub.hf_hub_download(repo_id, "config.json", etag_timeout=TIMEOUT_SECONDS))
    except Exception as error:  # the Hub's errors: not found, gated, no network
        name = type(error).__name__
        if "LocalEntryNotFound" in name or "Offline" in name or "Connect" in name or "Timeout" in name:
            why = (
                "no such file, not in the local Hugging Face cache, and the Hub could not be reached: "
                "pass a config.json or a model directory"
            )
        elif "Gated" in name:
            why = "a gated model: accept its license and log in (hf auth login), or pass a config.json"
        elif "NotFound" in name:
            why = "no such file, and no such model on the Hugging Face Hub"
        else:
            why = (
                f"no such file, not in the local Hugging Face cache, and the Hub was not reached ({name}): "
                "pass a config.json or a model directory"
            )
        raise InputError(source, why) from None
    finally:
        hub_log.setLevel(level)
