"""Remedies are safe to paste: every command in them is an argument list quoted for the shell.

Each corpus case (and a few built around the remedies that carry outside values: the
recorded LD_LIBRARY_PATH, TORCH_CUDA_ARCH_LIST, the torch version in the ROCm install line)
is advised again with a hostile text added to every version, package, path and environment
value it records. Every command a remedy then holds that carries the hostile text is checked
with `sh -n` and run by sh with pip stubbed: only the command may run (the marker file the
payloads try to create never appears) and the hostile value reaches it as one argument.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from corpus.score import load_cases

from hwcheck.base.shell import command_from_template, export_command, shell_command, shell_word
from hwcheck.recommendation import recommend

MARKER = "MARKER"
PAYLOADS = (
    ";touch MARKER",
    "$(touch MARKER)",
    "`touch MARKER`",
    "';touch MARKER;'",
    '";touch MARKER;"',
    "\ntouch MARKER\n",
    " x;touch${IFS}MARKER",
    "&&touch MARKER||",
)
# Where a command in a remedy starts, and the prose that ends one (outside quotes).
COMMAND_STARTS = ("pip ", "pip3 ", "export ", "unset ")
PROSE_ENDS = (" (", ", ", ". ", " to ", " or ", " and ", " before ", ")")
# The keys whose values the probes read from outside (files, the environment).
HOSTILE_KEYS = frozenset(("version", "package", "cudnn", "path", "cuda", "jaxlib", "plugin", "pjrt"))

V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}


def _built_cases() -> list[tuple[str, dict, str]]:
    """Facts for the remedies that carry outside values, beside the corpus (name, facts, framework)."""
    shadow = "/opt/cudnn/lib64"
    cudnn_on_ld_path = {
        "schema_version": 1,
        "os": {"system": "Linux"},
        "gpus": [V100],
        "environment": {"LD_LIBRARY_PATH": f"{shadow}:/opt/cuda/lib64"},
        "frameworks": {"torch": {"version": "1.12.0+cu113", "cuda": "11.3", "cudnn": "8.3.2"}},
        "loaded": {
            "torch": {
                "cudnn": {
                    "version": "8.0.3",
                    "path": f"{shadow}/libcudnn.so.8",
                    "source": "LD_LIBRARY_PATH",
                    "found_by": "LD_LIBRARY_PATH",
                }
            }
        },
    }
    pip_cudnn = json.loads(json.dumps(cudnn_on_ld_path))
    pip_cudnn["frameworks"]["torch"] = {"version": "2.4.1+cu121", "cuda": "12.1", "cudnn": "9.1.0.70"}
    pip_cudnn["loaded"]["torch"]["cudnn"].update(source="pip", found_by="RPATH", version="9.0.0.312")
    arch_list = {
        "schema_version": 1,
        "os": {"system": "Linux"},
        "gpus": [V100],
        "environment": {"TORCH_CUDA_ARCH_LIST": "8.0;9.0"},
        "frameworks": {"torch": {"version": "2.4.1+cu121", "cuda": "12.1"}},
    }
    return [
        ("cudnn-on-ld-library-path", cudnn_on_ld_path, "torch"),
        ("cudnn-from-pip", pip_cudnn, "torch"),
        ("torch-cuda-arch-list", arch_list, "torch"),
    ]


def _all_cases() -> list[tuple[str, dict, str]]:
    cases = [
        (case.name, json.loads(case.facts_path.read_text()), case.hwcheck_framework) for case in load_cases()
    ]
    # A CPU-only PyTorch on an AMD GPU: the ROCm install line names the installed torch's version.
    amd = next(facts for name, facts, _ in cases if name == "healthy-amd-rx7900xtx-torch23-rocm60")
    cpu_build = json.loads(json.dumps(amd))
    cpu_build["frameworks"]["torch"] = {"version": "2.3.0"}
    return [*cases, ("amd-torch-cpu-build", cpu_build, "torch"), *_built_cases()]


def _hostile(value, payload: str, key: str | None = None):
    """`value` with `payload` in every outside string: appended, or inside a path's folder."""
    if isinstance(value, dict):
        return {name: _hostile(item, payload, name) for name, item in value.items()}
    if isinstance(value, list):
        return [_hostile(item, payload, key) for item in value]
    if not isinstance(value, str) or key is None:
        return value
    if key == "path" and "/" in value:
        folder, _, name = value.rpartition("/")
        return f"{folder}{payload}/{name}"
    if key == "LD_LIBRARY_PATH":
        return ":".join(entry + payload for entry in value.split(":"))
    if key in HOSTILE_KEYS or key.isupper():
        return value + payload
    return value


def _scan_command(text: str, start: int) -> int:
    """Where the command starting at `start` ends: the first prose ending outside sh's quotes."""
    at, quote = start, None
    while at < len(text):
        character = text[at]
        if quote == "'":
            quote = None if character == "'" else quote
        elif quote == '"':
            if character == "\\":
                at += 1
            elif character == '"':
                quote = None
        elif character in "'\"":
            quote = character
        elif character == "\\":
            at += 1
        elif any(text.startswith(end, at) for end in PROSE_ENDS) or (
            character == "." and text[at + 1 :].strip() == ""
        ):
            return at
        at += 1
    return len(text)


