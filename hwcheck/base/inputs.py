"""The one reader of input files (facts, reports, cpuinfo dumps, rules and knowledge tables).

Every way a file can be unusable becomes a one-line InputError naming the file:
a FIFO, device, socket or directory is refused before it is read (so `--facts
/dev/zero` or a FIFO with no writer cannot hang or eat memory), at most a given
number of bytes is read, the text must be UTF-8, and parsed documents are
bounded in nesting and may not hold NaN or infinite numbers (JSON has no such
values, so a report carrying one would not be JSON) nor integers beyond 64 bits
(base/numbers.py's bound: the rules engine and every format hwcheck writes hold no more).
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import stat
from itertools import islice

from hwcheck.base.errors import InputError
from hwcheck.base.numbers import json_integer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

# A facts file or report is a few kilobytes; refusing huge ones keeps a bad path
# (a core dump, a dataset) from eating memory before it fails to parse.
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
# The shipped rules and knowledge tables are 77 KiB together.
MAX_RULES_BYTES = 4 * 1024 * 1024
# A report is 5 levels deep at most; a site rules file 4.
MAX_NESTING = 32
# The longest finding message or remedy: the engine cuts what it writes to it, and inventory
# refuses a report holding longer (a longer CSV cell breaks readers).
MAX_MESSAGE = 4096

# O_NONBLOCK: a FIFO opens at once instead of waiting for a writer (and is then refused);
# O_NOCTTY: a terminal device opened by mistake never becomes this process's terminal.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
# Every file that is not a regular one, by kind, with a gloss for the kind few users know.
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory", ""),
    (stat.S_ISFIFO, "a FIFO", " (named pipe)"),
    (stat.S_ISCHR, "a character device", ""),
    (stat.S_ISBLK, "a block device", ""),
    (stat.S_ISSOCK, "a socket", ""),
)


def file_kind(mode: int, *, glossed: bool = True) -> str:
    """What a file of `st_mode` `mode` is, for refusing it ("a directory", "a FIFO (named pipe)")."""
    for test, kind, gloss in _FILE_KINDS:
        if test(mode):
            return kind + gloss if glossed else kind
    return "not a regular file"


def plain_path(path: str | os.PathLike[str]) -> str:
    """`path` spelled as pathlib spells it: no empty or "." parts and no trailing separator.

    The probes and readers join names as text rather than import pathlib (~4 ms of every
    doctor run); a name from outside (a --facts path, an entry of PATH or sys.path) is
    spelled this way first, so that messages and facts name it as they always have.
    """
    text = os.fspath(path)
    if os.name != "posix":
        from pathlib import Path

        return str(Path(text))
    # POSIX keeps exactly two leading slashes (their meaning is left to the system); more are one.
    root = "/" if text.startswith("/") else ""
    if text.startswith("//") and not text.startswith("///"):
        root = "//"
    parts = [part for part in text.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def joined(*parts: str | os.PathLike[str]) -> str:
    """The path Path(first) / second / ... names, spelled as pathlib spells it."""
    return plain_path(os.path.join(*parts))


# The most entries matching_paths reads of one folder: a hostile folder may hold millions.
MAX_LISTED = 4096
_MAGIC = "*?["


def matching_paths(root: str, pattern: str, *, limit: int = 16) -> list[str]:
    """Up to `limit` paths under `root` matching the glob `pattern` (`*`, `?`, `[...]` within one
    name), in name order; bounded by MAX_LISTED entries read per folder, never an error."""
    paths = [root]
    for part in pattern.strip("/").split("/"):
        if not any(char in part for char in _MAGIC):
            paths = [joined(path, part) for path in paths if os.path.lexists(joined(path, part))]
            continue
        # The literal head filters before fnmatch compiles: most folders hold no candidate at all.
        head = part[: min(part.index(char) for char in _MAGIC if char in part)]
        found: list[str] = []
        for path in paths:
            try:
                with os.scandir(path) as entries:
                    names = [entry.name for entry in islice(entries, MAX_LISTED)]
            except OSError:
                continue
            candidates = sorted(name for name in names if name.startswith(head) and not name.startswith("."))
            if candidates:
                from fnmatch import fnmatchcase

                found.extend(joined(path, name) for name in candidates if fnmatchcase(name, part))
        paths = found[:MAX_LISTED]
    return paths[:limit]


def _refuse_unless_regular(path: str, mode: int, expected: str) -> None:
    if stat.S_ISREG(mode):
        return
    raise InputError(path, f"is {file_kind(mode)}, expected {expected}")


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit // 1024} KB"


def read_bytes(path: str | os.PathLike[str], *, expected: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; anything else is an InputError.

    `expected` names what the file should be ("a JSON document", "a /proc/cpuinfo
    dump") for the messages.
    """
    path = plain_path(path)
    try:
        # Checked before opening too: opening some devices has effects (a tape rewinds).
        _refuse_unless_regular(path, os.stat(path).st_mode, expected)
        # O_NONBLOCK: a FIFO swapped in after the check opens at once instead of waiting for a writer.
        descriptor = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    try:
        info = os.fstat(descriptor)
        _refuse_unless_regular(path, info.st_mode, expected)
        if info.st_size > max_bytes:
            raise _too_large(path, max_bytes, expected)
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(descriptor, min(max_bytes + 1 - total, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            # It grew while being read (or stat lied, as in /proc).
            raise _too_large(path, max_bytes, expected)
        return b"".join(chunks)
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)


class NotRegularFile(OSError):
    """A probe's file is a FIFO, device, socket or directory: it is never read (reading could block)."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for binary reading, only if it is a regular file: the probes' one way to open a file.

    The open never blocks (O_NONBLOCK: a FIFO with no writer opens at once) and the kind is
    checked on the open descriptor (fstat), so a FIFO swapped in after a check is refused too;
    anything but a regular file raises NotRegularFile, an OSError, which every probe already
    treats as an unreadable file. Callers bound what they read (handle.read(limit)).
    """
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"is {file_kind(mode)}, not a regular file", os.fspath(path))
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_head(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """At most the first `max_bytes` bytes of a regular file (opened as open_regular does), else OSError.

    Read with the descriptor alone (no file object): the PCI probes call it for every device
    on the bus, up to 100,000 of them, within their deadline.
    """
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"is {file_kind(mode)}, not a regular file", os.fspath(path))
        chunks, total = [], 0
        while total < max_bytes:
            chunk = os.read(descriptor, max_bytes - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _too_large(path: str, max_bytes: int, expected: str) -> InputError:
    return InputError(path, f"larger than {_size(max_bytes)}, not {expected}")


def decode_utf8(raw: bytes, path: str | os.PathLike[str], *, expected: str) -> str:
    """`raw` decoded as strict UTF-8, else an InputError naming `path`."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(
            path, f"not UTF-8 text but UTF-16 (it starts with a byte order mark), not {expected}"
        )
    if raw.startswith(codecs.BOM_UTF8):
        raise InputError(path, f"starts with a UTF-8 byte order mark, which {expected} may not have")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {error.start}), not {expected}") from None
    if "\x00" in text:
        # UTF-16 without a byte order mark is valid UTF-8 full of NULs; no text file holds one.
        raise InputError(path, f"holds NUL bytes (UTF-16 or binary?), not {expected}")
    return text


def read_text(path: str | os.PathLike[str], *, expected: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """A non-empty UTF-8 text file of at most `max_bytes`, read with read_bytes."""
    text = decode_utf8(read_bytes(path, expected=expected, max_bytes=max_bytes), path, expected=expected)
    if not text.strip():
        raise InputError(path, f"empty file, expected {expected}")
    return text


class _Unusable(ValueError):
    pass


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _Unusable(f"the number {text[:40]} is too large for a 64-bit float")
    return number


def _bounded_integer(text: str) -> int:
    try:
        return json_integer(text)
    except ValueError as error:
        raise _Unusable(str(error)) from None


def _refuse_constant(name: str) -> Any:
    raise _Unusable(f"{name} is not a JSON number")


def too_deep(document: Any, limit: int = MAX_NESTING) -> bool:
    """Whether lists and dicts in `document` nest more than `limit` levels."""
    level = [document]
    for _ in range(limit):
        inner: list[Any] = []
        for node in level:
            values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
            inner.extend([value for value in values if isinstance(value, (dict, list))])
        if not inner:
            return False
        level = inner
    return True


def _deep_path(document: Any, limit: int) -> str:
    """Where `document` first nests deeper than `limit`, as "facts.cpu[0][0]..." (for messages)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= limit:
            break
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((value, (*path, key)) for key, value in items if isinstance(value, (dict, list)))
    else:
        return "top level"
    shown = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path[:4]).lstrip(".")
    return shown + ("..." if len(path) > 4 else "")


