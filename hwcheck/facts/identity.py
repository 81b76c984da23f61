"""A machine's fingerprint: the stable, one-way name that says two reports describe one node."""

from __future__ import annotations

import re

from hwcheck.base.inputs import read_head

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Where systemd (and dbus before it) keep the machine's 128-bit id.
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
# The application key systemd's sd_id128_get_machine_app_specific() documents: the id keys an
# HMAC of a constant, so the fingerprint names the machine without revealing its id.
APPLICATION = b"hwcheck node fingerprint v1"
FINGERPRINT = re.compile(r"[0-9a-f]{32}")
# Board identifiers in the facts: unique to one machine, unlike model names.
_BOARD_KEYS = ("uuid", "serial")


def read_machine_id(files: tuple[str, ...] = MACHINE_ID_FILES) -> str | None:
    """This machine's id from /etc/machine-id (32 hex digits), or None where there is none."""
    for name in files:
        try:
            text = read_head(name, 64).decode("ascii", "replace").strip().lower()
        except OSError:
            continue
        if FINGERPRINT.fullmatch(text) and text != "0" * 32:
            return text
    return None


def machine_fingerprint(facts: dict[str, Any], machine_id: str | None = None) -> str | None:
    """32 hex digits naming the machine: a keyed hash of its machine id, else of its boards' ids.

    Never the host name (two machines may share one). Without a machine id the GPUs' UUIDs
    and serials stand in; a machine with neither has no fingerprint (None), because model
    names and versions are shared by every node of a class.
    """
    if machine_id:
        source = b"machine-id\0" + machine_id.encode()
    else:
        boards = sorted(
            f"{key}={gpu[key]}"
            for gpu in facts.get("gpus") or ()
            if isinstance(gpu, dict)
            for key in _BOARD_KEYS
            if isinstance(gpu.get(key), str) and gpu[key]
        )
        if not boards:
            return None
        source = ("gpus\0" + "\0".join(boards)).encode()
    import hashlib
    import hmac

    return hmac.new(source, APPLICATION, hashlib.sha256).hexdigest()[:32]
