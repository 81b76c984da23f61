"""Every numeric option of every command refuses what is not a usable number, in one usage error."""

from __future__ import annotations

import argparse

import pytest

from conftest import run_hwcheck
from hwcheck.cli import COMMANDS, build_parser

# A value each numeric option accepts; the test below fails when an option is missing here.
VALID = {
    ("doctor", "--timeout"): ("0.5", 0.5),
    ("doctor", "--budget"): ("30", 30.0),
    ("doctor", "--verify-timeout"): ("45", 45.0),
    ("report", "--timeout"): ("30", 30.0),
    ("config", "--timeout"): ("5", 5.0),
    ("config", "--steps"): ("10", 10),
    ("config", "--keras-version"): ("2", 2),
    ("config", "--zero"): ("2", 2),
    ("config", "--params"): ("350M", 350_000_000),
    ("fit", "--timeout"): ("5", 5.0),
    ("fit", "--params"): ("7e9", 7_000_000_000),
    ("fit", "--gpus"): ("8", 8),
    ("fit", "--zero"): ("3", 3),
    ("fit", "--batch"): ("4", 4),
    ("fit", "--lora"): ("16", 16),
    ("fit", "--grad-accum"): ("8", 8),
    ("fit", "--seq-len"): ("4096", 4096),
    ("fit", "--gpu-memory"): ("80", 80.0),
    ("fit", "--host-memory"): ("512", 512.0),
    ("fit", "--gpus-per-node"): ("8", 8),
    ("fit", "--headroom"): ("10", 0.10),
    ("install", "--timeout"): ("5", 5.0),
    ("nfd", "--timeout"): ("5", 5.0),
    ("explain", "--timeout"): ("5", 5.0),
    ("nfd", "--ttl"): ("10800", 10800.0),
    ("inventory", "--timeout"): ("5", 5.0),
    ("inventory", "--node-timeout"): ("600", 600.0),
    ("bench", "--steps"): ("20", 20),
    ("bench", "--warmup"): ("3", 3),
    ("bench", "--timeout"): ("120", 120.0),
    ("bench", "--rounds"): ("9", 9),
    ("bench", "--budget"): ("60", 60.0),
}
# Typed options that take no number, each tested where its format is described.
NOT_NUMERIC = {
    ("inventory", "--group"),  # NAME=HOST,...: tests/test_inventory_drift.py
    ("doctor", "--fail-on"),  # RULE_ID[,RULE_ID...]: tests/test_gate.py
    ("fit", "--lora-targets"),  # attention, all-linear or module names: tests/test_fit_finetune.py
    ("fit", "--fsdp"),  # a sharding strategy's name: tests/test_fit_finetune.py
}
# What each command needs besides the option under test.
REQUIRED = {
    "config": ["--framework", "keras", "-o", "-"],
    "report": ["-o", "-"],
    "fit": ["--params", "1e9"],
    "install": ["torch"],
}
INVALID = ["inf", "-inf", "nan", "-1", "0", "1e400", "9" * 5000, "ten", "", "0x10"]
# Options for which 0 is a usable value (ZeRO stage 0: no partitioning).
ZERO_IS_USABLE = {("config", "--zero"), ("fit", "--zero"), ("fit", "--headroom")}


def typed_options() -> dict[tuple[str, str], argparse.Action]:
    """Every option that converts its value, by (command, long option)."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {}
    for command in COMMANDS:
        for action in subparsers.choices[command]._actions:
            # Options taking a word ("pytorch", "bf16") are tested in test_aliases.py.
            words = hasattr(action.type, "vocabulary")
            if action.type is not None and action.option_strings and not words:
                found[(command, action.option_strings[-1])] = action
    return found


def parse_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_every_numeric_option_is_checked_here():
    options = {key: action for key, action in typed_options().items() if key not in NOT_NUMERIC}
    assert set(options) == set(VALID)
    assert NOT_NUMERIC <= set(typed_options())
    # A bare int or float accepts inf, nan and negatives.
    assert not [key for key, action in options.items() if action.type in (int, float)]


@pytest.mark.parametrize(("command", "option"), sorted(VALID))
def test_a_usable_value_is_accepted(command, option):
    text, value = VALID[(command, option)]
    extra = REQUIRED.get(command, [])
    args = build_parser().parse_args([command, *extra, option, text])
    assert getattr(args, option.lstrip("-").replace("-", "_")) == value


@pytest.mark.parametrize("value", INVALID)
@pytest.mark.parametrize(("command", "option"), sorted(VALID))
def test_an_unusable_value_is_one_usage_error(command, option, value, capsys):
    extra = REQUIRED.get(command, [])
    if value == "0" and (command, option) in ZERO_IS_USABLE:
        assert getattr(build_parser().parse_args([command, *extra, option, value]), option[2:]) == 0
        return
    if (command, option) == ("fit", "--params"):
        extra = []  # the option under test is the model itself
    error = parse_error([command, *extra, f"{option}={value}"], capsys)
    last = error.strip().splitlines()[-1]
    assert last.startswith(f"hwcheck {command}: error: argument {option}: ")
    assert len(last) < 200 and "Traceback" not in error


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        ("config", "--steps", "1000000001"),
        ("config", "--keras-version", "4"),
        ("config", "--zero", "4"),
        ("doctor", "--timeout", "3601"),
        ("nfd", "--ttl", str(400 * 86400)),
        ("inventory", "--node-timeout", "1e9"),
    ],
)
def test_values_above_the_bounds_are_refused(command, option, value, capsys):
    extra = REQUIRED.get(command, [])
    assert f"argument {option}: must be" in parse_error([command, *extra, option, value], capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--timeout", "inf"],
        ["nfd", "-o", "-", "--ttl", "nan"],
        ["inventory", "--node-timeout", "-1", "x.json"],
    ],
)
def test_the_command_line_exits_2_without_a_traceback(argv):
    result = run_hwcheck(*argv)
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert f"error: argument {argv[-2] if argv[0] != 'inventory' else argv[1]}: must be" in result.stderr


@pytest.mark.parametrize("argv", [["doctor"], ["doctor", "--json"]])
def test_doctors_common_forms_read_without_the_parser_as_the_parser_reads_them(argv):
    from hwcheck.commands.doctor import quick_arguments

    parsed, unknown = build_parser("doctor").parse_known_args(argv)
    assert unknown == []
    assert vars(quick_arguments(argv)) == vars(parsed)


@pytest.mark.parametrize(
    "argv",
    [["doctor", "--json", "--framework", "torch"], ["doctor", "--help"], ["doctor", "--jso"], ["report"], []],
)
def test_every_other_form_goes_through_the_parser(argv):
    from hwcheck.commands.doctor import quick_arguments

    assert quick_arguments(argv) is None
