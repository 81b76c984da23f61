"""The JSON report: what doctor --json prints and `hwcheck report` writes."""

from __future__ import annotations

import os
import re
import stat
import sys
from functools import cache

from hwcheck.base import __version__, platform_seam
from hwcheck.base.errors import InputError
from hwcheck.base.inputs import file_kind
from hwcheck.facts import SCHEMA_VERSION
from hwcheck.recommendation import Recommendation
from hwcheck.render import node_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from pathlib import Path
    from typing import Any

# Keys whose values identify one board or installation: --redact drops them wherever they
# occur, and scrubs their values out of every other string too.
IDENTIFYING_KEYS = frozenset({"uuid", "serial", "pci_bus_id", "executable"})
# Values shorter than this are too likely to occur by chance to scrub everywhere.
MIN_SCRUBBED_VALUE = 6
REDACTED = "<redacted>"
_PATH_PART = r"[^/\\\s:;,'\"=]+"
# What a host name may not touch for a match: "a100" must not match "NVIDIA A100-SXM4".
_NOT_IN_A_NAME = r"(?<![A-Za-z0-9_-]){}(?![A-Za-z0-9_-])"


@cache
def _content_rules() -> tuple[tuple[re.Pattern[str], str], ...]:
    # Compiled on the first redaction: doctor, which never redacts, does not pay for them.
    return (
        # NVIDIA GPU-<uuid> and MIG-<uuid> (or MIG-GPU-<uuid>/gi/ci), AMD GPU-<16 hex>.
        (re.compile(r"\b(GPU|MIG)-[0-9A-Fa-f]{4,}(?:-[0-9A-Fa-f]+)*(?:/\d+/\d+)?"), r"\1-" + REDACTED),
        (re.compile(r"\b[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b"), REDACTED),
        # PCI addresses: domain:bus:device.function (NVML pads the domain to 8 digits) or bus:device.function.
        (
            re.compile(
                r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7](?![0-9A-Za-z])"
            ),
            "<pci>",
        ),
        # Board serial numbers (NVIDIA's are 13 digits); no version or model number is that long.
        (re.compile(r"(?<![0-9])[0-9]{12,}(?![0-9])"), "<serial>"),
        (re.compile(r"(/home|/Users)/" + _PATH_PART), r"\1/<user>"),
        (re.compile(r"\b([A-Za-z]:[\\/]Users[\\/])[^\\/\s:;,'\"=]+", re.IGNORECASE), r"\1<user>"),
    )


def this_host() -> str:
    """This machine's host name, as a report stamps it."""
    return platform_seam.host_name()


def build_report(
    facts: dict[str, Any],
    probes: dict[str, dict[str, Any]],
    recommendation: Recommendation | None,
    *,
    stamped: bool = False,
    host: str | None = None,
    redact: bool = False,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    """Assemble a report; `stamped` adds the time and `host`, the machine the facts describe.

    `host` is None when that machine is unknown (facts replayed from a bare facts file).
    `redact` leaves the host out and scrubs identifiers from every string (see `redacted`).
    `fingerprint` (hwcheck/facts/identity.py) names the machine in plain and redacted reports alike.
    """
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "hwcheck_version": __version__,
    }
    if stamped:
        from datetime import UTC, datetime

        report["time"] = datetime.now(UTC).isoformat(timespec="seconds")
        report["host"] = None if redact else host
        if fingerprint:
            # Set outside the scrubbed body: it is a one-way hash, and its digits could look like a serial.
            report["fingerprint"] = fingerprint
    # Bench results travel in facts (facts.measurements.bench) and stand in the report as `bench`.
    measurements = facts.get("measurements")
    bench = measurements.get("bench") if isinstance(measurements, dict) else None
    if measurements is not None:
        facts = {key: value for key, value in facts.items() if key != "measurements"}
    body = {
        "facts": facts,
        "probes": probes,
        "recommendation": recommendation.to_dict() if recommendation else None,
        "node": node_rows.readiness(recommendation),
    }
    if bench:
        body["bench"] = bench
    report.update(redacted(body, hosts=(host, this_host())) if redact else body)
    if redact:
        report["redacted"] = True
    return report


def redacted(document: Any, *, hosts: Iterable[str | None] = ()) -> Any:
    """A copy of `document` with the identifiers in every string (and key) replaced.

    Redaction goes by content, not by field: GPU and MIG UUIDs (also inside
    CUDA_VISIBLE_DEVICES), any UUID, PCI bus addresses, home directories (this user's
    becomes ~, anyone's /home/NAME, /Users/NAME or C:\\Users\\NAME becomes <user>),
    serial-number-like runs of 12 or more digits, the `hosts` names (full and short, any
    case, as whole names) and every value of an identifying key (IDENTIFYING_KEYS)
    wherever it recurs; those keys themselves are dropped. Versions, model names and
    flags are left as they are.
    """
    known = {
        token
        for value in _identifying_values(document)
        for token in re.split(r"[\s,;]+", value)
        if len(token) >= MIN_SCRUBBED_VALUE
    }
    rules = [(re.compile(re.escape(value)), REDACTED) for value in sorted(known, key=len, reverse=True)]
    rules += [(pattern, "~") for pattern in _home_patterns()]
    rules += _content_rules()
    names = {n for host in hosts if host for n in (host, host.split(".")[0]) if n.lower() != "localhost"}
    rules += [
        (re.compile(_NOT_IN_A_NAME.format(re.escape(name)), re.IGNORECASE), "<host>")
        for name in sorted(names, key=len, reverse=True)
    ]
    return _scrubbed(document, rules)


