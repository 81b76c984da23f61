"""Fuzzing every command that reads a facts file or reports (issue 13).

Documents are generated from the shape of hwcheck/facts/schema/facts.schema.json, but any field
may instead hold a value of another type, huge or negative numbers, NaN, text with control
characters, lone surrogates, bidi overrides and rich markup, or deep nesting, and random
keys are added. Each document goes to `doctor`, `doctor --json`, `report -o -`, `nfd -o -`
and `config -o -` with --facts, and wrapped in reports to `inventory`. Every run must end
in exit 0 or 1 with output, or exit 2 with one error line and no output; any other
exception escaping hwcheck.cli.main, or a run over WATCHDOG_SECONDS, fails.

HWCHECK_FUZZ_EXAMPLES=5000 runs longer than the normal suite's budget (~20 s).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from inventory_helpers import make_report

from conftest import run_hwcheck
from hwcheck.cli import main
from hwcheck.facts import load_schema

EXAMPLES = int(os.environ.get("HWCHECK_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
WATCHDOG_SECONDS = 20

# Text that has broken terminals, encoders and markup parsers before.
NASTY_TEXT = st.lists(
    st.sampled_from(
        ["a", "0", ".", " ", "[", "]", "/", "\\", "\x00", "\x1b", "\x07", "\n", "\r", "\t", "\x7f", "\x9b"]
        + ["\u202e", "\u2066", "\u2028", "\ufeff", "\ud800", "\udfff", "\udc80", "é", "ß", "\U0001f600"]
        + ["[/]", "[bold]", "[link=http://x]", "\x1b]8;;http://x\x07", "\x1b[2J", "%s", "{0}", "=1+1", "8.0"]
    ),
    max_size=12,
).map("".join)
NUMBERS = (
    st.integers(-(2**70), 2**70)
    | st.sampled_from([0, -1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**300])
    | st.floats(allow_nan=True, allow_infinity=True)
)
SCALARS = st.none() | st.booleans() | NUMBERS | NASTY_TEXT | st.text(max_size=20)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NASTY_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return value


DEEP = st.integers(28, 40).map(_nested)


def shaped(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    """Values of `schema`'s shape, any of which may be replaced by a wild value."""
    wild = ANY_JSON | DEEP
    # Mostly the right shape, so that a document often gets past validation to the rules.
    return st.one_of(*[_shaped(schema, root)] * 7, wild)


