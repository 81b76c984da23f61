"""The atlas (rules/atlas/*.toml): classes of failure taken from the trackers, with the error
messages that name them, the facts that decide them and the rules that catch them.

Every field is checked as the files are read: a bad one is an InputError naming the file and
the class, so a mistake in one helper's file cannot pass silently into `hwcheck explain`.
"""

from __future__ import annotations

import os
import re

from hwcheck.base.errors import InputError
from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import policy_files, read_toml, rules_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How a signature is searched in the user's text (ATLAS_FORMAT: re.IGNORECASE | re.DOTALL).
SIGNATURE_FLAGS = re.IGNORECASE | re.DOTALL
_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TRACKER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_FACT = re.compile(r"[a-z_][a-z0-9_]*(?:\[\])?(?:\.[A-Za-z0-9_.-]+?(?:\[\])?)*")
# A signature longer than this is a pasted log, not a pattern.
MAX_SIGNATURE = 400
_STRINGS = ("id", "title", "opened", "check")
_LISTS = ("trackers", "threads", "facts", "rules", "signatures", "frameworks", "cases")


class AtlasClass(NamedTuple):
    """One class of failure: how it reads, what decides it and what catches it."""

    id: str
    title: str
    group: str  # the file's name without .toml
    trackers: tuple[str, ...]
    threads: tuple[str, ...]
    opened: str
    facts: tuple[str, ...]
    rules: tuple[str, ...]
    check: str
    signatures: tuple[re.Pattern[str], ...]
    frameworks: tuple[str, ...]
    cases: tuple[str, ...]
    in_corpus_before: bool = False


class Unpredictable(NamedTuple):
    """A thread no probe could have predicted, and why."""

    thread: str
    tracker: str
    opened: str
    why: str
    group: str


class Atlas(NamedTuple):
    """Every class and unpredictable thread of rules/atlas/, in file order."""

    classes: tuple[AtlasClass, ...]
    unpredictable: tuple[Unpredictable, ...]
    titles: dict[str, str]  # group -> the file's [meta] title
    sampling: dict[str, str]  # group -> how its threads were taken

    @property
    def signature_count(self) -> int:
        """How many signatures the classes hold in all."""
        return sum(len(atlas_class.signatures) for atlas_class in self.classes)


def atlas_folder() -> str:
    """The shipped rules/atlas/ folder."""
    return os.path.join(rules_folder(), "atlas")


def atlas_files(folder: str | None = None) -> list[str]:
    """The atlas's files (rules/atlas/*.toml), in name order."""
    directory = folder or atlas_folder()
    if not os.path.isdir(directory):
        return []
    return [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if name.endswith(".toml")]


def shipped_rule_ids() -> frozenset[str]:
    """The ids of every shipped rule (rules/policy/*.toml)."""
    ids: set[str] = set()
    for path in policy_files():
        for entry in read_toml(path).get("rule", []):
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                ids.add(entry["id"])
    return frozenset(ids)


def load_atlas(folder: str | None = None) -> Atlas:
    """Every file of the atlas, each field checked; raises InputError naming the file and the class."""
    rule_ids = shipped_rule_ids()
    classes: list[AtlasClass] = []
    unpredictable: list[Unpredictable] = []
    titles: dict[str, str] = {}
    sampling: dict[str, str] = {}
    seen: dict[str, str] = {}
    for path in atlas_files(folder):
        group = os.path.basename(path).removesuffix(".toml")
        document = read_toml(path)
        unexpected = set(document) - {"meta", "class", "unpredictable"}
        if unexpected:
            raise InputError(path, f"unexpected table {sorted(unexpected)[0]!r} (meta, class, unpredictable)")
        meta = document.get("meta")
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("title", "sampling")):
            raise InputError(path, "[meta] needs title and sampling (strings)")
        titles[group], sampling[group] = meta["title"], meta["sampling"]
        for entry in _tables(document, "class", path):
            atlas_class = _class(entry, path, group, rule_ids)
            if atlas_class.id in seen:
                raise InputError(path, f"class {atlas_class.id}: id already used in {seen[atlas_class.id]}")
            seen[atlas_class.id] = os.path.basename(path)
            classes.append(atlas_class)
        unpredictable.extend(
            _unpredictable(entry, path, group) for entry in _tables(document, "unpredictable", path)
        )
    return Atlas(tuple(classes), tuple(unpredictable), titles, sampling)