def _commands_with(remedy: str, payload: str) -> list[str]:
    """Each command in `remedy` whose text holds `payload` (or what is left of it after quoting)."""
    found = []
    for start in sorted({at for word in COMMAND_STARTS for at in _find_all(remedy, word)}):
        if start and remedy[start - 1] not in " (:\n;&'\"`$":
            continue  # "pip " inside a word
        command = remedy[start : _scan_command(remedy, start)]
        if MARKER in command:
            found.append(command)
    return found


def _find_all(text: str, word: str) -> list[int]:
    places, at = [], text.find(word)
    while at >= 0:
        places.append(at)
        at = text.find(word, at + 1)
    return places


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    """A folder of harmless pip/pip3 that record their arguments (NUL-separated) in $ARGS_FILE."""
    folder = tmp_path_factory.mktemp("stubs")
    for name in ("pip", "pip3"):
        stub = folder / name
        stub.write_text(
            '#!/bin/sh\nfor argument in "$@"; do printf "%s\\000" "$argument"; done >> "$ARGS_FILE"\n'
        )
        stub.chmod(0o755)
    return folder


def _run(command: str, folder: Path, stubs: Path) -> list[str]:
    """Run `command` with sh in `folder` with the stubs first on PATH; the stubs' arguments."""
    syntax = subprocess.run(["sh", "-n", "-c", command], capture_output=True, text=True, timeout=30)
    assert syntax.returncode == 0, f"sh -n refuses {command!r}: {syntax.stderr}"
    arguments = folder / "arguments"
    environment = {**os.environ, "PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    environment["ARGS_FILE"] = str(arguments)
    subprocess.run(["sh", "-c", command], cwd=folder, env=environment, capture_output=True, timeout=30)
    recorded = arguments.read_bytes().split(b"\0")[:-1] if arguments.exists() else []
    return [argument.decode() for argument in recorded]


def test_every_remedy_command_runs_only_itself_with_hostile_values(tmp_path, stubs):
    cases = _all_cases()
    checked: dict[str, set[str]] = {}
    runs = itertools.count()
    ran: set[str] = set()
    for payload in PAYLOADS:
        carrying = []
        for name, facts, framework in cases:
            recommendation = recommend(_hostile(facts, payload), framework=framework)
            for finding in recommendation.findings:
                for command in _commands_with(finding.remedy or "", payload):
                    checked.setdefault(finding.id, set()).add(payload)
                    carrying.append((name, facts, framework))
                    if command in ran:
                        continue
                    ran.add(command)
                    folder = tmp_path / f"run{next(runs)}"
                    folder.mkdir()
                    arguments = _run(command, folder, stubs)
                    assert not (folder / MARKER).exists(), f"{name} {finding.id}: {command!r} ran the payload"
                    if command.startswith("pip"):
                        # The hostile value arrives whole, as (part of) one argument.
                        assert any(payload in argument for argument in arguments), (command, arguments)
        # The first payload finds the cases whose remedies carry outside values; the others
        # are tried on those (every case again would take the test past a minute).
        cases = list({name: (name, facts, framework) for name, facts, framework in carrying}.values())
    # The remedies that carry outside values were among those checked, with every payload.
    for rule in (
        "cudnn-shadowed-older-than-build",
        "torch-cuda-arch-list-missing",
        "amd-framework-not-rocm",
    ):
        assert checked.get(rule) == set(PAYLOADS), (rule, sorted(checked))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_shell_helpers_keep_each_value_one_word(payload):
    value = "2.5.1" + payload
    assert shlex.split(shell_command(["pip", "install", f"torch=={value}"])) == [
        "pip",
        "install",
        f"torch=={value}",
    ]
    assert shlex.split(shell_word(value)) == [value]
    assert shlex.split(export_command("LD_LIBRARY_PATH", "/a b" + payload)) == [
        "export",
        "LD_LIBRARY_PATH=/a b" + payload,
    ]
    filled = command_from_template(
        "pip install torch=={version} --index-url https://x/{variant}", version=value, variant="cu121"
    )
    assert shlex.split(filled) == ["pip", "install", f"torch=={value}", "--index-url", "https://x/cu121"]


def test_an_export_of_a_folder_with_a_space_sets_the_whole_value(tmp_path):
    command = export_command("LD_LIBRARY_PATH", "/opt/my libs/lib64:/usr/lib")
    result = subprocess.run(
        ["sh", "-c", f'{command}; printf "%s" "$LD_LIBRARY_PATH"'], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0 and result.stdout == "/opt/my libs/lib64:/usr/lib"


def test_an_environment_assignment_needs_a_variable_name():
    with pytest.raises(ValueError, match="not a shell variable name"):
        export_command("X;touch MARKER", "1")
    with pytest.raises(ValueError, match="not a shell variable name"):
        shell_command(["true"], {"A B": "1"})
