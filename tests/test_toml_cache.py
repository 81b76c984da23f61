"""The parsed-TOML cache: keyed by the bytes it was parsed from, private to the user, never fatal."""

from __future__ import annotations

import json
import os
import stat
import tomllib

import pytest

import hwcheck.base
from conftest import FIXTURES, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.base.tables import read_toml

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")


@pytest.fixture
def parses(monkeypatch):
    """The TOML documents tomllib actually parsed (a cache hit parses nothing)."""
    parsed: list[str] = []
    real_loads = tomllib.loads

    def loads(text, **kwargs):
        parsed.append(text)
        return real_loads(text, **kwargs)

    monkeypatch.setattr(tomllib, "loads", loads)
    return parsed


def write_rules(path, title):
    path.write_text(f'[meta]\ntitle = "{title}"\n')


def test_second_read_is_not_parsed_again(tmp_path, cache, parses):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    assert read_toml(rules) == {"meta": {"title": "one"}}
    assert read_toml(rules) == {"meta": {"title": "one"}}
    assert len(parses) == 1
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.parametrize("damage", ["[]", "", "{", '{"key": "other", "document": {}}', '{"document": []}'])
def test_a_damaged_entry_is_ignored_and_rewritten(tmp_path, cache, damage):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    read_toml(rules)
    [entry] = cache.iterdir()
    entry.write_text(damage)
    assert read_toml(rules) == {"meta": {"title": "one"}}
    assert json.loads(entry.read_text())["document"] == {"meta": {"title": "one"}}


def test_damaged_entries_do_not_stop_the_commands(cache):
    first = run_hwcheck("doctor", "--json", "--facts", A100)
    assert first.returncode == 0, first.stderr
    entries = list(cache.iterdir())
    assert entries
    for entry in entries:
        entry.write_text("[]")
    again = run_hwcheck("doctor", "--json", "--facts", A100)
    assert (again.returncode, again.stderr) == (0, "")
    assert json.loads(again.stdout)["recommendation"] == json.loads(first.stdout)["recommendation"]


