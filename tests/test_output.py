"""doctor's text where it lands: whole plain lines in a pipe or file, wrapped and coloured on a terminal.

The golden files are tests/golden/doctor/; `pytest --update-golden` rewrites them.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

GOLDEN = Path(__file__).parent / "golden" / "doctor"
H100 = ["doctor", "--facts", "tests/fixtures/facts/h100-anchor-torch211.json", "--framework", "torch"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
assert (FIXTURES / "facts" / "h100-anchor-torch211.json").exists()


def _environment(**extra: str) -> dict[str, str]:
    # The user's terminal settings must not leak into the golden output.
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM", "COLORTERM")
    }
    return {**environment, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **extra}


def _piped(*args: str, **extra: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "hwcheck", *args],
        cwd=ROOT,
        env=_environment(**extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _on_a_terminal(*args: str, width: int, **extra: str) -> str:
    """What a terminal `width` columns wide receives (a real pseudo-terminal, not FORCE_COLOR)."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "hwcheck", *args],
        cwd=ROOT,
        env=_environment(**extra),
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=subprocess.PIPE,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert process.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def _golden(request: pytest.FixtureRequest, name: str, text: str) -> None:
    golden = GOLDEN / name
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}: run pytest --update-golden"
    assert text == golden.read_text(encoding="utf-8"), f"{golden.name} differs: review, then --update-golden"


def test_piped_doctor_is_whole_plain_lines(request: pytest.FixtureRequest) -> None:
    text = _piped(*H100)
    _golden(request, "h100-torch-piped.txt", text)
    lines = text.splitlines()
    assert "\x1b" not in text
    assert all(line == line.rstrip() for line in lines), "trailing spaces"
    # The reason is one line however long, not wrapped at 80 columns.
    why = [line for line in lines if line.startswith("  why ") and line[6:].lstrip().startswith("Every GPU")]
    assert len(why) == 1 and why[0].endswith("needs no loss scaling.")
    assert max(len(line) for line in lines) > 100


def test_columns_sets_the_width_in_a_pipe_without_padding() -> None:
    lines = _piped(*H100, COLUMNS="70").splitlines()
    assert max(len(line) for line in lines if not line.startswith("  ")) <= 70
    assert all(line == line.rstrip() for line in lines)


def test_force_color_colours_a_pipe_and_no_color_wins() -> None:
    assert "\x1b[" in _piped(*H100, FORCE_COLOR="1")
    assert "\x1b[" not in _piped(*H100, FORCE_COLOR="1", NO_COLOR="1")


def test_on_a_terminal_doctor_wraps_to_its_width_in_colour(request: pytest.FixtureRequest) -> None:
    text = _on_a_terminal(*H100, width=72)
    assert "\x1b[" in text
    plain = ANSI.sub("", text)
    assert all(line == line.rstrip() for line in plain.splitlines()), "trailing spaces"
    _golden(request, "h100-torch-terminal-72.txt", plain)
    # The code lines are never broken (they must copy as they are); everything else fits.
    assert all(len(line) <= 72 for line in plain.splitlines() if "#" not in line)
    assert _colours(text)
    # NO_COLOR takes the colours away, not bold or dim (no-color.org).
    assert not _colours(_on_a_terminal(*H100, width=72, NO_COLOR="1"))


def _colours(text: str) -> set[int]:
    """The foreground colour codes (30-38, 90-97) among the SGR escapes in `text`."""
    codes = {int(code) for match in ANSI.findall(text) for code in match[2:-1].split(";") if code}
    return {code for code in codes if 30 <= code <= 38 or 90 <= code <= 97}
