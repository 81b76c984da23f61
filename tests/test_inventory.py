"""`hwcheck inventory`: classes, the shared cluster policy, duplicates, output formats, sources."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from inventory_helpers import make_report, profile_facts, write_report

from conftest import run_hwcheck
from hwcheck.inventory.merge import Inventory, Merger
from hwcheck.inventory.output import inventory_csv, inventory_document
from hwcheck.inventory.sources import report_paths
from hwcheck.recommendation import recommend
from hwcheck.render.report import build_report

A100, V100, H100 = "a100-sxm4x8-epyc", "v100-sxm2x8-broadwell", "h100x8-sapphirerapids"
T4_OLD_DRIVER, L4, P100 = "t4-vm-old-driver", "l4-cascadelake", "p100-haswell"
SAPPHIRE_RAPIDS, HASWELL = "sapphirerapids-cpu", "haswell-cpu"


def merged(*profiles: str) -> Inventory:
    """An inventory of one node per profile, hosts named after the profiles."""
    merger = Merger()
    for number, name in enumerate(profiles):
        merger.add(make_report(name, f"{name}-{number}"), f"{name}-{number}.json")
    return merger.finish()


def class_of(inventory: Inventory, profile: str):
    """The class holding the node made from `profile`."""
    return next(c for c in inventory.classes if any(n.name.startswith(profile) for n in c.nodes))


@pytest.mark.parametrize(
    ("profiles", "shared", "gaining"),
    [
        # One generation everywhere: the cluster runs what each node runs.
        ((A100, A100, A100), "mixed_bfloat16", ()),
        ((V100, V100), "mixed_float16", ()),
        # Volta + Ampere: both run float16 on Tensor Cores; Ampere alone would use bf16.
        ((A100, V100), "mixed_float16", (A100,)),
        # Ampere, Hopper, Ada all have bf16 Tensor Cores.
        ((A100, H100, L4), "mixed_bfloat16", ()),
        # An AMX CPU node computes bf16 fast too, so GPU and CPU nodes share bf16.
        ((H100, SAPPHIRE_RAPIDS), "mixed_bfloat16", ()),
        # Volta needs float16, the CPU must never get float16: nothing mixed is shared.
        ((V100, SAPPHIRE_RAPIDS), "float32", (V100, SAPPHIRE_RAPIDS)),
        # Pascal has no Tensor Cores: float32 only.
        ((A100, P100), "float32", (A100,)),
        ((SAPPHIRE_RAPIDS, HASWELL), "float32", (SAPPHIRE_RAPIDS,)),
        # A T4 whose driver is too old trains on its CPU (float32) until the driver is fixed: a
        # broken class is left out (and named), so the healthy V100 class's policy is shared.
        ((V100, T4_OLD_DRIVER), "mixed_float16", (T4_OLD_DRIVER,)),
    ],
)
def test_cluster_shares_the_best_policy_every_class_runs_well(profiles, shared, gaining):
    inventory = merged(*profiles)
    assert inventory.cluster.policy == shared
    assert inventory.cluster.loss_scaling is (shared == "mixed_float16")
    assert {c.id for c in inventory.gains} == {class_of(inventory, p).id for p in gaining}
    assert inventory.nodes == len(profiles)


def test_a_broken_class_is_named_and_does_not_pull_the_cluster_down():
    inventory = merged(V100, T4_OLD_DRIVER)
    broken = class_of(inventory, T4_OLD_DRIVER)
    assert inventory.cluster.policy == "mixed_float16"
    assert any(
        reason.startswith("Left out until the errors") and broken.id in reason
        for reason in inventory.cluster.reasons
    )
    # Every class broken: nothing healthy to follow, so the rule applies to them all.
    assert merged(T4_OLD_DRIVER).cluster.policy == "float32"


def test_classes_name_what_keeps_the_cluster_from_a_better_policy():
    inventory = merged(V100, SAPPHIRE_RAPIDS, A100)
    volta, cpu, ampere = (class_of(inventory, p) for p in (V100, SAPPHIRE_RAPIDS, A100))
    assert ampere.runs_well == ("mixed_bfloat16", "mixed_float16", "float32")
    assert volta.runs_well == ("mixed_float16", "float32")
    assert cpu.runs_well == ("mixed_bfloat16", "float32")
    assert inventory.cluster.limited_by == {"mixed_bfloat16": [volta.id], "mixed_float16": [cpu.id]}
    assert any("Tesla V100-SXM2-16GB" in reason for reason in inventory.cluster.reasons)


def test_a_cluster_that_prefers_float16_keeps_that_choice():
    # Every node was advised with prefer="float16": Ampere then trains in mixed_float16.
    merger = Merger()
    for number, name in enumerate((A100, H100)):
        facts = profile_facts(name)
        report = build_report(facts, {}, recommend(facts, prefer="float16"), stamped=True)
        report["host"] = f"node{number}"
        merger.add(report, f"node{number}.json")
    inventory = merger.finish()
    assert inventory.cluster.policy == "mixed_float16"
    assert inventory.gains == []


def test_nodes_group_by_gpu_count_cpu_driver_and_tensorflow():
    merger = Merger()
    for number in range(5):
        merger.add(make_report(A100, f"a{number}"), f"a{number}.json")
    merger.add(make_report(A100, "new-driver", driver=("565.57.01", "12.7")), "new-driver.json")
    eight_v100 = make_report(V100, "v-full")
    four_v100 = make_report(V100, "v-half")
    four_v100["facts"]["gpus"] = four_v100["facts"]["gpus"][:4]
    merger.add(eight_v100, "v-full.json")
    merger.add(four_v100, "v-half.json")
    inventory = merger.finish()
    sizes = {c.hardware.gpu_text() + " " + c.hardware.driver_text(): len(c.nodes) for c in inventory.classes}
    assert sizes == {
        "8× NVIDIA A100-SXM4-80GB driver 555.42.02 (CUDA 12.5), runtime 12.3.101": 5,
        "8× NVIDIA A100-SXM4-80GB driver 565.57.01 (CUDA 12.7), runtime 12.3.101": 1,
        "8× Tesla V100-SXM2-16GB driver 550.127.05 (CUDA 12.4), runtime 12.3.101": 1,
        "4× Tesla V100-SXM2-16GB driver 550.127.05 (CUDA 12.4), runtime 12.3.101": 1,
    }
    assert inventory.classes[0].id == "C1" and len(inventory.classes[0].nodes) == 5
    # The CPU part of the class keeps only the flags that change advice.
    cpu = class_of(inventory, "a0").hardware
    assert cpu.cpu_model == "AMD EPYC 7301 16-Core Processor"
    assert cpu.cpu_flags == ("avx", "avx2", "fma")


def test_findings_are_counted_per_class_and_error_nodes_listed_by_host():
    inventory = merged(T4_OLD_DRIVER, T4_OLD_DRIVER, A100)
    broken = class_of(inventory, T4_OLD_DRIVER)
    assert broken.policy == "float32" and broken.device == "cpu"
    finding = next(f for f in broken.findings if f.severity == "error")
    assert finding.id == "driver-too-old-for-framework" and finding.nodes == 2
    assert "515.105.01" in finding.message and finding.remedy
    assert [node.name for node, _ in inventory.error_nodes] == [f"{T4_OLD_DRIVER}-0", f"{T4_OLD_DRIVER}-1"]
    assert "has errors" in broken.label()


def test_the_newest_report_of_a_host_wins_and_the_older_is_noted():
    merger = Merger()
    merger.add(make_report(V100, "gpu7", "2026-05-02T08:00:00Z"), "new/gpu7.json")
    merger.add(make_report(A100, "gpu7", "2026-04-30T08:00:00+00:00"), "old/gpu7.json")
    merger.add(make_report(A100, "gpu8", None), "untimed/gpu8.json")
    merger.add(make_report(A100, "gpu8", "2026-01-01T00:00:00+02:00"), "timed/gpu8.json")
    merger.add(make_report(A100, "gpu9"), "first/gpu9.json")
    merger.add(make_report(A100, "gpu9"), "second/gpu9.json")
    inventory = merger.finish()
    kept = {node.name: node.source for c in inventory.classes for node in c.nodes}
    assert kept == {"gpu7": "new/gpu7.json", "gpu8": "timed/gpu8.json", "gpu9": "second/gpu9.json"}
    reasons = {s.dropped.source: s.reason() for s in inventory.superseded}
    assert reasons["old/gpu7.json"].startswith("older (2026-04-30T08:00:00+00:00) than new/gpu7.json")
    assert reasons["untimed/gpu8.json"].startswith("has no time")
    assert reasons["first/gpu9.json"].startswith("same time as second/gpu9.json")
    assert inventory.exit_status == 0  # duplicates are noted, not rejected


def test_redacted_reports_never_collide():
    merger = Merger()
    for number in range(3):
        merger.add(make_report(A100, None), f"redacted-{number}.json")
    inventory = merger.finish()
    assert inventory.nodes == 3 and inventory.superseded == []
    assert sorted(n.name for n in inventory.classes[0].nodes) == [
        "redacted-0.json",
        "redacted-1.json",
        "redacted-2.json",
    ]


def bad_reports(directory: Path) -> dict[str, str]:
    """Write one broken report of each kind; file name -> words its rejection must contain."""
    good = json.dumps(make_report(A100, "broken"), indent=2)
    (directory / "truncated.json").write_text(good[: len(good) // 2])
    (directory / "oversized.json").write_text(good[:-2] + ', "padding": "' + "x" * (11 * 1024 * 1024) + '"}')
    (directory / "deeply-nested.json").write_text("[" * 100_000 + "]" * 100_000)
    (directory / "latin1.json").write_bytes(good.replace('"broken"', '"n\u00f6de"').encode("latin-1"))
    future = json.loads(good)
    future["schema_version"] = 2
    (directory / "future.json").write_text(json.dumps(future))
    (directory / "package.json").write_text(
        json.dumps({"name": "web-ui", "version": "1.4.0", "dependencies": {"react": "^18.2.0"}})
    )
    (directory / "facts-only.json").write_text(json.dumps(profile_facts(A100)))
    (directory / "other-tool.json").write_text(json.dumps({"schema_version": 1, "rows": []}))
    wrong_type = json.loads(good)
    wrong_type["facts"]["gpus"][0]["compute_capability"] = 8.0
    (directory / "wrong-type.json").write_text(json.dumps(wrong_type))
    nested_in_facts = json.loads(good)
    nested_in_facts["facts"]["cpu"] = json.loads("[" * 200 + "]" * 200)
    (directory / "nested-in-facts.json").write_text(json.dumps(nested_in_facts))
    bad_time = json.loads(good)
    bad_time["time"] = "yesterday"
    (directory / "bad-time.json").write_text(json.dumps(bad_time))
    (directory / "empty.json").write_text("")
    (directory / "array.json").write_text("[1, 2, 3]")
    return {
        "truncated.json": "malformed JSON",
        "oversized.json": "larger than 10 MB",
        "deeply-nested.json": "nested too deeply",
        "latin1.json": "not UTF-8",
        "future.json": "schema_version 2 is not supported",
        "package.json": "not a hwcheck report",
        "facts-only.json": "a facts file, not a report",
        "other-tool.json": 'not a valid report: top level: "hwcheck_version" is a required',
        "wrong-type.json": "facts.gpus[0].compute_capability",
        "nested-in-facts.json": "facts.cpu",
        "bad-time.json": "'yesterday' is not an ISO 8601 date-time",
        "empty.json": "empty file",
        "array.json": "expected a JSON object, got an array",
    }


def test_each_bad_report_is_rejected_with_its_reason_and_the_rest_merge(tmp_path):
    expected = bad_reports(tmp_path)
    for number in range(3):
        write_report(tmp_path, f"good-{number}.json", make_report(A100, f"good-{number}"))
    result = run_hwcheck("inventory", str(tmp_path), "--json")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    reasons = {Path(r["source"]).name: r["reason"] for r in document["rejected"]}
    assert set(reasons) == set(expected)
    for name, words in expected.items():
        assert words in reasons[name], (name, reasons[name])
        assert "\n" not in reasons[name]
    assert document["summary"]["nodes"] == 3
    assert [m["host"] for m in document["classes"][0]["members"]] == ["good-0", "good-1", "good-2"]
    table = run_hwcheck("inventory", str(tmp_path), env={"COLUMNS": "300"})
    assert table.returncode == 1
    assert f"Rejected reports ({len(expected)}):" in table.stdout
    assert f"{tmp_path / 'package.json'}: not a hwcheck report" in table.stdout


def test_exit_status_is_0_when_every_report_merged_and_2_without_paths(tmp_path):
    write_report(tmp_path, "a.json", make_report(A100, "a"))
    write_report(tmp_path, "v.json", make_report(V100, "v"))
    merged_all = run_hwcheck("inventory", str(tmp_path))
    assert merged_all.returncode == 0, merged_all.stderr
    assert "Cluster policy: mixed_float16" in merged_all.stdout
    assert "C1" in merged_all.stdout and "A per-class policy would help" in merged_all.stdout
    no_paths = run_hwcheck("inventory")
    assert no_paths.returncode == 2
    assert no_paths.stderr.startswith("hwcheck: error: hwcheck inventory:")
    empty_stdin = run_hwcheck("inventory", "-", input="\n")
    assert empty_stdin.returncode == 2 and "no report paths" in empty_stdin.stderr


def test_paths_come_from_files_directories_globs_and_stdin(tmp_path):
    for host in ("n1", "n2", "n3", "n4"):
        write_report(tmp_path / "rack" / host[-1], f"{host}.json", make_report(A100, host))
    write_report(tmp_path / "rack", ".n5.json.1234.tmp", make_report(A100, "n5"))
    write_report(tmp_path / "rack", ".hidden.json", make_report(A100, "n6"))
    (tmp_path / "rack" / "notes.txt").write_text("not a report")
    (tmp_path / "empty").mkdir()
    found = list(
        report_paths(
            [
                str(tmp_path / "rack"),
                str(tmp_path / "rack" / "1" / "n1.json"),
                str(tmp_path / "rack" / "*" / "n[23].json"),
                "-",
                str(tmp_path / "missing.json"),
                str(tmp_path / "nothing-*.json"),
                str(tmp_path / "empty"),
            ],
            io.StringIO(f"{tmp_path / 'rack' / '4' / 'n4.json'}\n\n"),
        )
    )
    paths = [p for p in found if isinstance(p, Path)]
    rejected = {Path(r.source).name: r.reason for r in found if not isinstance(r, Path)}
    assert sorted(p.name for p in paths) == ["n1.json", "n2.json", "n3.json", "n4.json"]
    assert rejected == {
        "missing.json": "no such file or directory",
        "nothing-*.json": "no file matches this pattern",
        "empty": "directory holds no *.json reports",
    }

    from_stdin = run_hwcheck("inventory", "-", "--json", input="\n".join(str(p) for p in paths) + "\n")
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout)["summary"]["nodes"] == 4


def test_json_and_csv_carry_the_same_content(tmp_path):
    merger = Merger()
    for number, name in enumerate((A100, A100, V100, T4_OLD_DRIVER, SAPPHIRE_RAPIDS)):
        merger.add(make_report(name, f"node{number}"), f"node{number}.json")
    merger.add(make_report(V100, "node2", "2026-01-01T00:00:00Z"), "old-node2.json")
    merger.reject("broken.json", "malformed JSON at line 1 column 2: Expecting value")
    inventory = merger.finish()
    document = inventory_document(inventory)
    rows = list(csv.DictReader(io.StringIO(inventory_csv(inventory))))

    def records(kind):
        return [row for row in rows if row["record"] == kind]

    (cluster,) = records("cluster")
    assert cluster["policy"] == document["cluster"]["policy"] == "float32"
    assert cluster["reason"] == " ".join(document["cluster"]["reasons"])
    assert [
        (
            r["class"],
            int(r["nodes"]),
            r["policy"],
            r["device"],
            r["runs_well"].split(),
            r["per_class_gain"] == "true",
        )
        for r in records("class")
    ] == [
        (c["id"], c["nodes"], c["policy"], c["device"], c["runs_well"], c["per_class_gain"])
        for c in document["classes"]
    ]
    assert [
        (r["class"], r["finding"], r["severity"], int(r["nodes"]), r["message"])
        for r in records("class_finding")
    ] == [
        (c["id"], f["id"], f["severity"], f["nodes"], f["message"])
        for c in document["classes"]
        for f in c["findings"]
    ]
    assert [(r["class"], r["host"], r["source"]) for r in records("node")] == [
        (c["id"], m["host"], m["source"]) for c in document["classes"] for m in c["members"]
    ]
    assert (
        [(r["host"], r["finding"]) for r in records("error")]
        == [(n["host"], f["id"]) for n in document["error_nodes"] for f in n["findings"]]
        == [("node3", "driver-too-old-for-framework")]
    )
    assert [(r["source"], r["reason"]) for r in records("rejected")] == [
        (r["source"], r["reason"]) for r in document["rejected"]
    ]
    assert (
        [(r["host"], r["source"], r["reason"]) for r in records("superseded")]
        == [(s["host"], s["dropped"], s["reason"]) for s in document["superseded"]]
        == [("node2", "old-node2.json", document["superseded"][0]["reason"])]
    )
    assert {r["record"] for r in rows} == {
        "cluster",
        "class",
        "class_finding",
        "node",
        "error",
        "rejected",
        "superseded",
    }


def test_the_csv_and_json_commands_print_the_same_inventory(tmp_path):
    write_report(tmp_path, "a.json", make_report(A100, "a"))
    write_report(tmp_path, "s.json", make_report(SAPPHIRE_RAPIDS, "s"))
    as_json = run_hwcheck("inventory", str(tmp_path), "--json")
    as_csv = run_hwcheck("inventory", str(tmp_path), "--csv")
    assert as_json.returncode == as_csv.returncode == 0
    document = json.loads(as_json.stdout)
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert (
        [r["policy"] for r in rows if r["record"] == "cluster"]
        == [document["cluster"]["policy"]]
        == ["mixed_bfloat16"]
    )
    assert sorted(r["host"] for r in rows if r["record"] == "node") == ["a", "s"]


def test_reports_written_by_hwcheck_report_merge(tmp_path, fixtures):
    # Replayed bare facts have no host; redacted reports carry none either, so a report
    # without a fingerprint is its own node.
    for folder, extra in (("plain", ()), ("redacted", ("--redact",))):
        (tmp_path / folder).mkdir()
        for facts in ("a100-sxm4x4-tf216.json", "v100-driver-too-old.json"):
            written = run_hwcheck(
                "report",
                "-o",
                str(tmp_path / folder / facts),
                *extra,
                "--facts",
                str(fixtures / "facts" / facts),
            )
            assert written.returncode in (0, 1), written.stderr
    for path in (tmp_path / "plain").iterdir():
        path.write_text(json.dumps({**json.loads(path.read_text()), "host": "node-a"}))
    plain = json.loads(run_hwcheck("inventory", str(tmp_path / "plain"), "--json").stdout)
    # The A100 machine's report carries a fingerprint (from its GPU's UUID): two machines both
    # called node-a are two nodes. Without their fingerprints the host decides, and the newer counts.
    readiness = {  # A100, V100
        "ready_nodes": 1,
        "ready_with_warnings_nodes": 0,
        "not_ready_nodes": 1,
        "readiness_unknown_nodes": 0,
    }
    counts = {"reports_read": 2, "nodes": 2, "classes": 2, "rejected": 0, "superseded": 0}
    assert plain["summary"] == {**counts, **readiness}
    for path in (tmp_path / "plain").iterdir():
        path.write_text(
            json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "fingerprint"})
        )
    plain = json.loads(run_hwcheck("inventory", str(tmp_path / "plain"), "--json").stdout)
    summary = plain["summary"]
    counts = {"reports_read": 2, "nodes": 1, "classes": 1, "rejected": 0, "superseded": 1}
    assert {key: summary[key] for key in counts} == counts
    assert summary["ready_nodes"] + summary["not_ready_nodes"] == 1
    result = run_hwcheck("inventory", str(tmp_path / "redacted"), "--json")
    assert result.returncode == 0, result.stderr
    redacted = json.loads(result.stdout)
    assert redacted["summary"]["nodes"] == 2
    assert {c["policy"] for c in redacted["classes"]} == {"mixed_bfloat16", "float32"}
    assert [n["findings"][0]["id"] for n in redacted["error_nodes"]] == ["driver-too-old-for-framework"]


SCHEMA_BREAKS = {
    "valid as written": (lambda r: None, None),
    "recommendation null": (lambda r: r.update(recommendation=None), None),
    "unknown extra keys": (lambda r: r["facts"].update(rack="b7"), None),
    "no facts": (lambda r: r.pop("facts"), 'top level: "facts" is a required property'),
    "unknown policy": (
        lambda r: r["recommendation"].update(policy="float64"),
        'recommendation.policy: "float64" is not one of "mixed_float16", "mixed_bfloat16" or "float32"',
    ),
    "unknown severity": (
        lambda r: r["recommendation"]["findings"].append(
            {"id": "x", "severity": "fatal", "message": "m", "remedy": None}
        ),
        'recommendation.findings[4].severity: "fatal" is not one of "info", "warning" or "error"',
    ),
    "gpus not a list": (
        lambda r: r["facts"].update(gpus={"name": "T4"}),
        'facts.gpus: {"name":"T4"} is not of type "array"',
    ),
    "capability not a version": (
        lambda r: r["facts"]["gpus"][0].update(compute_capability="8"),
        'facts.gpus[0].compute_capability: "8" does not match',
    ),
    "negative memory": (
        lambda r: r["facts"]["gpus"][0].update(memory_mib=-1),
        "facts.gpus[0].memory_mib: -1 is less than the minimum of 0",
    ),
    "probe status unknown": (
        lambda r: r["probes"]["gpu"].update(status="fine"),
        'probes.gpu.status: "fine" is not one of "ok", "absent", "error", "timeout" or "file"',
    ),
    "duplicate cpu flags": (
        lambda r: r["facts"]["cpu"]["flags"].extend(["avx2", "avx2"]),
        "facts.cpu.flags: [",  # the long array is cut short so that the problem still shows
    ),
    "version too long": (
        lambda r: r["facts"]["nvidia_driver"].update(version="5" * 65),
        "facts.nvidia_driver.version: ",
    ),
    "host a number": (lambda r: r.update(host=17), "host: 17 is not of types"),
    "pci id in capitals": (
        lambda r: r["facts"]["pci"]["devices"][0].update(device_id="0x20B2"),
        'facts.pci.devices[0].device_id: "0x20B2" does not match',
    ),
}


@pytest.mark.parametrize("change", SCHEMA_BREAKS, ids=list(SCHEMA_BREAKS))
def test_schema_validation_names_the_place_and_the_problem(change):
    from hwcheck.inventory.reports import report_problem

    report = make_report(A100, "n1")
    mutate, expected = SCHEMA_BREAKS[change]
    mutate(report)
    problem = report_problem(report)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(f"not a valid report: {expected}"), problem
        message = problem.split(": ", 2)[2]
        assert len(message) <= 160  # one readable line however long the offending value is
    if change == "duplicate cpu flags":
        assert problem.endswith("... has non-unique elements")
    if change == "version too long":
        assert "longer than 64 characters" in problem


def _corpus_report(case: str, host: str) -> dict:
    """A stamped report of a corpus case's facts (replayed from public issues) for `host`."""
    from hwcheck.probes import PROBE_NAMES

    facts = json.loads((Path(__file__).parent / "corpus/cases" / f"{case}.json").read_text())
    probes = {name: {"status": "file", "reason": case, "seconds": None} for name in PROBE_NAMES}
    report = build_report(facts, probes, recommend(facts, probes=probes, framework="torch"), stamped=True)
    return {**report, "host": host}


