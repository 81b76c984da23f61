"""Hugging Face model ids checked as the Hub checks them, and its cache read under hwcheck's bounds.

The rules are huggingface_hub's own (utils.validate_repo_id, huggingface_hub 2.4.0): an id the
Hub refuses is one line naming the rule, never a traceback; a cache file (refs/main) is read
as every outside file is (base/inputs.read_bytes: regular files only, at most 1 KB), and a
damaged cache is named by the file that is wrong, not as something hwcheck failed to write.
"""

from __future__ import annotations

import json
import os

import pytest

from hwcheck.base.errors import InputError
from hwcheck.cli import main
from hwcheck.recommendation.model_source import MAX_REF_BYTES, cached_config, repo_id_problem

COMMIT = "0123456789abcdef0123456789abcdef01234567"
GPT2 = {
    "model_type": "gpt2",
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "vocab_size": 50257,
    "n_positions": 1024,
}


@pytest.mark.parametrize(
    "text",
    [
        "gpt2",
        "openai-community/gpt2",
        "a",
        "_x",
        "x_",
        "Foo-BAR_foo.bar123",
        "a" * 96,
        f"{'o' * 96}/{'n' * 96}",
    ],
)
def test_ids_the_hub_accepts_are_ids(text):
    assert repo_id_problem(text) is None
    validators = pytest.importorskip("huggingface_hub.utils._validators")
    validators.validate_repo_id(text)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("models--gpt2", "'--' or '..'"),
        ("org/a--b", "'--' or '..'"),
        ("a..b", "'--' or '..'"),
        ("gpt2.git", "end in '.git'"),
        ("gpt2-", "not starting or ending with '-' or '.'"),
        (".gpt2", "not starting or ending with '-' or '.'"),
        ("org/-x", "not starting or ending with '-' or '.'"),
        ("a" * 97, "1 to 96"),
        ("datasets/foo/bar", "a name or owner/name"),
        ("café", "letters, digits"),
        ("", "1 to 96"),
    ],
)
def test_ids_the_hub_refuses_are_one_line_naming_the_rule(capsys, text, rule):
    if text:
        validators = pytest.importorskip("huggingface_hub.utils._validators")
        with pytest.raises(validators.HFValidationError):
            validators.validate_repo_id(text)  # the Hub's own check agrees
    assert rule in (repo_id_problem(text) or "")
    if text and not text.startswith(".") and not os.path.exists(text):  # ".x" is meant as a file
        assert main(["fit", "--model", text, "--gpu-memory", "24"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a Hugging Face model id" in err and rule in err


def cache_with(tmp_path, ref: bytes | None = COMMIT.encode(), snapshots: str = "folder"):
    folder = tmp_path / "hub" / "models--openai-community--gpt2"
    (folder / "refs").mkdir(parents=True)
    if ref is not None:
        (folder / "refs" / "main").write_bytes(ref)
    if snapshots == "file":
        (folder / "snapshots").write_text("")
    elif snapshots == "folder":
        (folder / "snapshots" / COMMIT).mkdir(parents=True)
        (folder / "snapshots" / COMMIT / "config.json").write_text(json.dumps(GPT2))
    return tmp_path / "hub", folder


def test_a_cached_config_is_found_at_its_revision(tmp_path):
    hub, folder = cache_with(tmp_path, ref=COMMIT.encode() + b"\n")
    assert cached_config("openai-community/gpt2", str(hub)) == folder / "snapshots" / COMMIT / "config.json"
    assert cached_config("someone/else", str(hub)) is None


def test_a_ref_at_its_cap_is_read_and_one_byte_over_is_refused_unread(tmp_path):
    hub, folder = cache_with(tmp_path, ref=COMMIT.encode().ljust(MAX_REF_BYTES, b"\n"))
    assert cached_config("openai-community/gpt2", str(hub)) is not None
    (folder / "refs" / "main").write_bytes(COMMIT.encode().ljust(MAX_REF_BYTES + 1, b"\n"))
    with pytest.raises(InputError, match="refs/main: larger than 1 KB, not a Hugging Face cache ref"):
        cached_config("openai-community/gpt2", str(hub))


def test_a_gigabyte_ref_is_refused_without_reading_it(tmp_path):
    hub, folder = cache_with(tmp_path)
    os.truncate(folder / "refs" / "main", 2**30)
    with pytest.raises(InputError, match="larger than 1 KB"):
        cached_config("openai-community/gpt2", str(hub))


@pytest.mark.skipif(os.name != "posix", reason="FIFOs are POSIX")
def test_a_ref_that_is_a_fifo_is_refused_at_once(tmp_path):
    hub, folder = cache_with(tmp_path, ref=None)
    os.mkfifo(folder / "refs" / "main")
    with pytest.raises(InputError, match="FIFO"):
        cached_config("openai-community/gpt2", str(hub))


def test_a_ref_that_is_not_a_commit_names_the_ref(tmp_path):
    hub, _ = cache_with(tmp_path, ref=b"main\n")
    with pytest.raises(
        InputError, match=r"refs/main: not a commit hash .* remove .*models--openai-community--gpt2"
    ):
        cached_config("openai-community/gpt2", str(hub))


def test_snapshots_that_is_a_file_is_named_as_what_was_read_not_as_a_write(tmp_path, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    hub, folder = cache_with(tmp_path, snapshots="file")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["fit", "--model", "openai-community/gpt2", "--gpu-memory", "24"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" not in err
    assert f"{folder / 'snapshots'}: is a file, not a folder" in err


def test_an_unusable_cached_config_names_the_cached_file(tmp_path, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    hub, folder = cache_with(tmp_path)
    (folder / "snapshots" / COMMIT / "config.json").write_text("")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    assert main(["fit", "--model", "openai-community/gpt2", "--gpu-memory", "24"]) == 2
    err = capsys.readouterr().err
    assert str(folder / "snapshots" / COMMIT / "config.json") in err and "empty file" in err