def test_an_edit_that_keeps_size_and_modification_time_is_seen(tmp_path, cache):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    before = rules.stat()
    read_toml(rules)
    write_rules(rules, "two")
    os.utime(rules, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert rules.stat().st_size == before.st_size
    assert read_toml(rules)["meta"]["title"] == "two"


def test_paths_that_would_flatten_alike_have_their_own_rules(tmp_path, cache):
    (tmp_path / "x").mkdir()
    slash, percent = tmp_path / "x" / "y.toml", tmp_path / "x%y.toml"
    write_rules(slash, "slash")
    write_rules(percent, "percent")
    assert read_toml(slash)["meta"]["title"] == "slash"
    assert read_toml(percent)["meta"]["title"] == "percent"
    assert read_toml(slash)["meta"]["title"] == "slash"


def test_a_cache_others_can_write_is_neither_read_nor_written(tmp_path, cache, parses):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    read_toml(rules)
    [entry] = cache.iterdir()
    forged = json.loads(entry.read_text())
    forged["document"]["meta"]["title"] = "forged"
    entry.write_text(json.dumps(forged))
    cache.chmod(0o777)
    assert read_toml(rules)["meta"]["title"] == "one"
    other = tmp_path / "other.toml"
    write_rules(other, "other")
    read_toml(other)
    assert len(list(cache.iterdir())) == 1
    assert len(parses) == 3


def test_a_new_hwcheck_version_parses_again(tmp_path, cache, parses, monkeypatch):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    read_toml(rules)
    monkeypatch.setattr(hwcheck.base, "__version__", "999.0")
    read_toml(rules)
    assert len(parses) == 2
    assert len(list(cache.iterdir())) == 2


def test_an_edited_file_that_breaks_is_reported(tmp_path, cache):
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    read_toml(rules)
    rules.write_text('[meta\ntitle = "one"\n')
    with pytest.raises(InputError, match="malformed TOML"):
        read_toml(rules)


def test_unwritable_cache_still_parses(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(blocker / "cache"))
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    assert read_toml(rules) == {"meta": {"title": "one"}}


def test_empty_setting_disables_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    assert read_toml(rules) == {"meta": {"title": "one"}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.toml"]


def test_a_long_running_process_sees_a_same_size_edit_with_the_time_restored(tmp_path):
    # A training script or a Ray driver loads rules many times in one process.
    from hwcheck.engine.rules import load_rules

    site = tmp_path / "site.toml"
    rule = '[[rule]]\nid = "site-x"\nseverity = "info"\nwhen = "true"\nmessage = "{}"\n'
    site.write_text(rule.format("first"))
    before = os.stat(site)
    assert load_rules([site]).rules["site-x"].message.source == "first"
    site.write_text(rule.format("again"))  # the same size
    os.utime(site, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(site).st_size == before.st_size
    assert load_rules([site]).rules["site-x"].message.source == "again"


# --- issue 21: a cache that trusts no one --------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"HWCHECK_CACHE_DIR": "/abs/cache"}, "/abs/cache"),
        ({"HWCHECK_CACHE_DIR": "relative", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}, "/xdg/hwcheck"),
        ({"XDG_CACHE_HOME": "rel", "HOME": "/home/u"}, "/home/u/.cache/hwcheck"),
        ({"HOME": "/home/u"}, "/home/u/.cache/hwcheck"),
        ({"HWCHECK_CACHE_DIR": ""}, None),
    ],
)
def test_the_cache_directory_is_absolute_or_none(monkeypatch, settings, expected):
    from hwcheck.base.tables import cache_dir

    for name in ("HWCHECK_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    found = cache_dir()
    assert (str(found) if found else None) == expected


@pytest.mark.parametrize("home", [None, "", "relative/home", "~"])
def test_without_an_absolute_home_nothing_lands_in_the_working_directory(tmp_path, home):
    env = {k: v for k, v in os.environ.items() if k not in ("HWCHECK_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    if home is not None:
        env["HOME"] = home
    code = (
        "import os, pwd\n"
        "pwd.getpwuid = lambda uid: (_ for _ in ()).throw(KeyError(uid))  # a user with no passwd entry\n"
        "from hwcheck.base.tables import cache_dir, read_toml, rules_dir\n"
        "read_toml(rules_dir() / 'policy' / 'policy.toml')\n"
        "print(cache_dir())\n"
    )
    import subprocess
    import sys

    from conftest import ROOT

    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "None\n" and list(tmp_path.iterdir()) == []


def test_a_read_only_file_system_costs_only_speed(tmp_path, monkeypatch):
    import errno

    import hwcheck.base.tables as tables

    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir(mode=0o700)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tables.os, "open", read_only)
    monkeypatch.setattr(tables.os, "unlink", read_only)  # the cache unlinks with os, not pathlib
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "read-only"\n')
    assert tables.store_document("0" * 40, {"meta": {}}) is None
    monkeypatch.undo()
    assert read_toml(rules) == {"meta": {"title": "read-only"}}


def test_a_file_changed_just_now_is_named_by_its_bytes(tmp_path):
    from hwcheck.base import tables

    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    assert tables.file_signature(rules) is None  # a second edit within the clock tick would look the same
    assert tables.file_key(rules) == tables.content_key(rules)


def test_a_file_changed_earlier_is_named_by_its_status_and_any_edit_shows(tmp_path, monkeypatch):
    import time

    from hwcheck.base import tables

    rules = tmp_path / "site.toml"
    write_rules(rules, "one")
    before = rules.stat()
    later = time.time_ns() + int(tables.RACY_SECONDS * 1e9) + 10**9
    monkeypatch.setattr(tables, "_now_ns", lambda: later)
    key = tables.file_key(rules)
    assert key == tables.file_signature(rules) and key.startswith("stat ")
    time.sleep(0.05)  # past the file system's clock tick, as any real later edit is
    write_rules(rules, "two")
    os.utime(rules, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same size and modification time
    assert rules.stat().st_size == before.st_size
    assert tables.file_key(rules) != key


def test_what_is_not_a_regular_file_has_no_signature(tmp_path, monkeypatch):
    from hwcheck.base import tables

    monkeypatch.setattr(tables, "_now_ns", lambda: 2**62)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert tables.file_signature(tmp_path) is None
    assert tables.file_signature(fifo) is None
    assert tables.file_signature(tmp_path / "missing") is None