def _shaped(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    if "$ref" in schema:
        reference = schema["$ref"]
        target = root if reference.startswith("#") else load_schema(reference.split(".")[0])
        for step in reference.split("#/")[-1].split("/") if "#/" in reference else ():
            target = target[step]
        return _shaped(target, root if reference.startswith("#") else target)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | NASTY_TEXT
    kinds = schema.get("type", "object")
    options = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "object":
            properties = {key: shaped(value, root) for key, value in schema.get("properties", {}).items()}
            required = {key: properties.pop(key) for key in schema.get("required", ())}
            extra = st.dictionaries(
                NASTY_TEXT | st.sampled_from(["gpus", "cpu", "flags"]), ANY_JSON, max_size=2
            )
            options.append(
                st.tuples(st.fixed_dictionaries(required, optional=properties), extra).map(
                    lambda p: {**p[1], **p[0]}
                )
            )
        elif kind == "array":
            options.append(st.lists(shaped(schema.get("items", {}), root), max_size=4))
        elif kind == "string":
            pattern = schema.get("pattern")
            options.append(
                NASTY_TEXT if pattern is None else NASTY_TEXT | st.from_regex(pattern, fullmatch=True)
            )
        elif kind == "integer":
            options.append(NUMBERS.filter(lambda n: isinstance(n, int)) | st.integers(0, 100))
        elif kind == "number":
            options.append(NUMBERS)
        elif kind == "boolean":
            options.append(st.booleans())
        else:
            options.append(st.none())
    return st.one_of(options)


FACTS_SCHEMA = load_schema("facts")
facts_documents = _shaped(FACTS_SCHEMA, FACTS_SCHEMA)


class Hang(Exception):
    """A command ran past the watchdog."""


@contextlib.contextmanager
def watchdog(seconds: int):
    """Fail a call that runs longer than `seconds` (SIGALRM: main thread, POSIX)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_in_process(*argv: str) -> tuple[int, str, str]:
    """hwcheck.cli.main(argv) with stdout and stderr captured; any escaping exception fails the test."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with watchdog(WATCHDOG_SECONDS), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(list(argv))
    return status, stdout.getvalue(), stderr.getvalue()


def check_outcome(status: int, out: str, err: str, argv: tuple[str, ...]) -> None:
    """Exit 0/1 with output, or 2 with one error line and nothing on stdout."""
    assert status in (0, 1, 2), (argv, status)
    if status == 2:
        assert out == "", argv
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("hwcheck: error: "), err
    else:
        assert out.strip(), argv
        assert "Traceback" not in err
    # What a terminal receives is escaped: no raw ESC, no lone surrogate that cannot be encoded.
    assert "\x1b" not in out + err
    (out + err).encode("utf-8")


def write_document(path: Path, document: Any) -> None:
    """JSON as another machine might write it: lone surrogates as \\ud800, NaN as NaN."""
    path.write_text(json.dumps(document), encoding="utf-8")


FACTS_COMMANDS = (
    ("doctor",),
    ("doctor", "--json"),
    ("report", "-o", "-"),
    ("nfd", "-o", "-"),
    ("config", "--framework", "keras", "-o", "-"),
    # explain judges every class a message fits against the facts: several here at once.
    ("explain", "no kernel image is available for execution on the device; Bus error (core dumped)"),
)


@FUZZ
@given(facts=facts_documents)
def test_any_facts_file_gives_advice_or_one_error_line(tmp_path: Path, facts: Any) -> None:
    path = tmp_path / "facts.json"
    write_document(path, facts)
    for command in FACTS_COMMANDS:
        argv = (*command, "--facts", str(path))
        status, out, err = run_in_process(*argv)
        check_outcome(status, out, err, argv)
        event(f"{command[0]} exit {status}")


recommendations = _shaped(load_schema("report")["properties"]["recommendation"]["oneOf"][1], {})
report_changes = st.fixed_dictionaries(
    {},
    optional={
        "facts": facts_documents,
        "host": st.none() | NASTY_TEXT | ANY_JSON,
        "time": st.sampled_from(["2026-05-01T12:00:00+00:00", "2026-05-01", "9999-01-01T00:00:00Z"])
        | NASTY_TEXT
        | ANY_JSON,
        "recommendation": st.none() | recommendations | ANY_JSON,
        "probes": ANY_JSON,
        "schema_version": ANY_JSON,
    },
)


@FUZZ
@given(changes=st.lists(report_changes, min_size=1, max_size=4))
def test_any_reports_merge_or_are_each_rejected(tmp_path: Path, changes: list[dict[str, Any]]) -> None:
    folder = tmp_path / f"reports{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    good = make_report("a100-sxm4x8-epyc", "good-node")
    write_document(folder / "good.json", good)
    for number, change in enumerate(changes):
        write_document(
            folder / f"fuzzed{number}.json", {**make_report("v100-sxm2x8-broadwell", f"n{number}"), **change}
        )
    for output in ((), ("--json",), ("--csv",)):
        argv = ("inventory", str(folder), *output)
        status, out, err = run_in_process(*argv)
        check_outcome(status, out, err, argv)
        assert status in (0, 1) and err == ""
        if output == ("--json",):
            document = json.loads(out)
            hosts = {member["host"] for c in document["classes"] for member in c["members"]}
            assert "good-node" in hosts
            assert document["summary"]["reports_read"] == len(changes) + 1
            event(f"{len(document['rejected'])} of {len(changes)} rejected")
            assert status == (1 if document["rejected"] else 0)
            assert all(r["reason"] and "\n" not in r["reason"] for r in document["rejected"])


@pytest.mark.host("linux")
@settings(max_examples=max(3, EXAMPLES // 20), deadline=None, suppress_health_check=list(HealthCheck))
@given(facts=facts_documents)
def test_the_cli_process_never_prints_a_traceback(tmp_path: Path, facts: Any) -> None:
    path = tmp_path / "facts.json"
    write_document(path, facts)
    result = run_hwcheck("doctor", "--facts", str(path), timeout=60)
    check_outcome(result.returncode, result.stdout, result.stderr, ("doctor", "--facts"))


# --- issue 21: every parser of outside text, in-process ------------------------------------
# Each gives a result or one InputError, never another exception; inputs stay small, so
# the examples run in a few seconds (linearity itself is benchmarks/scaling.py's).

PARSER = settings(max_examples=max(20, EXAMPLES), deadline=None, suppress_health_check=list(HealthCheck))
DIGITISH = st.sampled_from(
    ["0", "1", "7", "+", "-", "１", "٣", "²", "9" * 40, "9" * 4400, ".", "_", " ", "a", "x", "\u200b"]
)
UUID_PARTS = st.sampled_from(["GPU-", "MIG-", "MIG-GPU-", "gpu-", "0000", "1111", "/", "-", "abc"])
IDENTIFIER = st.lists(UUID_PARTS | DIGITISH, max_size=8).map("".join)


def _gpus(count: int) -> list[dict[str, Any]]:
    return [
        {
            "index": i,
            "name": "NVIDIA A100-SXM4-80GB",
            "compute_capability": "8.0",
            "uuid": f"GPU-{i:04d}1111",
            "mig": i == 1,
            "mig_devices": [{"uuid": f"MIG-{i:04d}", "gpu_instance_id": 1, "compute_instance_id": 0}]
            if i == 1
            else [],
        }
        for i in range(count)
    ]


@PARSER
@given(
    identifiers=st.lists(IDENTIFIER, max_size=6),
    count=st.integers(0, 3),
    order=st.sampled_from(["", "PCI_BUS_ID", "FASTEST_FIRST", "１"]),
    arch=st.lists(DIGITISH | st.sampled_from(["8.0", "+PTX", ";", " "]), max_size=6).map("".join),
)
def test_cuda_visible_devices_and_kin_always_resolve(identifiers, count, order, arch):
    from hwcheck.devices.cuda_visibility import arch_list_missing, fraction, resolve

    environment = {"CUDA_VISIBLE_DEVICES": ",".join(identifiers), "CUDA_DEVICE_ORDER": order}
    seen = resolve({"gpus": _gpus(count), "environment": environment})
    assert len(seen.gpus) <= count + 1
    assert isinstance(arch_list_missing(arch, ["8.0", "9.0"]), list)
    fraction(arch)


@PARSER
@given(text=st.lists(DIGITISH, max_size=8).map("".join))
def test_numbers_and_versions_parse_or_refuse(text):
    from hwcheck.base.errors import InputError
    from hwcheck.base.numbers import MAX_DIGITS, parse_whole
    from hwcheck.base.versions import major, parse_version, version_less

    try:
        value = parse_whole(text, "SOURCE")
        assert text.isascii() and text.isdigit() and 0 <= value < 10**MAX_DIGITS
    except InputError as error:
        assert str(error).startswith("SOURCE: ") and "\n" not in str(error)
    parsed = parse_version(text)
    assert parsed is None or all(isinstance(part, int) and part < 10**MAX_DIGITS for part in parsed)
    assert isinstance(major(text), int) and isinstance(version_less(text, "12.4"), bool)


CPUINFO_LINES = st.lists(
    st.tuples(
        st.sampled_from(["processor", "flags", "Features", "model name", "vendor_id", "CPU part", "x", ""]),
        st.sampled_from([":", "\t:", "", " : "]),
        NASTY_TEXT | DIGITISH,
    ).map("".join),
    max_size=12,
).map("\n".join)


@PARSER
@given(text=CPUINFO_LINES, machine=st.sampled_from([None, "x86_64", "aarch64", "ppc64le"]))
def test_any_cpuinfo_text_parses_or_is_one_error(text, machine):
    from hwcheck.base.errors import InputError
    from hwcheck.probes.cpu import parse_cpuinfo

    with contextlib.suppress(InputError):
        assert isinstance(parse_cpuinfo(text, machine), dict)


RULE_PARTS = st.sampled_from(
    [
        "gpu.count > 0",
        "versoin_less(tf.version, '2')",
        "version_less(tf.version, '2.16')",
        "cpu.model.matches('a{9999999999999999999999}')",
        "size(gpu.names) == １",
        "gpu.cout",
        "env.X == '1'",
        "(",
        "'\\x1b'",
        "x.y()",
        "major(driver.version) >= 535",
    ]
)


@PARSER
@given(when=st.lists(RULE_PARTS, min_size=1, max_size=3).map(" && ".join), rule_id=NASTY_TEXT)
def test_any_site_rule_loads_or_is_one_error(tmp_path_factory, when, rule_id):
    from hwcheck.base.errors import InputError
    from hwcheck.engine.rules import load_rules

    path = tmp_path_factory.mktemp("rules") / "site.toml"
    document = {"rule": [{"id": rule_id, "severity": "info", "when": when, "message": "m", "remedy": "r"}]}
    path.write_text(
        "[[rule]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in document["rule"][0].items()),
        encoding="utf-8",
        errors="surrogatepass",
    )
    try:
        load_rules([path])
    except InputError as error:
        assert str(error).startswith(str(path))


@PARSER
@given(document=ANY_JSON)
def test_any_bench_file_reads_or_is_one_error(tmp_path_factory, document):
    from hwcheck.base.errors import InputError
    from hwcheck.facts.bench import read_bench

    path = tmp_path_factory.mktemp("bench") / "bench.json"
    path.write_text(json.dumps(document, ensure_ascii=True))
    with contextlib.suppress(InputError):
        assert isinstance(read_bench(path), list)


SYSFS_FILES = st.sampled_from(["vendor", "device", "class"])


@PARSER
@given(files=st.lists(st.tuples(SYSFS_FILES, NASTY_TEXT | DIGITISH), max_size=6))
def test_any_sysfs_tree_gives_a_device_list(tmp_path_factory, files):
    from hwcheck.probes.sysfs import pci_devices

    root = tmp_path_factory.mktemp("sysfs")
    folder = root / "0000:01:00.0"
    folder.mkdir()
    for name, text in files:
        (folder / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    os.mkfifo(folder / "subsystem_vendor")  # a FIFO in a copied tree must not block the scan
    assert isinstance(pci_devices(root), list)
