"""`hwcheck report --redact`: identifiers go by what a string contains, whatever the field."""

from __future__ import annotations

import copy
import itertools
import json
import re
import socket
from pathlib import Path

from conftest import FIXTURES, run_hwcheck
from hwcheck.facts import schema_problem
from hwcheck.render.report import redacted

HOME = str(Path.home())
REPLAYED_HOST = "trainer-17.cluster.example"
SERIAL = "1320521012345"
# Each planted identifier, and what of it must not survive (compared ignoring case).
PLANTED = {
    "GPU-8f2b1c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d": "8f2b1c3d",
    "MIG-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d": "1a2b3c4d",
    "MIG-GPU-77aa88bb-4e5f-6a7b-8c9d-0e1f2a3b4c5d/3/0": "77aa88bb",
    "GPU-4b2c0fe1e9f8d0a6": "4b2c0fe1e9f8d0a6",
    "0000:3b:00.0": "3b:00.0",
    "00000000:AF:00.0": "af:00.0",
    "5e:00.1": "5e:00.1",
    "/home/alice.smith/miniconda3/bin": "alice.smith",
    "/Users/bobby/anaconda3": "bobby",
    "C:\\Users\\carol7\\AppData": "carol7",
    "/gpfs/home/dave42/env": "dave42",
    f"{HOME}/venvs/train": f"{HOME}/venvs",
    REPLAYED_HOST.upper(): REPLAYED_HOST,
    "trainer-17": "trainer-17",
    SERIAL: SERIAL,
}


def rich_facts() -> dict:
    """The A100 fixture with every kind of field a live probe fills in."""
    facts = json.loads((FIXTURES / "facts/a100-sxm4x4-tf216.json").read_text())
    facts["os"] = {
        "system": "Linux",
        "release": "5.15.0-105-generic",
        "machine": "x86_64",
        "container": "docker",
    }
    facts["python"] = {"version": "3.11.7", "implementation": "CPython", "executable": "/usr/bin/python3"}
    facts["environment"] = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "TF_USE_LEGACY_KERAS": "0",
    }
    facts["gpus"][0].update(pci_bus_id="00000000:07:00.0", serial=SERIAL)
    facts["pci"] = {
        "devices": [
            {"address": "0000:07:00.0", "vendor": "nvidia", "vendor_id": "0x10de", "device_id": "0x20b2"},
        ]
    }
    facts["cuda"] = {
        "version": "12.3.101",
        "source": "loader",
        "path": "/usr/local/cuda-12.3/lib64/libcudart.so.12",
        "found": [
            {"version": "12.3.101", "source": "loader", "path": "/usr/local/cuda-12.3/lib64/libcudart.so.12"}
        ],
    }
    facts["cpu"]["source"] = "/proc/cpuinfo"
    facts["tpu"] = {"present": False, "type": None, "chips": 0, "detected_by": ["pci"]}
    facts["frameworks"]["tensorflow"]["location"] = "/opt/venv/lib/python3.11/site-packages/tensorflow"
    return facts


def string_fields(value, path=()):
    """The path of every string in a JSON document."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_fields(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_fields(item, (*path, index))


def plant(facts: dict) -> tuple[dict, int]:
    """`facts` with an identifier added to every string field whose schema lets it hold one."""
    planted = copy.deepcopy(facts)
    identifiers = itertools.cycle(PLANTED)
    count = 0
    for path in list(string_fields(planted)):
        *parents, last = path
        holder = planted
        for step in parents:
            holder = holder[step]
        original = holder[last]
        holder[last] = f"{original} {next(identifiers)}"
        if schema_problem(planted, "facts") is None:
            count += 1
        else:  # an enum or pattern field: nothing but its own values can be in it
            holder[last] = original
    return planted, count


def leaks(text: str) -> list[str]:
    """The planted identifiers (and this host's name) that `text` still holds."""
    found = [leak for leak in PLANTED.values() if leak.lower() in text.lower()]
    host = socket.gethostname()
    for name in {host, host.split(".")[0]} - {"localhost"}:
        # This machine's name is arbitrary: only a whole-name occurrence counts ("a100" may be a host).
        if re.search(rf"(?<![a-z0-9_-]){re.escape(name)}(?![a-z0-9_-])", text, re.IGNORECASE):
            found.append(name)
    return found


def test_no_planted_identifier_survives_in_any_field(tmp_path):
    facts, count = plant(rich_facts())
    facts["environment"]["CUDA_VISIBLE_DEVICES"] = (
        "GPU-8f2b1c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d,MIG-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
    )
    facts["environment"]["HOSTNAME"] = socket.gethostname()
    assert count >= 25 and not schema_problem(facts, "facts")
    source = tmp_path / "replayed.json"
    report = json.loads(
        run_hwcheck("report", "-o", "-", "--facts", str(rich_facts_file(tmp_path, facts))).stdout
    )
    report["host"] = REPLAYED_HOST
    source.write_text(json.dumps(report))
    assert leaks(source.read_text())  # the planting worked: there is something to redact

    out = tmp_path / "out.json"
    result = run_hwcheck("report", "--redact", "--facts", str(source), "-o", str(out))
    assert result.returncode in (0, 1), result.stderr
    text = out.read_text()
    assert leaks(text) == []
    redacted_report = json.loads(text)
    assert schema_problem(redacted_report, "report") is None
    assert redacted_report["host"] is None and redacted_report["redacted"] is True


def rich_facts_file(folder: Path, facts: dict) -> Path:
    path = folder / "facts.json"
    path.write_text(json.dumps(facts))
    return path


def test_what_is_not_an_identifier_survives(tmp_path):
    facts = rich_facts()
    facts["environment"]["CUDA_VISIBLE_DEVICES"] = "GPU-8f2b1c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
    facts["cuda"]["path"] = f"{HOME}/venvs/train/lib/libcudart.so.12"
    out = tmp_path / "out.json"
    result = run_hwcheck(
        "report", "--redact", "--facts", str(rich_facts_file(tmp_path, facts)), "-o", str(out)
    )
    assert result.returncode in (0, 1), result.stderr
    kept = json.loads(out.read_text())["facts"]
    assert (
        kept["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB" and kept["gpus"][0]["compute_capability"] == "8.0"
    )
    assert kept["frameworks"]["tensorflow"]["version"] == "2.16.1" and kept["cuda"]["version"] == "12.3.101"
    assert {"avx2", "fma"} <= set(kept["cpu"]["flags"])
    assert kept["frameworks"]["tensorflow"]["location"] == "/opt/venv/lib/python3.11/site-packages/tensorflow"
    # The kind of selection survives (UUIDs rather than indexes), and where in the home CUDA is.
    assert kept["environment"]["CUDA_VISIBLE_DEVICES"] == "GPU-<redacted>"
    if HOME not in ("/", ""):
        assert kept["cuda"]["path"] == "~/venvs/train/lib/libcudart.so.12"
    assert kept["pci"]["devices"][0]["address"] == "<pci>"
    assert not {"uuid", "serial", "pci_bus_id"} & set(kept["gpus"][0]) and "executable" not in kept["python"]


def test_a_host_name_inside_a_model_name_is_not_a_host():
    document = {"name": "NVIDIA A100-SXM4-80GB", "note": "built on a100 for A100.example.org"}
    assert redacted(document, hosts=["a100.example.org"]) == {
        "name": "NVIDIA A100-SXM4-80GB",
        "note": "built on <host> for <host>",
    }
