"""report.write_output/write_outputs: only regular files, atomically, keeping their permissions."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT, run_hwcheck
from hwcheck.base.errors import InputError
from hwcheck.base.inputs import file_kind
from hwcheck.render.report import write_output, write_outputs

A100 = str(FIXTURES / "facts/a100-sxm4x4-tf216.json")


def names(folder):
    return sorted(path.name for path in folder.iterdir())


def test_the_writer_and_the_reader_name_file_kinds_from_one_table():
    # The reader glosses FIFO ("is a FIFO (named pipe), expected ..."); the writer's message
    # says "not a regular file" after the kind, so it takes the kind alone.
    assert file_kind(stat.S_IFIFO) == "a FIFO (named pipe)"
    assert file_kind(stat.S_IFIFO, glossed=False) == "a FIFO"
    for mode, kind in [(stat.S_IFDIR, "a directory"), (stat.S_IFCHR, "a character device")]:
        assert file_kind(mode) == file_kind(mode, glossed=False) == kind
    assert file_kind(stat.S_IFBLK) == "a block device" and file_kind(stat.S_IFSOCK) == "a socket"


def test_a_fifo_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        write_output(fifo, "text\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and names(tmp_path) == ["fifo"]


def test_a_directory_is_refused(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(InputError, match="is a directory"):
        write_output(folder, "text\n")
    assert folder.is_dir() and names(tmp_path) == ["folder"]


def test_a_character_device_is_refused_without_touching_it(tmp_path):
    # /dev/null itself is only stat'ed: the refusal comes before any temporary file or rename.
    with pytest.raises(InputError, match="/dev/null: is a character device"):
        write_output("/dev/null", "text\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_link_to_a_regular_file_replaces_the_file_and_stays_a_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old\n")
    real.chmod(0o604)
    link = tmp_path / "link.json"
    link.symlink_to(real.name)
    write_output(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text() == "new\n" and real.stat().st_mode & 0o777 == 0o604
    assert names(tmp_path) == ["link.json", "real.json"]


def test_a_link_to_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    with pytest.raises(InputError, match="link: is a FIFO"):
        write_output(link, "text\n")
    assert link.is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert names(tmp_path) == ["fifo", "link"]


def test_a_dangling_link_is_refused_rather_than_followed(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere" / "file")
    with pytest.raises(InputError, match="symbolic link to .*elsewhere/file, which does not exist"):
        write_output(link, "text\n")
    assert names(tmp_path) == ["link"]


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o664])
def test_an_existing_file_keeps_its_mode(tmp_path, mode):
    target = tmp_path / "features"
    target.write_text("old\n")
    target.chmod(mode)
    write_output(target, "new\n")
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == mode


@pytest.mark.host("root")
def test_root_keeps_an_existing_file_s_owner(tmp_path):
    target = tmp_path / "features"
    target.write_text("old\n")
    os.chown(target, 4321, 4322)
    write_output(target, "new\n")
    assert (target.stat().st_uid, target.stat().st_gid) == (4321, 4322)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_new_file_gets_0666_less_the_umask(tmp_path, umask, mode):
    target = tmp_path / "node.json"
    result = subprocess.run(
        [sys.executable, "-m", "hwcheck", "report", "-o", str(target), "--facts", A100],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        umask=umask,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert target.stat().st_mode & 0o777 == mode


def test_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_output("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n" and names(tmp_path) == []


def test_a_failed_second_rename_restores_the_first_file(tmp_path, monkeypatch):
    script, settings = tmp_path / "train.py", tmp_path / "train.settings.json"
    script.write_text("old script\n")
    settings.write_text("old settings\n")
    real_replace = os.replace

    def replace_failing_on_settings(source, destination):
        if os.fspath(destination) == os.fspath(settings):
            raise OSError(28, "No space left on device")
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace_failing_on_settings)
    with pytest.raises(InputError, match="train.settings.json: cannot write: No space left"):
        write_outputs([(script, "new script\n"), (settings, "new settings\n")])
    assert script.read_text() == "old script\n" and settings.read_text() == "old settings\n"
    assert names(tmp_path) == ["train.py", "train.settings.json"]


def test_a_failed_second_rename_removes_a_new_first_file(tmp_path, monkeypatch):
    script, settings = tmp_path / "train.py", tmp_path / "train.settings.json"
    real_replace = os.replace

    def replace_failing_on_settings(source, destination):
        if os.fspath(destination) == os.fspath(settings):
            raise OSError(5, "Input/output error")
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace_failing_on_settings)
    with pytest.raises(InputError, match="Input/output error"):
        write_outputs([(script, "new script\n"), (settings, "new settings\n")])
    assert names(tmp_path) == []


def test_a_refused_second_file_leaves_the_first_unwritten(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("old script\n")
    (tmp_path / "settings").mkdir()
    with pytest.raises(InputError, match="settings: is a directory"):
        write_outputs([(script, "new script\n"), (tmp_path / "settings", "{}\n")])
    assert script.read_text() == "old script\n" and names(tmp_path) == ["settings", "train.py"]


@pytest.mark.parametrize("command", ["report", "nfd"])
def test_the_commands_refuse_a_fifo_with_one_line(tmp_path, command):
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    result = run_hwcheck(command, "-o", str(fifo), "--facts", A100)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"hwcheck: error: {fifo}: is a FIFO, not a regular file: not written"
    ]
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and names(tmp_path) == ["out"]


def test_nfd_rewrites_a_readable_feature_file_readable(tmp_path):
    # A non-root NFD worker reads the file hwcheck (as root) rewrites every few minutes.
    feature_file = tmp_path / "hwcheck"
    feature_file.write_text("old\n")
    feature_file.chmod(0o644)
    result = run_hwcheck("nfd", "-o", str(feature_file), "--facts", A100)
    assert result.returncode in (0, 1), result.stderr
    assert feature_file.stat().st_mode & 0o777 == 0o644
    assert "hwcheck" in feature_file.read_text() and names(tmp_path) == ["hwcheck"]


def test_report_through_a_link_writes_the_linked_file(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}\n")
    link = tmp_path / "latest.json"
    link.symlink_to(real.name)
    assert run_hwcheck("report", "-o", str(link), "--facts", A100).returncode == 0
    assert link.is_symlink() and json.loads(real.read_text())["facts"]["gpus"]


# --- issue 21: never over an input, create-exclusive without --force, written before printed --


def test_an_output_that_is_an_input_is_refused(tmp_path):
    script = tmp_path / "t.py"
    script.write_text("def make_step(policy):\n    return lambda: 0.0\n")
    link = tmp_path / "link.py"
    link.symlink_to(script)
    for target in (script, link):
        with pytest.raises(InputError, match=r"is also an input \(.*t.py\): not overwritten"):
            write_output(target, "{}\n", inputs=[str(script)])
    assert script.read_text().startswith("def make_step") and names(tmp_path) == ["link.py", "t.py"]


def test_bench_does_not_overwrite_the_script_it_measures(tmp_path):
    script = tmp_path / "t.py"
    script.write_text("import torch\n\ndef make_step(policy):\n    return lambda: 0.0\n")
    before = script.read_text()
    options = ["--framework", "torch", "--device", "cpu", "--quick"]
    result = run_hwcheck("bench", "--script", str(script), *options, "-o", str(script))
    assert result.returncode == 2, result.stderr
    assert "is also an input" in result.stderr and script.read_text() == before


def test_report_does_not_overwrite_its_facts(tmp_path):
    facts = tmp_path / "facts.json"
    facts.write_text(open(A100).read())
    before = facts.read_text()
    result = run_hwcheck("report", "--facts", str(facts), "-o", str(facts))
    assert result.returncode == 2 and "is also an input" in result.stderr and facts.read_text() == before


def test_without_replace_an_existing_file_is_never_touched(tmp_path):
    existing = tmp_path / "train.py"
    existing.write_text("mine\n")
    with pytest.raises(InputError, match="already exists"):
        write_outputs([(tmp_path / "new.json", "{}\n"), (existing, "theirs\n")], replace=False)
    # All or nothing: the first file, created before the clash, is removed again.
    assert existing.read_text() == "mine\n" and names(tmp_path) == ["train.py"]
    write_outputs([(tmp_path / "new.json", "{}\n")], replace=False)
    assert (tmp_path / "new.json").read_text() == "{}\n"


def test_without_replace_the_check_is_the_write(tmp_path, monkeypatch):
    # Another run creates the file between the staging and the commit: its file wins, ours is refused.
    import hwcheck.render.report as report

    target = tmp_path / "train.py"
    stage = report._stage

    def racing_stage(path, text):
        staged = stage(path, text)
        target.write_text("the other run\n")
        return staged

    monkeypatch.setattr(report, "_stage", racing_stage)
    with pytest.raises(InputError, match="already exists"):
        write_outputs([(target, "ours\n")], replace=False)
    assert target.read_text() == "the other run\n" and names(tmp_path) == ["train.py"]


def test_two_config_runs_at_once_write_once(tmp_path):
    command = [sys.executable, "-m", "hwcheck", "config", "--framework", "torch", "--facts", A100]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    output = ["-o", "train.py"]
    runs = [
        subprocess.Popen([*command, *output], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    codes = sorted(run.wait(120) for run in runs)
    for run in runs:
        assert run.stdout is not None
        run.stdout.close()
    assert codes.count(0) == 1 and set(codes[1:]) == {2}
    assert names(tmp_path) == ["train.py", "train.settings.json"]
