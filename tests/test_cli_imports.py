"""What `hwcheck doctor` imports: no framework, no emitter, no inventory, no jsonschema."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, run_hwcheck


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
        "jsonschema",
        "rich",
        "dataclasses",
        "tomllib",
        "importlib.metadata",
        "pynvml",
    ):
        assert module not in loaded, f"doctor --json imported {module}"
