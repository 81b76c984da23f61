"""Hostile inventory inputs for the tests and benchmarks/inventory_hostile.py (issue 13, class 1).

Two families. REJECTED kinds are files `hwcheck inventory` must refuse, each as that
file's own one-line reason, while every other report merges. TOLERATED kinds are valid
reports carrying hostile text or values (markup, escapes, lone surrogates, huge ints):
they must merge and be shown escaped. Each kind writes one entry into a directory, the
way a shared report folder would hold it; where it can only be given by path (a device),
the test passes the path.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwcheck.base.inputs import MAX_DOCUMENT_BYTES

Report = dict[str, Any]
Writer = Callable[[Path, Report], None]


def _json(path: Path, document: Any) -> None:
    path.write_text(json.dumps(document), encoding="utf-8")


def _changed(change: Callable[[Report], None]) -> Writer:
    def write(path: Path, report: Report) -> None:
        document = copy.deepcopy(report)
        change(document)
        _json(path, document)

    return write


def _text(make: Callable[[str], str]) -> Writer:
    """A file whose text is made from the good report's JSON text."""

    def write(path: Path, report: Report) -> None:
        path.write_text(make(json.dumps(report)), encoding="utf-8", errors="surrogatepass")

    return write


def _raw(make: Callable[[bytes], bytes]) -> Writer:
    def write(path: Path, report: Report) -> None:
        path.write_bytes(make(json.dumps(report).encode()))

    return write


def _set(*where: str | int, value: Any) -> Callable[[Report], None]:
    def change(document: Report) -> None:
        node = document
        for step in where[:-1]:
            node = node[step]
        node[where[-1]] = value

    return change


def _delete(key: str) -> Callable[[Report], None]:
    return lambda document: document.pop(key)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _fifo(path: Path, report: Report) -> None:
    os.mkfifo(path)


def _symlink_to(target: str) -> Writer:
    def write(path: Path, report: Report) -> None:
        path.symlink_to(target)

    return write


def _symlink_loop(path: Path, report: Report) -> None:
    path.symlink_to(path.name)


def _unparsed_number(digits: str) -> Writer:
    return _text(lambda text: text.replace('"schema_version": 1', f'"schema_version": {digits}', 1))


def _memory(value: str) -> Writer:
    """A report whose first GPU's memory_mib is written as `value`, verbatim JSON."""
    return _text(lambda text: text.replace('"memory_mib": ', f'"memory_mib": {value}, "was": ', 1))


