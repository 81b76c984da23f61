"""Stands in for pynvml in the GPU probe's child process: put this folder and tests/ on its PYTHONPATH.

HWCHECK_FAKE_NVML says what NVML does: a recording's name replays that machine
(tests/fakes/nvml.py); "segfault" kills the process with SIGSEGV in nvmlInit, as a broken
driver does; "hang" blocks in nvmlInit after starting a grandchild that sleeps too (its pid
is written to HWCHECK_FAKE_NVML_PIDS), as a driver call stuck in the kernel would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from fakes.nvml import FakeNvml

MODE = os.environ.get("HWCHECK_FAKE_NVML", "h200")
_fake = FakeNvml(MODE if MODE not in ("segfault", "hang") else "h200")


def nvmlInit() -> None:  # noqa: N802 - pynvml's name
    """Start NVML, or crash or hang as HWCHECK_FAKE_NVML says."""
    if MODE == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if MODE == "hang":
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(os.environ["HWCHECK_FAKE_NVML_PIDS"], "w") as pids:
            pids.write(f"{os.getpid()} {grandchild.pid}\n")
        time.sleep(3600)
    _fake.nvmlInit()


def __getattr__(name: str) -> Any:
    return getattr(_fake, name)
