"""Reads the tables in rules/ (TOML data), with the one private cache shared by every layer."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from functools import cache

from hwcheck.base import platform_seam
from hwcheck.base.errors import InputError
from hwcheck.base.inputs import MAX_NESTING, MAX_RULES_BYTES, decode_utf8, plain_path, read_bytes, too_deep
from hwcheck.base.numbers import json_integer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def rules_dir() -> Path:
    """The shipped rules/ folder (rules_folder) as a Path."""
    from pathlib import Path

    return Path(rules_folder())


def rules_folder() -> str:
    """The shipped rules/ folder: inside the wheel, or at the top of a source checkout."""
    package = os.path.dirname(os.path.dirname(__file__))
    packaged = os.path.join(package, "rules")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(package), "rules")


def policy_files() -> list[str]:
    """The policy rules files that come with hwcheck (rules/policy/*.toml), in name order."""
    return _tables("policy")


def rules_files() -> list[str]:
    """Every table and rules file that comes with hwcheck (rules/knowledge, rules/policy), in name order."""
    return [*_tables("knowledge"), *_tables("policy")]


def _tables(folder: str) -> list[str]:
    directory = os.path.join(rules_folder(), folder)
    # A listing rather than a glob, whose pattern compiling costs doctor ~1 ms.
    return [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if name.endswith(".toml")]


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse one TOML file, raising InputError with the file and the parser's complaint."""
    raw = read_bytes(path, expected="a TOML file", max_bytes=MAX_RULES_BYTES)
    key = cache_key("toml", raw)
    cached = cached_document(key)
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
    store_document(key, document)
    return document


# Parsed rules and tables are cached as JSON: tomllib costs doctor ~30 ms a run
# (import and parse of rules/), reading the cached JSON a sixth of that
# (benchmarks/toml_cache.py). An entry is named by the hash of the bytes it was
# parsed from, with the versions of everything that reads it, so it can only
# ever stand for exactly those bytes; and it is read only from a directory that
# no one but the user can write.
CACHE_FORMAT = 2


def cache_dir() -> str | None:
    """Where parsed TOML is cached (HWCHECK_CACHE_DIR, else the XDG cache); None disables.

    Only absolute paths count: a relative HWCHECK_CACHE_DIR or XDG_CACHE_HOME is ignored (as the
    XDG spec says), and without an absolute home (HOME, else the password database) there is no
    cache, rather than one in the working directory (expanduser leaves "~" as it is).
    """
    configured = os.environ.get("HWCHECK_CACHE_DIR")
    if configured == "":
        return None
    if configured and os.path.isabs(configured):
        return plain_path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(plain_path(xdg), "hwcheck")
    home = os.environ.get("HOME")
    if not home or not os.path.isabs(home):
        home = platform_seam.password_home()  # None: no password database (Windows) or no entry
    return os.path.join(plain_path(home), ".cache", "hwcheck") if home and os.path.isabs(home) else None


@cache
def _cel_version() -> str:
    # The installed distribution's dist-info name; importlib.metadata would cost ~10 ms, and
    # importlib.util ~1 ms: sys.path's finder alone finds an installed package, the import
    # system's hooks (an editable install's) are asked only when it does not.
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("cel")
    if spec is None:
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


def cache_key(kind: str, *parts: bytes) -> str:
    """The name of a cache entry of `kind` built from `parts` (and this hwcheck, Python and CEL)."""
    # hashlib costs ~4 ms to import (it loads OpenSSL); the built-in BLAKE2 module does not.
    try:
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    from hwcheck.base import __version__

    digest = blake2b(digest_size=20)
    stamp = f"hwcheck-{kind} {CACHE_FORMAT} {__version__} {sys.implementation.cache_tag} {_cel_version()}\0"
    digest.update(stamp.encode())
    for part in parts:
        # Each part's length goes first, so no two lists of parts hash alike.
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


def content_key(path: str | os.PathLike[str]) -> str | None:
    """A key that changes when the file's bytes (or hwcheck, Python, CEL) change; None if unreadable."""
    try:
        return cache_key("toml", read_bytes(path, expected="a TOML file", max_bytes=MAX_RULES_BYTES))
    except InputError:
        return None  # reading it for real will say what is wrong


# A file changed less than this long ago may change again within its time stamps' granularity
# (a clock tick, two seconds on FAT) and look the same: it is named by its bytes instead.
RACY_SECONDS = 2.0


def file_signature(path: str | os.PathLike[str]) -> str | None:
    """A name for the regular file's bytes read from its status alone, or None when it cannot be one.

    Device, inode, size, modification and change times: writing the file, replacing it or
    setting its times back changes at least the change time, which no one can set. None for
    a file that is not regular or cannot be read, and for one changed in the last
    RACY_SECONDS: a second change within the same clock tick would keep every field (git
    calls such files racily clean), so only a file whose next change must show is named so.
    """
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or _now_ns() - info.st_ctime_ns < RACY_SECONDS * 1e9:
        return None
    return f"stat {info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}"


def file_key(path: str | os.PathLike[str]) -> str | None:
    """A key that changes whenever the file does: its signature, else its bytes; None if unreadable.

    Reading and hashing the rules costs doctor ~1 ms a run, their status a few microseconds.
    """
    return file_signature(path) or content_key(path)


def _now_ns() -> int:
    return time.time_ns()


def _private_cache_dir(create: bool) -> str | None:
    """The cache directory if only this user can write it (made 0700 when `create`), else None."""
    directory = cache_dir()
    ids = platform_seam.effective_ids()
    uid = None if ids is None else ids[0]
    if directory is None or uid is None:
        return None  # no owners to check (Windows): no cache
    try:
        if create and not os.path.exists(directory):
            os.makedirs(os.path.dirname(directory), exist_ok=True)
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
        info = os.stat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o022:
        return None
    return directory


def cached_document(key: str) -> dict[str, Any] | None:
    """The JSON document stored under `key` (from cache_key), or None if absent, damaged or unsafe."""
    directory = _private_cache_dir(create=False)
    if directory is None:
        return None
    try:
        path = os.path.join(directory, f"{key}.json")
        raw = read_bytes(path, expected="a cache entry", max_bytes=MAX_RULES_BYTES * 4)
        # NaN and Infinity are no JSON: store_document never writes them, so an entry holding one was forged.
        entry = json.loads(raw, parse_int=json_integer, parse_constant=_no_constant)
    except (InputError, ValueError, RecursionError):
        return None  # absent or damaged: parsed again and rewritten
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("document"), dict):
        return None
    return entry["document"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def store_document(key: str, document: dict[str, Any]) -> None:
    """Store a JSON document under `key`; a cache that cannot be written is silently skipped."""
    directory = _private_cache_dir(create=True)
    if directory is None:
        return
    try:
        text = json.dumps({"key": key, "document": document}, allow_nan=False)
    except (TypeError, ValueError):
        return  # TOML dates, times, nan and inf have no JSON form: such a document is simply not cached
    entry = os.path.join(directory, f"{key}.json")
    temporary = os.path.join(directory, f".{key}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, entry)
    except OSError:
        # A full disk or odd cache location is fine: the work is simply done every time.
        try:
            os.unlink(temporary)
        except OSError:
            pass  # on a read-only file system even this fails (EROFS)


@cache
def load(name: str) -> dict[str, Any]:
    """The knowledge table rules/knowledge/NAME.toml."""
    return read_toml(os.path.join(rules_folder(), "knowledge", f"{name}.toml"))