class _Refused:
    """Where parse_json's second reading met the number the first refused."""


def _refused(_text: str) -> _Refused:
    return _REFUSED


_REFUSED = _Refused()


def _unusable_path(text: str) -> str | None:
    """Where the first number parse_json refused in `text` stands, as "hidden_size" or
    "layers[2].dim": the text read again with every refused number kept as a marker."""

    def integer(digits: str) -> Any:
        try:
            return json_integer(digits)
        except ValueError:
            return _REFUSED

    def number(digits: str) -> Any:
        value = float(digits)
        return value if math.isfinite(value) else _REFUSED

    try:
        document = json.loads(text, parse_float=number, parse_int=integer, parse_constant=_refused)
    except (ValueError, RecursionError):
        return None
    # Depth first in the text's order (children pushed reversed), so the first refused is found.
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        node, where = stack.pop()
        if node is _REFUSED:
            shown = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in where[-4:])
            return ("..." if len(where) > 4 else "") + shown.lstrip(".") if where else None
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend(reversed([(value, (*where, key)) for key, value in items]))
    return None


def read_json(path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """A JSON file read with read_text: finite numbers only, nested at most MAX_NESTING levels."""
    return parse_json(read_text(path, expected="a JSON document", max_bytes=max_bytes), path)


def parse_json(text: str, path: str | os.PathLike[str]) -> Any:
    """JSON text parsed as read_json parses a file's; an InputError naming `path` when unusable."""
    try:
        document = json.loads(
            text, parse_float=_finite_float, parse_int=_bounded_integer, parse_constant=_refuse_constant
        )
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise InputError(path, f"malformed JSON at {where}: {error.msg}") from None
    except _Unusable as error:
        field = _unusable_path(text)
        raise InputError(path, f"unusable JSON: {error}{f' at {field}' if field else ''}") from None
    except RecursionError:
        raise InputError(path, f"JSON nested too deeply (more than {MAX_NESTING} levels)") from None
    if too_deep(document):
        where = _deep_path(document, MAX_NESTING)
        raise InputError(path, f"JSON nested too deeply (more than {MAX_NESTING} levels) under {where}")
    return document