# kind -> writer. Each must be refused with a one-line reason naming the problem.
REJECTED: dict[str, Writer] = {
    "int_over_4300_digits": _memory("9" * 5000),
    "int_over_4300_digits_negative": _memory("-" + "9" * 4301),
    "int_of_401_digits": _memory("9" * 401),
    "int_just_beyond_64_bits": _memory(str(2**63)),
    "int_just_below_64_bits": _memory(str(-(2**63) - 1)),
    "nan": _memory("NaN"),
    "infinity": _memory("-Infinity"),
    "float_overflow": _memory("1e999"),
    "nesting_40_levels": _changed(_set("extra", value=_nested(40))),
    "nesting_100000_levels": _text(lambda text: text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "truncated": _text(lambda text: text[: len(text) // 2]),
    "binary": _raw(lambda data: bytes(range(256)) * 8),
    "empty": _raw(lambda data: b""),
    "whitespace_only": _raw(lambda data: b" \n\t\r\n"),
    "utf16_with_bom": _raw(lambda data: data.decode().encode("utf-16")),
    "utf16_without_bom": _raw(lambda data: data.decode().encode("utf-16-le")),
    "utf8_bom": _raw(lambda data: b"\xef\xbb\xbf" + data),
    "latin1_bytes": _raw(lambda data: data.replace(b'"schema_version"', b'"schema_v\xe9rsion"', 1)),
    "schema_version_2": _changed(_set("schema_version", value=2)),
    "schema_version_string": _changed(_set("schema_version", value="1")),
    "schema_version_true": _changed(_set("schema_version", value=True)),
    "schema_version_huge_string": _changed(_set("schema_version", value="9" * 1_000_000)),
    "top_level_array": _text(lambda text: f"[{text}]"),
    "top_level_string": _text(lambda text: json.dumps(text)),
    "top_level_null": _raw(lambda data: b"null"),
    "top_level_number": _raw(lambda data: b"12"),
    "empty_object": _raw(lambda data: b"{}"),
    "facts_not_report": lambda path, report: _json(path, report["facts"]),
    "no_facts": _changed(_delete("facts")),
    "host_number": _changed(_set("host", value=12)),
    "host_object": _changed(_set("host", value={"[/]": 1})),
    "time_number": _changed(_set("time", value=1_700_000_000)),
    "time_not_a_time": _changed(_set("time", value="[bold]yesterday[/]")),
    "time_impossible_date": _changed(_set("time", value="2026-13-45T25:61:00Z")),
    "time_huge_string": _changed(_set("time", value="\x1b[31m" * 200_000)),
    "time_far_future": _changed(_set("time", value="9999-12-31T23:59:59+00:00")),
    "facts_string": _changed(_set("facts", value="[/]")),
    "gpus_object": _changed(_set("facts", "gpus", value={"0": {"name": "x"}})),
    "gpu_name_number": _changed(_set("facts", "gpus", 0, "name", value=100)),
    "gpu_name_missing": _changed(lambda document: document["facts"]["gpus"][0].pop("name")),
    "gpu_name_huge": _changed(_set("facts", "gpus", 0, "name", value="[/]" * 100_000)),
    "cpu_model_huge": _changed(_set("facts", "cpu", "model", value="[/]" * 300_000)),
    "host_huge": _changed(_set("host", value="h" * 5_000_000)),
    "finding_message_huge": _changed(
        _set(
            "recommendation",
            "findings",
            value=[{"id": "x", "severity": "info", "message": "m" * 10_000, "remedy": None}],
        )
    ),
    "gpu_memory_float": _changed(_set("facts", "gpus", 0, "memory_mib", value=0.5)),
    "gpu_mig_string": _changed(_set("facts", "gpus", 0, "mig", value="yes")),
    "cpu_flags_string": _changed(_set("facts", "cpu", "flags", value="avx2 fma")),
    "cpu_flags_repeated": _changed(_set("facts", "cpu", "flags", value=["avx2", "avx2"])),
    "cpu_model_list": _changed(_set("facts", "cpu", "model", value=["Xeon"])),
    "driver_version_number": _changed(_set("facts", "nvidia_driver", "version", value=535.54)),
    "cuda_version_object": _changed(_set("facts", "cuda", value={"version": {"major": 12}})),
    "tensorflow_version_list": _changed(_set("facts", "frameworks", "tensorflow", "version", value=["2"])),
    "tensorflow_cuda_build_string": _changed(
        _set("facts", "frameworks", "tensorflow", "cuda_build", value="1")
    ),
    "tpu_present_string": _changed(_set("facts", "tpu", "present", value="false")),
    "recommendation_list": _changed(_set("recommendation", value=[])),
    "policy_unknown": _changed(_set("recommendation", "policy", value="fp8")),
    "device_number": _changed(_set("recommendation", "device", value=0)),
    "loss_scaling_string": _changed(_set("recommendation", "loss_scaling", value="no")),
    "findings_object": _changed(_set("recommendation", "findings", value={"id": "x"})),
    "finding_severity_unknown": _changed(
        _set(
            "recommendation",
            "findings",
            value=[{"id": "x", "severity": "fatal", "message": "", "remedy": None}],
        )
    ),
    "finding_message_null": _changed(
        _set(
            "recommendation",
            "findings",
            value=[{"id": "x", "severity": "error", "message": None, "remedy": None}],
        )
    ),
    "probes_list": _changed(_set("probes", value=["gpu"])),
    "over_the_size_cap": _text(lambda text: text[:-1] + ', "pad": "' + "x" * MAX_DOCUMENT_BYTES + '"}'),
    "fifo": _fifo,
    "symlink_to_dev_zero": _symlink_to("/dev/zero"),
    "symlink_to_dev_null": _symlink_to("/dev/null"),
    "symlink_loop": _symlink_loop,
    "dangling_symlink": _symlink_to("vanished-report.json"),
    "newline_in_the_name\n[bold]\x1b[2J": _text(lambda text: text[:10]),
}

# kind -> writer. Each is a valid report and must merge; its text must come out escaped.
TOLERATED: dict[str, Writer] = {
    "host_markup": _changed(_set("host", value="[/][bold red]evil[/bold red][link=http://x]x[/link]")),
    "host_escapes": _changed(_set("host", value="node\x1b]0;owned\x07\x1b[2J\n\r\tforged line")),
    "host_bidi": _changed(_set("host", value="node\u202egpj.exe\u2066\u2069\u200f")),
    "host_lone_surrogate": _text(lambda text: text.replace('"host": "', '"host": "\\ud800\\udfff\\udc00', 1)),
    "key_lone_surrogate": _text(lambda text: text[:-1] + ', "\\udc00": "\\ud800"}'),
    "cpu_flag_lone_surrogate": _text(lambda text: text.replace('"flags": [', '"flags": ["\\ud800", ', 1)),
    "gpu_name_markup": _changed(_set("facts", "gpus", 0, "name", value="[/]A100[bold]\x1b[5m\u202e")),
    "finding_markup": _changed(
        _set(
            "recommendation",
            "findings",
            value=[
                {"id": "[/]x", "severity": "error", "message": "[/]\x1b]8;;http://x\x07y", "remedy": "[/]"}
            ],
        )
    ),
    "int_at_64_bits": _memory(str(2**63 - 1)),
    "duplicate_keys_last_counts": _text(lambda text: text[:-1] + ', "host": "[/]duplicate"}'),
    "extra_keys": _changed(_set("facts", "unexpected", value={"[/]": ["\x00"] * 1000})),
    "time_without_zone": _changed(_set("time", value="2026-05-02T12:00:00")),
    "time_year_1": _changed(_set("time", value="0001-01-01T00:00:00+14:00")),
    "no_time": _changed(_delete("time")),
    "null_host": _changed(_set("host", value=None)),
    "null_recommendation": _changed(_set("recommendation", value=None)),
}

# Kinds that need a name or a place this platform may not allow.
NEEDS_POSIX = frozenset(
    {"fifo", "symlink_to_dev_zero", "symlink_to_dev_null", "symlink_loop", "dangling_symlink"}
)


def file_name(kind: str, number: int = 0) -> str:
    """The file a kind is written to: its name with a number, ending in .json."""
    return f"{number:04d}-{kind}.json"


def write_kind(directory: Path, kinds: dict[str, Writer], kind: str, report: Report, number: int = 0) -> Path:
    """Write hostile `kind` (made from the good `report`) into `directory`; its path."""
    path = directory / file_name(kind, number)
    kinds[kind](path, report)
    return path


def usable_kinds(kinds: dict[str, Writer]) -> list[str]:
    """The kinds this platform can make (FIFOs and symlinks need POSIX)."""
    return [kind for kind in kinds if os.name == "posix" or kind not in NEEDS_POSIX]
