"""Where `--model` finds a model's config.json: a file, a model directory, or a Hugging Face model id.

A model id is looked up through huggingface_hub (an optional dependency, imported only here):
the local cache first, then the Hub when the process is online. Only config.json is fetched,
never weights.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import file_kind, joined, read_bytes

# A Hub repository id as huggingface_hub checks it (utils.validate_repo_id): "name" or
# "owner/name", each 1 to 96 letters, digits, '-', '_' and '.', starting and ending with a
# letter, digit or '_'; never "--" or ".." (the cache spells "/" as "--"), never ending in ".git".
ID_PART = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?")
# A cache ref holds one commit hash; a larger file is not one and is never read whole.
MAX_REF_BYTES = 1024
COMMIT = re.compile(r"[0-9a-f]{40}")
INSTALL = "pip install huggingface_hub"
TIMEOUT_SECONDS = 10
# Offline, huggingface_hub retries for half a minute; a connection to the Hub that does not open
# within this says so at once (a name that does not resolve fails in milliseconds).
CONNECT_SECONDS = 2.0


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
    problem = repo_id_problem(text)
    if problem:
        raise InputError(source, f"no such file, and not a Hugging Face model id ({problem})")
    return _from_hub(text, source)


def repo_id_problem(text: str) -> str | None:
    """Why `text` is not a Hugging Face model id by the Hub's own rules, or None when it is one."""
    parts = text.split("/")
    if len(parts) > 2:
        return "an id is a name or owner/name"
    if not all(ID_PART.fullmatch(part) for part in parts):
        return "a name is 1 to 96 letters, digits, '-', '_' or '.', not starting or ending with '-' or '.'"
    if "--" in text or ".." in text:
        return "an id may not hold '--' or '..'"
    if text.endswith(".git"):
        return "an id may not end in '.git'"
    return None


def cached_config(repo_id: str, cache: str) -> Path | None:
    """The config.json of `repo_id`'s main revision in the Hugging Face cache folder `cache`, as
    huggingface_hub lays it out; None when it is not there. Every read is bounded (base/inputs):
    a cache that is damaged is an InputError naming the file that is wrong."""
    folder = joined(cache, "models--" + repo_id.replace("/", "--"))
    ref = joined(folder, "refs", "main")
    if not os.path.lexists(ref):
        return None
    damaged = f"the model's Hugging Face cache is damaged: remove {folder} to fetch it again"
    raw = read_bytes(ref, expected="a Hugging Face cache ref (one commit hash)", max_bytes=MAX_REF_BYTES)
    commit = raw.decode("ascii", "replace").strip()
    if not COMMIT.fullmatch(commit):
        raise InputError(ref, f"not a commit hash (40 hex digits): {damaged}")
    snapshots = joined(folder, "snapshots")
    for where in (snapshots, joined(snapshots, commit)):
        if os.path.lexists(where) and not os.path.isdir(where):
            mode = os.lstat(where).st_mode
            kind = "a file" if stat.S_ISREG(mode) else file_kind(mode, glossed=False)
            raise InputError(where, f"is {kind}, not a folder: {damaged}")
    config = joined(snapshots, commit, "config.json")
    # A config.json that is there but unusable is named by the reader that reads it (read_json).
    return Path(config) if os.path.lexists(config) else None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _hub_reachable() -> bool:
    """Whether a TCP connection to the Hub (HF_ENDPOINT) opens within CONNECT_SECONDS; True behind
    a proxy, which only the client's own request can pass."""
    import socket
    import threading
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = (
        endpoint.hostname or "huggingface.co",
        endpoint.port or (80 if endpoint.scheme == "http" else 443),
    )
    opened: list[bool] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
            opened.append(True)
        except (OSError, ValueError):
            pass

    # The name lookup has no timeout of its own: the thread is left behind when it hangs.
    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(CONNECT_SECONDS)
    return bool(opened)


def _from_hub(repo_id: str, source: str) -> Path:
    try:
        import huggingface_hub
    except ImportError:
        raise InputError(
            source,
            f"no such file; to look it up as a Hugging Face model id, install huggingface_hub ({INSTALL})",
        ) from None
    from huggingface_hub import constants

    cached = cached_config(repo_id, constants.HF_HUB_CACHE)
    if cached is not None:
        return cached
    if _offline():
        raise InputError(
            source,
            "no such file, and no config.json for this Hugging Face model id in the local cache "
            "(HF_HUB_OFFLINE is set): pass a config.json or a model directory, or run online once",
        )
    if not _hub_reachable():
        raise InputError(
            source,
            "no such file, not in the local Hugging Face cache, and the Hub could not be reached "
            f"(no connection within {CONNECT_SECONDS:g} s): pass a config.json or a model directory",
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
