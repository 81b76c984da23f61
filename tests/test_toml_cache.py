"""The parsed-TOML cache: used while a file is unchanged, never after it changes."""

from __future__ import annotations

import os

import pytest

from hwcheck.errors import InputError
from hwcheck.knowledge import read_toml


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(directory))
    return directory


def test_second_read_comes_from_the_cache(tmp_path, cache):
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "one"\n')
    assert read_toml(rules) == {"meta": {"title": "one"}}
    [entry] = cache.iterdir()
    # Prove the cache is read: doctor a cached entry and read again.
    entry.write_text(entry.read_text().replace('"one"', '"from cache"'))
    assert read_toml(rules)["meta"]["title"] == "from cache"


def test_an_edited_file_is_parsed_again(tmp_path, cache):
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "one"\n')
    read_toml(rules)
    rules.write_text('[meta]\ntitle = "two"\n')
    stat = rules.stat()
    os.utime(rules, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert read_toml(rules)["meta"]["title"] == "two"


def test_an_edited_file_that_breaks_is_reported(tmp_path, cache):
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "one"\n')
    read_toml(rules)
    rules.write_text('[meta\ntitle = "one"\n')
    with pytest.raises(InputError, match="malformed TOML"):
        read_toml(rules)


def test_unwritable_cache_still_parses(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("HWCHECK_CACHE_DIR", str(blocker / "cache"))
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "one"\n')
    assert read_toml(rules) == {"meta": {"title": "one"}}


def test_empty_setting_disables_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_CACHE_DIR", "")
    rules = tmp_path / "site.toml"
    rules.write_text('[meta]\ntitle = "one"\n')
    assert read_toml(rules) == {"meta": {"title": "one"}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.toml"]