def _identifying_values(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in IDENTIFYING_KEYS and isinstance(item, str):
                yield item
            else:
                yield from _identifying_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _identifying_values(item)


def _home_patterns() -> list[re.Pattern[str]]:
    """This user's home directory as written and as resolved, when it is a real prefix."""
    home = os.path.expanduser("~")
    prefixes = {home, os.path.realpath(home)} - {"", "/", "~"}
    return [
        re.compile(re.escape(prefix.rstrip("/\\")) + r"(?![^/\\\s:;,'\"=])")
        for prefix in sorted(prefixes, key=len, reverse=True)
    ]


def _scrubbed(value: Any, rules: list[tuple[re.Pattern[str], str]]) -> Any:
    if isinstance(value, str):
        for pattern, replacement in rules:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, dict):
        return {
            _scrubbed(key, rules): _scrubbed(item, rules)
            for key, item in value.items()
            if key not in IDENTIFYING_KEYS
        }
    if isinstance(value, list):
        return [_scrubbed(item, rules) for item in value]
    return value


def to_json(report: dict[str, Any]) -> str:
    """The report as pretty-printed JSON text ending in a newline (never NaN, always UTF-8-safe)."""
    from hwcheck.base.safe import json_text

    return json_text(report)


def write_output(
    path: str | Path, text: str, *, inputs: Iterable[str | Path | None] = (), replace: bool = True
) -> None:
    """Write `text` to the file a user named, or to standard output for "-" (see write_outputs)."""
    if str(path) == "-":
        sys.stdout.write(text)
        return
    write_outputs([(path, text)], inputs=inputs, replace=replace)


def say_written(path: str | Path, what: str) -> None:
    """Tell the user where `what` was written: no command writes a file without saying so."""
    if str(path) != "-":
        from hwcheck.base.safe import terminal_text

        print(f"wrote {what} to {terminal_text(str(path))}")


def write_outputs(
    files: Sequence[tuple[str | Path, str]],
    *,
    inputs: Iterable[str | Path | None] = (),
    replace: bool = True,
) -> None:
    """Write each (path, text) atomically, and all of them or none: hwcheck's one way to write a file.

    - Each text goes to a temporary file beside its target (".NAME.*.tmp", which NFD and
      globs skip), is flushed to disk, then renamed over the target: no reader sees half a file.
    - Only regular files are written. A directory, FIFO, device or socket is refused, so
      `-o /dev/null` never replaces /dev/null.
    - A symbolic link is followed on purpose: the file it points to is replaced and the link
      stays a link. A link to anything but a regular file is refused like that thing, and a
      dangling link is refused rather than creating a file wherever it points.
    - An existing file keeps its permission bits (and its owner and group, where this
      process may set them); a new file gets 0o666 less the umask, as a shell redirection does.
    - Every temporary file is written before the first rename; when a later rename fails,
      the files already replaced get their old contents back (a new one is removed).
    - A target that is one of `inputs` (the same file: device and inode) is refused, so
      `bench --script t.py -o t.py` never replaces the script it measures.
    - Without `replace`, no existing file is touched: each file is linked into place, which
      fails if the name exists (create-exclusive, no check-then-write race between two runs).

    Every failure is an InputError naming the file, with nothing left behind.
    """
    from pathlib import Path  # only commands that write files pay for it (~4 ms)

    refuse_inputs([Path(path) for path, _ in files], inputs)
    staged: list[_Staged] = []
    try:
        for path, text in files:
            staged.append(_stage(Path(path), text))
        if replace:
            _commit(staged)
        else:
            _create(staged)
    finally:
        for item in staged:
            for leftover in (item.temporary, item.backup):
                if leftover:
                    Path(leftover).unlink(missing_ok=True)


class _Staged:
    """One file of a write: where it goes and the temporary file that holds its text."""

    __slots__ = ("path", "target", "temporary", "existed", "backup")

    def __init__(self, path: Path, target: Path, temporary: str, *, existed: bool) -> None:
        self.path = path  # as the user named it, for messages
        self.target = target  # the regular file the rename replaces (a link's target)
        self.temporary = temporary
        self.existed = existed
        self.backup: str | None = None  # the old contents, while several files are renamed