def _tables(document: dict[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    entries = document.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise InputError(path, f"{key}: expected [[{key}]] tables")
    return entries


def _class(entry: dict[str, Any], path: str, group: str, rule_ids: frozenset[str]) -> AtlasClass:
    name = entry.get("id")
    where = f"class {name}" if isinstance(name, str) and _ID.fullmatch(name) else "a class"
    if where == "a class":
        raise InputError(path, f"a class without a kebab-case id (got {name!r})")

    def problem(text: str) -> InputError:
        return InputError(path, f"{where}: {text}")

    known = {*_STRINGS, *_LISTS, "in_corpus_before"}
    extra = sorted(set(entry) - known)
    if extra:
        raise problem(f"unexpected field {extra[0]!r}")
    for key in _STRINGS:
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise problem(f"{key} must be a non-empty string")
    for key in _LISTS:
        value = entry.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise problem(f"{key} must be a non-empty list of strings")
    if not _DATE.fullmatch(entry["opened"]):
        raise problem(f"opened must be YYYY-MM-DD, not {entry['opened']!r}")
    for thread in entry["threads"]:
        _https(thread, problem)
    for tracker in entry["trackers"]:
        if not _TRACKER.fullmatch(tracker):
            raise problem(f"tracker {tracker!r} is not owner/repo")
    for fact in entry["facts"]:
        if not _FACT.fullmatch(fact):
            raise problem(f"fact {fact!r} is not a facts key (dotted, [] for a list)")
    missing = [rule for rule in entry["rules"] if rule not in rule_ids]
    if missing:
        raise problem(f"rule {missing[0]!r} is not a shipped rule (rules/policy/*.toml)")
    in_corpus = entry.get("in_corpus_before", False)
    if not isinstance(in_corpus, bool):
        raise problem("in_corpus_before must be true or false")
    return AtlasClass(
        id=str(name),
        title=entry["title"],
        group=group,
        trackers=tuple(entry["trackers"]),
        threads=tuple(entry["threads"]),
        opened=entry["opened"],
        facts=tuple(entry["facts"]),
        rules=tuple(entry["rules"]),
        check=entry["check"],
        signatures=tuple(_signature(text, problem) for text in entry["signatures"]),
        frameworks=tuple(entry["frameworks"]),
        cases=tuple(entry["cases"]),
        in_corpus_before=in_corpus,
    )


def _signature(text: str, problem: Any) -> re.Pattern[str]:
    if len(text) > MAX_SIGNATURE:
        raise problem(f"signature longer than {MAX_SIGNATURE} characters")
    try:
        pattern = re.compile(text, SIGNATURE_FLAGS)
    except re.error as error:
        raise problem(f"signature {text!r} does not compile: {error}") from None
    if pattern.search(""):
        raise problem(f"signature {text!r} matches an empty text")
    return pattern


def _https(url: Any, problem: Any) -> None:
    if not isinstance(url, str) or not re.fullmatch(r"https://[^\s/]+/\S*", url):
        raise problem(f"thread {url!r} is not an https URL")


def _unpredictable(entry: dict[str, Any], path: str, group: str) -> Unpredictable:
    thread = entry.get("thread")

    def problem(text: str) -> InputError:
        return InputError(path, f"unpredictable {thread}: {text}")

    for key in ("thread", "tracker", "opened", "why"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise problem(f"{key} must be a non-empty string")
    extra = sorted(set(entry) - {"thread", "tracker", "opened", "why"})
    if extra:
        raise problem(f"unexpected field {extra[0]!r}")
    _https(thread, problem)
    if not _DATE.fullmatch(entry["opened"]):
        raise problem(f"opened must be YYYY-MM-DD, not {entry['opened']!r}")
    if not _TRACKER.fullmatch(entry["tracker"]):
        raise problem(f"tracker {entry['tracker']!r} is not owner/repo")
    return Unpredictable(entry["thread"], entry["tracker"], entry["opened"], entry["why"], group)
