"""`hwcheck inventory --html`: one self-contained page, checked as text and in a real headless Chromium."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from inventory_helpers import make_report, write_report
from test_bench_inventory import TORCH, mlp_block

from conftest import run_hwcheck

HOSTILE = "<img src=x onerror=alert(1)>"
QUOTED = '" onmouseover="alert(2)'
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium() -> str | None:
    """The Chromium binary Debian's package installs, if any."""
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The page the command builds from real profiles: classes, an error node, bench, hostile names."""
    folder = tmp_path_factory.mktemp("inventory")
    reports = folder / "reports"
    nodes = [
        ("a100-sxm4x8-epyc", "gpu-a1", [mlp_block(9.0)]),
        ("a100-sxm4x8-epyc", "gpu-a2", [mlp_block(8.0)]),
        ("a100-sxm4x8-epyc", HOSTILE, None),
        ("v100-sxm2x8-broadwell", QUOTED, None),
        ("t4-vm-old-driver", "gpu-t4", None),
    ]
    for number, (profile, host, bench) in enumerate(nodes):
        report = make_report(profile, host)
        if bench is not None:
            report["bench"] = bench
            report["facts"]["frameworks"]["torch"] = {"version": TORCH}
        write_report(reports, f"node{number}.json", report)
    (reports / "broken.json").write_text("{", encoding="utf-8")
    path = folder / "inventory.html"
    result = run_hwcheck("inventory", str(reports), "--html", str(path), "--json")
    assert result.returncode == 1, result.stderr  # the broken report is rejected; the rest merged
    assert json.loads(result.stdout)["summary"]["nodes"] == 5
    (folder / "inventory.json").write_text(result.stdout, encoding="utf-8")
    return path


def test_the_page_is_self_contained_and_escapes_every_report_string(page):
    text = page.read_text(encoding="utf-8")
    assert HOSTILE not in text and QUOTED not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "&quot; onmouseover=&quot;alert(2)" in text
    lowered = text.lower()
    assert "<script" not in lowered and "http://" not in lowered and "https://" not in lowered
    # No tag loads anything: no src or href attribute, no url() or @import in the style.
    assert not re.search(r"<[^>]*\s(src|href|srcset|action)\s*=", lowered)
    assert "url(" not in lowered and "@import" not in lowered
    assert "default-src 'none'" in html.unescape(text)
    for part in (
        'id="classes"',
        'id="cluster-policy"',
        'id="error-nodes"',
        'id="drift"',
        '<svg id="speedups"',
    ):
        assert part in text


def test_the_page_is_never_written_over_a_report(tmp_path):
    report = write_report(tmp_path, "node.json", make_report("a100-sxm4x8-epyc", "gpu1"))
    before = report.read_text(encoding="utf-8")
    result = run_hwcheck("inventory", str(report), "--html", str(report))
    assert result.returncode == 2 and "is also an input" in result.stderr
    assert report.read_text(encoding="utf-8") == before


@pytest.mark.skipif(
    chromium() is None, reason="no Chromium binary (apt-get install chromium, as .ci/run does)"
)
def test_the_page_in_a_headless_browser(page):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    url = page.resolve().as_uri()
    requests: list[str] = []
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page()
            tab.on("request", lambda request: requests.append(request.url))
            tab.on(
                "console", lambda message: problems.append(message.text) if message.type == "error" else None
            )
            tab.on("pageerror", lambda error: problems.append(str(error)))
            tab.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
            tab.goto(url, wait_until="load")
            assert requests == [url]
            assert problems == []
            assert tab.locator("#summary-nodes").inner_text() == "5 nodes"
            assert tab.locator("#summary-classes").inner_text() == "3 classes"
            assert tab.locator("#summary-rejected").inner_text() == "1 rejected"
            counts = tab.locator("#classes td.count").all_inner_texts()
            assert sorted(counts) == ["1", "1", "3"]
            # The page's cluster policy is the JSON's: the healthy classes' shared policy, with the
            # class whose node has an error left out of it.
            cluster = json.loads((page.parent / "inventory.json").read_text(encoding="utf-8"))["cluster"]
            assert cluster["policy"] == "mixed_float16"  # the A100s and the V100; the T4's error left out
            assert cluster["policy"] in tab.locator("#cluster-policy").inner_text()
            # Whose policy: each class and the cluster name the framework the advice is for.
            assert tab.locator("#classes .framework").count() == 3
            assert tab.locator("#cluster-policy .framework").inner_text().strip()
            # The hostile host name is text on the page, and no element was made of it.
            assert tab.locator("img").count() == 0
            assert tab.locator("[onerror], [onmouseover]").count() == 0
            body = tab.locator("body").inner_text()
            assert HOSTILE in body and QUOTED in body
            assert tab.locator("#speedups rect").count() >= 1
            assert "gpu-t4" in tab.locator("#error-nodes").inner_text()
        finally:
            browser.close()


# Terminal escapes a report may carry in any string: a colour, a window title (OSC), an OSC-8
# link, a C1 CSI, a bidi override and a forged line. Written to a terminal they would run.
ESCAPES = (
    "\x1b[31mred\x1b[0m \x1b]0;owned\x07 \x1b]8;;file:///etc\x1b\\ln\x1b]8;;\x1b\\ \x9b2J \u202eevil\nforged"
)


def test_the_page_on_standard_output_is_as_safe_as_text(tmp_path):
    reports = tmp_path / "reports"
    report = make_report("a100-sxm4x8-epyc", "gpu-" + ESCAPES)
    report["facts"]["gpus"][0]["name"] = "A100 " + ESCAPES
    write_report(reports, "node0.json", report)
    write_report(reports, "node1.json", make_report("v100-sxm2x8-broadwell", "gpu-v100"))
    result = run_hwcheck("inventory", str(reports), "--html", "-")
    assert result.returncode in (0, 1), result.stderr
    assert "<html" in result.stdout.lower()
    # No control character but the page's own newlines, no C1 control, no bidi override.
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", result.stdout)
    # The hostile text is still there, visibly: what a reader of the page needs to see.
    assert "\\x1b[31mred" in result.stdout and "gpu-" in result.stdout