def _stage(path: Path, text: str) -> _Staged:
    """Write `text` to a temporary file beside the target, with the target's permissions."""
    import tempfile
    from pathlib import Path

    target, status = _regular_target(path)
    try:
        # `-o reports/node17.json` in a fresh checkout: the folders a new file needs are made.
        if status is None:
            os.makedirs(target.parent, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError(path, f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            if status is None:
                mode = 0o666 & ~_umask()
            else:
                mode = stat.S_IMODE(status.st_mode) & 0o777
                ids = platform_seam.effective_ids()
                if ids is not None and (status.st_uid, status.st_gid) != ids:
                    platform_seam.give_to(temporary, status.st_uid, status.st_gid)
            os.chmod(temporary, mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise InputError(path, f"cannot write: {error.strerror or error}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return _Staged(path, target, temporary, existed=status is not None)


def check_writable(path: str | Path) -> None:
    """The InputError write_output would raise for `path` ("-" aside), raised before long work.

    A temporary file is written beside the target, as a real write does, and removed: a folder
    that is missing or read-only, or a target that is no regular file, is found in milliseconds
    rather than after minutes of measuring.
    """
    from pathlib import Path

    if str(path) == "-":
        return
    staged = _stage(Path(path), "")
    Path(staged.temporary).unlink(missing_ok=True)


def refuse_inputs(targets: Sequence[str | Path], inputs: Iterable[str | Path | None]) -> None:
    """An InputError when a target is one of the inputs: the same file (device and inode, through
    any name or link) or the same resolved path. Called by write_outputs, whatever --force says,
    and by a command before long work whose result would be refused."""
    import contextlib

    identities: dict[object, str | Path] = {}
    for name in inputs:
        if name is not None and str(name) != "-":
            identities[os.path.realpath(name)] = name
            with contextlib.suppress(OSError, ValueError):
                status = os.stat(name)
                identities[(status.st_dev, status.st_ino)] = name
    for target in targets:
        if str(target) == "-":
            continue
        keys: list[object] = [os.path.realpath(target)]
        with contextlib.suppress(OSError, ValueError):
            status = os.stat(target)
            keys.append((status.st_dev, status.st_ino))
        source = next((identities[key] for key in keys if key in identities), None)
        if source is not None:
            raise InputError(target, f"is also an input ({source}): not overwritten")


def _create(staged: list[_Staged]) -> None:
    """Link every temporary file to its new name, which must not exist; on a failure, undo."""
    done: list[_Staged] = []
    for item in staged:
        try:
            if item.existed:
                raise FileExistsError
            os.link(item.temporary, item.path)  # fails if the name exists: no check-then-write
        except FileExistsError:
            _unlink_all(done)
            raise InputError(item.path, "already exists; --force replaces it") from None
        except OSError as error:
            _unlink_all(done)
            raise InputError(item.path, f"cannot write: {error.strerror or error}") from None
        done.append(item)
    for directory in {item.path.parent for item in staged}:
        _sync_directory(directory)


def _unlink_all(staged: list[_Staged]) -> None:
    import contextlib

    for item in staged:
        with contextlib.suppress(OSError):
            item.path.unlink()


def _regular_target(path: Path) -> tuple[Path, os.stat_result | None]:
    """The regular file a write to `path` replaces and its status (None: a new file)."""
    from pathlib import Path

    try:
        status = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(
                path, f"is a symbolic link to {os.readlink(path)}, which does not exist"
            ) from None
        return path, None
    except OSError as error:
        raise InputError(path, f"cannot write: {error.strerror or error}") from None
    if not stat.S_ISREG(status.st_mode):
        # The message says "not a regular file" already, so the kind goes without its gloss.
        raise InputError(
            path, f"is {file_kind(status.st_mode, glossed=False)}, not a regular file: not written"
        )
    return Path(os.path.realpath(path)), status


def _umask() -> int:
    # The umask can only be read by setting it; hwcheck writes from one thread.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _commit(staged: list[_Staged]) -> None:
    """Rename every temporary file over its target; on a failure, put back those already done."""
    import contextlib
    import shutil
    import tempfile

    done: list[_Staged] = []
    for item in staged:
        try:
            if item.existed and len(staged) > 1:
                descriptor, item.backup = tempfile.mkstemp(
                    dir=item.target.parent, prefix=f".{item.target.name}.", suffix=".old"
                )
                os.close(descriptor)
                shutil.copy2(item.target, item.backup)
            os.replace(item.temporary, item.target)
        except OSError as error:
            for earlier in reversed(done):
                with contextlib.suppress(OSError):
                    if earlier.backup:
                        os.replace(earlier.backup, earlier.target)
                    else:
                        earlier.target.unlink()
            raise InputError(item.path, f"cannot write: {error.strerror or error}") from None
        done.append(item)
    for directory in {item.target.parent for item in staged}:
        _sync_directory(directory)


def _sync_directory(directory: Path) -> None:
    import contextlib

    # The rename is durable only once the directory is on disk too; not every system allows it.
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
