"""What a probe records, the schema accepts: a live `report` on hostile installs reads back.

Versions come from outside (dist-info names and METADATA, library file names, header
macros, version.py): each longer than the facts schema's 64 characters is recorded cut
after its last whole part that fits, or unknown when even its leading numbers do not fit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import ROOT, run_hwcheck
from hwcheck.base.versions import MAX_VERSION, parse_version, recorded_version
from hwcheck.facts import load_schema, schema_problem
from hwcheck.facts.recorded import VERSION_DEF, VERSION_NAMES, bound_versions

LABEL = "a" * 100  # a local version label longer than the schema allows a whole version


def test_the_version_names_are_the_schemas():
    schema = load_schema("facts")
    named: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, inner in (node.get("properties") or {}).items():
                if isinstance(inner, dict) and inner.get("$ref") == VERSION_DEF:
                    named.add(key)
            for inner in node.values():
                walk(inner)
        elif isinstance(node, list):
            for inner in node:
                walk(inner)

    walk(schema)
    assert named == VERSION_NAMES


def test_a_long_version_is_cut_after_its_last_whole_part():
    assert recorded_version("2.5.1+cu124." + LABEL) == "2.5.1+cu124"
    assert recorded_version("9.1.0.70+" + LABEL) == "9.1.0.70"
    assert recorded_version("12.3." + LABEL) == "12.3"
    assert recorded_version("2.5.1") == "2.5.1"
    assert recorded_version(None) is None


def test_a_version_whose_numbers_do_not_fit_is_unknown_not_another_number():
    assert recorded_version("9." + "1" * 80) is None  # a header macro of 80 digits
    assert recorded_version("9.1." + "0." * 50 + "0") is None  # a file name of 52 parts
    assert recorded_version("8" + LABEL) is None


@given(st.text(alphabet="0123456789.+-_abcrv", min_size=0, max_size=300))
def test_a_recorded_version_fits_and_starts_as_found(text):
    recorded = recorded_version(text)
    if len(text) <= MAX_VERSION:
        assert recorded == text
    elif recorded is not None:
        assert len(recorded) <= MAX_VERSION and text.startswith(recorded)
        assert parse_version(recorded) == parse_version(text)


def test_bound_versions_leaves_paths_and_copies_what_it_changes():
    path = "/opt/" + "p" * 200
    facts = {"cudnn": {"version": "9.1." + LABEL, "path": path, "found": [{"version": "9" + LABEL}]}}
    bounded = bound_versions(facts)
    assert bounded == {"cudnn": {"version": "9.1", "path": path, "found": [{"version": None}]}}
    assert facts["cudnn"]["version"] == "9.1." + LABEL  # the probe's own dicts are left as they were
    plain = {"cudnn": {"version": "9.1.0", "path": path}}
    assert bound_versions(plain) is plain


def _dist(site: Path, name: str, version: str) -> None:
    directory = site / f"{name.replace('-', '_')}-{version}.dist-info"
    directory.mkdir(parents=True)
    (directory / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _hostile_installs(root: Path) -> dict[str, str]:
    """Frameworks, NVIDIA wheels, libraries and headers whose versions are longer than 64 characters."""
    site = root / "site"
    _dist(site, "torch", "2.5.1+cu124." + LABEL)
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(f"__version__ = '2.5.1'\ncuda = '12.4.{LABEL}'\nhip = None\n")
    _dist(site, "tensorflow", "2.16.1.dev" + LABEL)
    platform = site / "tensorflow" / "python" / "platform"
    platform.mkdir(parents=True)
    build = {"cuda_version": f"12.3.{LABEL}", "cudnn_version": f"8{LABEL}", "is_cuda_build": True}
    (platform / "build_info.py").write_text(f"build_info = {build!r}\n")
    for name, version in (("keras", "3.3.3+"), ("jax", "0.4.30+"), ("jaxlib", "0.4.30+")):
        _dist(site, name, version + LABEL)
    _dist(site, "nvidia-cudnn-cu12", "9.1.0.70+" + LABEL)
    _dist(site, "nvidia-cublas-cu12", "12.4.5.8." + "1." * 40 + "1")
    cuda = root / "cuda"
    (cuda / "lib64").mkdir(parents=True)
    (cuda / "include").mkdir()
    (cuda / "lib64" / ("libcudnn.so.9.1." + "0." * 50 + "0")).touch()
    (cuda / "lib64" / ("libcudart.so.12." + "4" * 90)).touch()
    (cuda / "include" / "cudnn_version.h").write_text(
        f"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR {'1' * 80}\n#define CUDNN_PATCHLEVEL 0\n"
    )
    (cuda / "include" / "cuda.h").write_text(f"#define CUDA_VERSION {'1' * 80}\n")
    return {
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]),
        "CUDA_HOME": str(cuda),
        "LD_LIBRARY_PATH": str(cuda / "lib64"),
    }


def test_a_live_report_on_hostile_installs_reads_back_with_inventory_and_doctor(tmp_path):
    env = _hostile_installs(tmp_path)
    report = tmp_path / "report.json"
    written = run_hwcheck("report", "-o", str(report), env=env)
    assert written.returncode == 0, written.stderr
    document = json.loads(report.read_text())
    assert schema_problem(document, "report") is None
    frameworks = document["facts"]["frameworks"]
    assert frameworks["torch"]["version"] == "2.5.1+cu124" and frameworks["torch"]["cuda"] == "12.4"
    assert frameworks["tensorflow"]["version"] == "2.16.1" and frameworks["tensorflow"]["cuda"] == "12.3"
    assert document["facts"]["cudnn"]["version"] == "9.1.0.70"

    merged = run_hwcheck("inventory", str(report), "--json", env=env)
    assert merged.returncode == 0, merged.stderr
    inventory = json.loads(merged.stdout)
    assert inventory["rejected"] == [], inventory["rejected"]

    advised = run_hwcheck("doctor", "--facts", str(report), env=env)
    assert advised.returncode == 0, advised.stderr
    assert "Traceback" not in advised.stderr
