"""What hwcheck imports: doctor no framework, emitter, inventory or validator; nothing the old validators."""

from __future__ import annotations

import json
import subprocess
import sys

from inventory_helpers import make_report

from conftest import FIXTURES, ROOT, run_hwcheck


def test_doctor_json_imports_only_what_it_needs():
    run_hwcheck("doctor", "--json")  # fills the parsed-rules cache, as any earlier run would
    code = (
        "import sys, io, contextlib\n"
        "from hwcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['doctor', '--json'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    loaded = set(result.stdout.split())
    # Each of these costs doctor milliseconds it does not need (or seconds, for frameworks).
    for module in (
        "tensorflow",
        "torch",
        "jax",
        "keras",
        "hwcheck.emit",
        "hwcheck.inventory",
        "jsonschema_rs",
        "jsonschema",
        "rich",
        "dataclasses",
        "tomllib",
        "importlib.metadata",
        "pynvml",
        "shutil",  # argparse's help formatter imports it unless given a width
        "socket",  # the host name comes from os.uname
        "hwcheck.measure",
        "ast",  # ~2.5 ms: build_info.py and version.py are read by probes/literals.py
        "_ast",  # ~3 ms to make the node types: what those files hold is remembered
        "subprocess",  # ~5 ms: nvcc and the NVML query start through base/children.Captured
        "argparse",  # ~5 ms with its translations: `doctor --json` is read without it
        "locale",
        "pathlib",  # ~4 ms: the probes and readers join names as text (base/inputs.py joined)
        "typing",  # ~2.5 ms: type names are imported for the type checker only (base/records.py)
        # ~5 ms with the knowledge tables: only a remedy that installs a framework needs the plan
        "hwcheck.recommendation.install",
        "hwcheck.devices",  # the plug-ins build the context, which a remembered advice skips
    ):
        assert module not in loaded, f"doctor --json imported {module}"


def test_documents_are_validated_by_jsonschema_rs_alone(tmp_path):
    # jsonschema and fastjsonschema may still be installed beside it; nothing may load them.
    site = tmp_path / "site.toml"
    site.write_text('[meta]\ntitle = "site"\n')
    reports = tmp_path / "reports"
    reports.mkdir()
    for host in ("n1", "n2"):
        (reports / f"{host}.json").write_text(json.dumps(make_report("a100-sxm4x8-epyc", host)))
    facts = FIXTURES / "facts/a100-sxm4x4-tf216.json"
    code = (
        "import sys, io, contextlib\n"
        "from hwcheck.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['doctor', '--json', '--facts', {str(facts)!r}, '--rules', {str(site)!r}])\n"
        f"    main(['inventory', {str(reports)!r}, '--json'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    loaded = set(result.stdout.split())
    assert {"jsonschema_rs", "hwcheck.inventory"} <= loaded
    assert not {"jsonschema", "fastjsonschema"} & loaded


def test_doctor_as_a_program_ends_after_its_exit_handlers_with_all_its_output():
    # `hwcheck doctor` skips the interpreter's teardown once its output is written: the exit
    # handlers (base/children.py kills what a probe left behind) still run, after the output.
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('exit handlers ran', file=sys.stderr))\n"
        "from hwcheck.cli import main\n"
        "sys.argv = ['hwcheck', 'doctor', '--json']\n"
        "main()\n"
        "print('not reached', file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr == "exit handlers ran\n"
    assert json.loads(result.stdout)["recommendation"]["policy"]


def test_main_in_a_process_returns_and_leaves_the_collector_as_it_found_it():
    import contextlib
    import gc
    import io

    from hwcheck.cli import main

    for collecting in (True, False):
        (gc.enable if collecting else gc.disable)()
        try:
            with contextlib.redirect_stdout(io.StringIO()) as output:
                status = main(["doctor", "--json"])
            assert status in (0, 1) and json.loads(output.getvalue())
            assert gc.isenabled() is collecting
        finally:
            gc.enable()