def test_apple_and_intel_nodes_form_their_own_classes_by_macos_and_runtime():
    merger = Merger()
    nodes = {
        "m4-a": "healthy-macos-m4-torch26",
        "m4-b": "healthy-macos-m4-torch26",
        "m2max": "macos13-m2max-torch210-mps-floor",
        "arc-a": "healthy-arc-a770-torch212-xpu",
        "arc-b": "healthy-arc-a770-torch212-xpu",
        "max1100": "healthy-max1100-torch27-xpu",
    }
    for host, case in nodes.items():
        merger.add(_corpus_report(case, host), f"{host}.json")
    merger.add(make_report(A100, "a100"), "a100.json")
    inventory = merger.finish()
    classes = {tuple(sorted(node.name for node in c.nodes)): c for c in inventory.classes}
    assert set(classes) == {("m4-a", "m4-b"), ("m2max",), ("arc-a", "arc-b"), ("max1100",), ("a100",)}
    m4, m2max = classes[("m4-a", "m4-b")], classes[("m2max",)]
    assert m4.device == "mps" and m4.hardware.gpu_text() == "1× Apple M4"
    assert m4.hardware.driver_text() == "no driver"  # that facts file names no macOS release
    # torch 2.10 needs macOS 14 for MPS: the macOS 13.7.4 node trains on the CPU, and says why.
    assert m2max.hardware.driver_text() == "macOS 13.7.4" and m2max.device == "cpu"
    assert any(f.id == "mps-macos-too-old-for-torch" for f in m2max.findings)
    arc = classes[("arc-a", "arc-b")]
    assert arc.device == "xpu" and arc.hardware.driver_text() == "Intel compute runtime 26.05.37020.3-1"
    assert classes[("max1100",)].device == "xpu"
    assert arc.hardware.to_dict()["intel_compute_runtime"] == "26.05.37020.3-1"
    assert m2max.hardware.to_dict()["macos"] == "13.7.4"
