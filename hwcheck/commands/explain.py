"""`hwcheck explain`: which known causes fit an error message, each checked against the machine.

The message is matched against every atlas class's signatures (rules/atlas/*.toml); each class
that fits is checked against this machine (probed as doctor probes it) or a facts file or
report: confirmed when its rule fires, ruled out when the facts that decide it are known and
the rule stays quiet, unknown (with the one command that settles it) when one of them is not.
"""

from __future__ import annotations

import os
import re
import sys

from hwcheck.base.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from hwcheck.commands import Arguments
    from hwcheck.knowledge.atlas import Atlas, AtlasClass
    from hwcheck.recommendation import Recommendation

# The most of a message or log read: the end of a longer log (where the error is) is kept.
MAX_TEXT_BYTES = 4 * 1024 * 1024
# Standard input is read to its end up to this much (the last MAX_TEXT_BYTES kept), then stopped.
MAX_STDIN_BYTES = 64 * 1024 * 1024
# The framework's words quoted back: at most this many characters of the matched text.
MAX_QUOTE = 160
PLACEHOLDER = re.compile(r":?\s*\{[^{}]*\}")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CONFIRMED, RULED_OUT, UNKNOWN = "confirmed", "ruled out", "unknown"
KNOWN, ABSENT, UNKNOWN_FACT = "known", "absent", "unknown"
ADVISED = ("torch", "tensorflow", "jax")
# The probes that fill facts.gpus: each reports "absent" when it found no GPU of its kind.
GPU_PROBES = ("gpu", "amd", "apple", "intel")


class Cause(NamedTuple):
    """One atlas class that fits the message, and what the machine says of it."""

    atlas_class: AtlasClass
    quote: str  # the framework's words that matched
    status: str  # CONFIRMED, RULED_OUT or UNKNOWN
    severity: str | None  # of the confirming finding
    finding: str | None  # the rule's message on this machine
    remedy: str | None
    source: str | None
    facts: dict[str, Fact]  # the deciding facts, as this machine has them
    framework: str | None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the explain subcommand."""
    from hwcheck.commands.options import add_framework_option, add_machine_options

    parser = subparsers.add_parser(
        "explain",
        help="say which known causes fit an error message, checked on this machine",
        description="Match an error message (TEXT, a log FILE, or - / standard input) against the atlas "
        "of failures taken from the trackers, and check each cause that fits against this machine (or "
        "--facts / --report FILE): confirmed, ruled out by a fact, or unknown with the command that "
        "settles it. Exit 0 nothing confirmed as an error, 1 a confirmed error, 2 bad input.",
    )
    parser.add_argument(
        "message", nargs="*", metavar="TEXT | FILE | -", help="the error text, a log file, or -"
    )
    parser.add_argument("--json", action="store_true", help="print the causes as JSON")
    parser.add_argument("--report", metavar="FILE", help="take the machine from a report (hwcheck report)")
    add_framework_option(parser)
    add_machine_options(parser)
    parser.set_defaults(run=run)


def run(args: Arguments) -> int:
    """Match, check each cause that fits, print; exit 1 when a confirmed cause is an error."""
    from hwcheck.base.errors import InputError
    from hwcheck.knowledge.atlas import load_atlas

    if getattr(args, "report", None):
        if args.facts:
            raise InputError(args.report, "give --facts or --report, not both")
        args.facts = args.report
    text = read_message(args.message)
    atlas = load_atlas()
    matched = match(atlas, text)
    causes = check_causes(args, matched) if matched else []
    if args.json:
        from hwcheck.base.safe import json_text

        print(json_text(to_json(atlas, causes, len(text))))
    else:
        print("\n".join(render(atlas, causes)))
    return 1 if any(c.status == CONFIRMED and c.severity == "error" for c in causes) else 0


def read_message(parts: list[str]) -> str:
    """The message: the words given, a log file's last MAX_TEXT_BYTES, or standard input's."""
    from hwcheck.base.errors import InputError

    if len(parts) == 1 and parts[0] == "-" or not parts:
        if not parts and sys.stdin.isatty():
            raise InputError("explain", "give the error text, a log file, or - to read standard input")
        raw = _tail_of_stream(sys.stdin.buffer)
        where = "standard input"
    elif len(parts) == 1 and os.path.exists(parts[0]):
        raw, where = _tail_of_file(parts[0]), parts[0]
    else:
        raw, where = " ".join(parts).encode("utf-8", "surrogateescape"), "the message"
    text = ANSI_ESCAPE.sub("", raw.decode("utf-8", "replace"))
    if not text.strip():
        raise InputError(where, "no error text to explain (it is empty)")
    return text


def _tail_of_file(path: str) -> bytes:
    from hwcheck.base.inputs import open_regular

    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_TEXT_BYTES:
            handle.seek(size - MAX_TEXT_BYTES)
        return handle.read(MAX_TEXT_BYTES)


def _tail_of_stream(stream: Any) -> bytes:
    kept, total = b"", 0
    while total < MAX_STDIN_BYTES:
        chunk = stream.read(1024 * 1024)
        if not chunk:
            break
        total += len(chunk)
        kept = (kept + chunk)[-MAX_TEXT_BYTES:]
    return kept


def match(atlas: Atlas, text: str) -> list[tuple[AtlasClass, str]]:
    """Each class with a signature found in `text`, and the words it matched (in atlas order)."""
    found = []
    for atlas_class in atlas.classes:
        for signature in atlas_class.signatures:
            hit = signature.search(text)
            if hit:
                found.append((atlas_class, _quote(hit.group(0))))
                break
    return found


def _quote(words: str) -> str:
    from hwcheck.base.safe import terminal_text

    flat = " ".join(words.split())
    return terminal_text(flat if len(flat) <= MAX_QUOTE else flat[: MAX_QUOTE - 3] + "...")


def check_causes(args: Arguments, matched: list[tuple[AtlasClass, str]]) -> list[Cause]:
    """Check each matched class on the machine (probed once, advised once per framework)."""
    from hwcheck.commands import read_machine, recommend_for
    from hwcheck.engine.rules import load_rules

    machine = read_machine(args)
    rules = load_rules(getattr(args, "rules", []) or [])
    advice: dict[str | None, Recommendation] = {}
    causes = []
    for atlas_class, quote in matched:
        framework = _framework_for(atlas_class, machine.facts, getattr(args, "framework", None))
        if framework not in advice:
            advice[framework] = recommend_for(args, machine.facts, machine.probes, framework=framework)
        facts = machine.facts
        if "gpus" not in facts and _no_gpu_found(machine.probes):
            facts = {**facts, "gpus": []}  # probed live and none found: absent, not unknown
        causes.append(_judge(atlas_class, quote, advice[framework], facts, framework, rules))
    order = {CONFIRMED: 0, UNKNOWN: 1, RULED_OUT: 2}
    return sorted(causes, key=lambda cause: order[cause.status])


def _no_gpu_found(probes: dict[str, dict[str, Any]]) -> bool:
    """Whether every GPU probe ran here and found none (a facts file's probes say nothing of it)."""
    return all(probes.get(name, {}).get("status") == "absent" for name in GPU_PROBES)


def _framework_for(atlas_class: AtlasClass, facts: dict[str, Any], given: str | None) -> str | None:
    """The framework to advise for: the one given, else the class's one installed here, else its only one."""
    if given:
        return given
    candidates = [name for name in atlas_class.frameworks if name in ADVISED]
    frameworks = facts.get("frameworks") if isinstance(facts.get("frameworks"), dict) else {}
    installed = [name for name in candidates if isinstance((frameworks or {}).get(name), dict)]
    if installed:
        return installed[0]
    return candidates[0] if len(candidates) == 1 else None


def _judge(
    atlas_class: AtlasClass,
    quote: str,
    recommendation: Recommendation,
    facts: dict[str, Any],
    framework: str | None,
    rules: Any,
) -> Cause:
    deciding = [path for path in atlas_class.facts if _concerns(path, framework)]
    values = {path: fact_value(facts, path) for path in deciding}
    unknown = [path for path, fact in values.items() if fact.state == UNKNOWN_FACT]
    findings = [f for f in recommendation.findings if f.id in atlas_class.rules and f.severity != "info"]
    finding = next((f for f in findings if f.severity == "error"), findings[0] if findings else None)
    if finding is not None:
        # An error rule that fired as a warning was downgraded: a fact it rests on is unknown here.
        rule = rules.rules.get(finding.id)
        downgraded = rule is not None and rule.severity == "error" and finding.severity != "error"
        status = UNKNOWN if downgraded else CONFIRMED
        return Cause(
            atlas_class,
            quote,
            status,
            finding.severity,
            finding.message,
            finding.remedy,
            _without_placeholders(finding.source),
            values,
            framework,
        )
    status = UNKNOWN if unknown else RULED_OUT
    return Cause(atlas_class, quote, status, None, None, None, None, values, framework)


def _without_placeholders(source: str | None) -> str | None:
    """A rule's source as written, less any {placeholder} the engine leaves unrendered in sources."""
    if source is None:
        return None
    return PLACEHOLDER.sub("", source).strip() or None


def _concerns(path: str, framework: str | None) -> bool:
    """Whether a fact matters for this framework (another framework's facts do not)."""
    parts = path.split(".")
    if parts[0] == "frameworks" and len(parts) > 1 and framework and parts[1] in ADVISED:
        return parts[1] == framework
    return True


class Fact(NamedTuple):
    """A deciding fact on this machine: known (with its value), absent (looked for, not there) or unknown."""

    state: str  # KNOWN, ABSENT or UNKNOWN_FACT
    value: Any = None

    @property
    def shown(self) -> str:
        """The value as text: a list joined, absent as "none"."""
        if self.state == ABSENT:
            return "none"
        if isinstance(self.value, list):
            return ", ".join(str(item) for item in self.value[:8]) + (", ..." if len(self.value) > 8 else "")
        return str(self.value)


def fact_value(facts: dict[str, Any], path: str) -> Fact:
    """The fact at a dotted path ([] walks every element of a list), three-valued as the engine reads
    facts: a key present is known (null: absent), an empty list on the way is absent, a key or a
    section missing is unknown."""
    current: list[Any] = [facts]
    *steps, key = path.split(".")
    for step in steps:
        name, listed = step.removesuffix("[]"), step.endswith("[]")
        found: list[Any] = []
        emptied = False
        for node in current:
            value = node.get(name) if isinstance(node, dict) else None
            if listed and isinstance(value, list):
                found.extend(item for item in value if isinstance(item, dict))
                emptied = emptied or not value
            elif not listed and isinstance(value, dict):
                found.append(value)
        if not found:
            return Fact(ABSENT) if emptied else Fact(UNKNOWN_FACT)
        current = found
    name, listed = key.removesuffix("[]"), key.endswith("[]")
    holders = [node for node in current if isinstance(node, dict) and name in node]
    if not holders:
        return Fact(UNKNOWN_FACT)
    values = [node[name] for node in holders if node[name] is not None]
    if listed:
        values = [item for value in values for item in (value if isinstance(value, list) else [value])]
    if not values:
        return Fact(ABSENT)
    return Fact(KNOWN, values if "[]" in path or len(values) > 1 else values[0])


def render(atlas: Atlas, causes: list[Cause]) -> list[str]:
    """The causes as lines within the terminal's width."""
    from hwcheck.base.safe import terminal_text
    from hwcheck.base.wrap import terminal_width, wrap_text

    width = terminal_width()
    checked = f"{len(atlas.classes)} known causes, {atlas.signature_count} error messages"
    if not causes:
        return wrap_text(
            f"hwcheck explain: the message matches none of the {checked} in the atlas; nothing is "
            "known of it here. `hwcheck doctor` checks the machine as a whole.",
            width,
        )
    lines = wrap_text(f"hwcheck explain: {len(causes)} of the {checked} fit the message.", width)
    labels = {CONFIRMED: "CONFIRMED", RULED_OUT: "RULED OUT", UNKNOWN: "UNKNOWN"}
    for cause in causes:
        label = labels[cause.status]
        if cause.status == CONFIRMED and cause.severity == "warning":
            label = "CONFIRMED (warning)"
        lines.append("")
        lines += wrap_text(f"{cause.atlas_class.title} [{cause.atlas_class.id}]", width, "  ", f"{label}: ")
        lines += _field("framework said", f'"{cause.quote}"', width)
        if cause.finding:
            lines += _field("on this machine", terminal_text(cause.finding), width)
        if cause.status == RULED_OUT:
            lines += _field("ruled out by", _facts_text(cause.facts), width)
        if cause.status == UNKNOWN:
            unknown = [path for path, fact in cause.facts.items() if fact.state == UNKNOWN_FACT]
            if unknown:
                lines += _field("not known", ", ".join(unknown), width)
            lines += _field("settle with", cause.atlas_class.check, width)
        if cause.remedy and cause.status != RULED_OUT:
            lines += _field("remedy", terminal_text(cause.remedy), width)
        if cause.source and cause.status != RULED_OUT:
            lines += _field("source", terminal_text(cause.source), width)
        lines += _seen_in(cause.atlas_class.threads, width)
    return lines


def _seen_in(threads: tuple[str, ...], width: int) -> list[str]:
    """The shortest thread, on the field's line when it fits, else whole on its own line, else folded."""
    from hwcheck.base.safe import terminal_text

    url = terminal_text(min(threads, key=len))
    if len(f"  seen in: {url}") > width and len(url) + 4 <= width:
        return ["  seen in:", f"    {url}"]
    return _field("seen in", url, width)


def _field(name: str, text: str, width: int) -> list[str]:
    """`  name: text` wrapped under a four-space indent; a word longer than a line (a path, a URL)
    is folded at the width, as doctor's terminal output folds it."""
    import textwrap

    lead = f"  {name}: "
    return textwrap.wrap(
        text,
        width=max(width, len(lead) + 8),
        initial_indent=lead,
        subsequent_indent="    ",
        break_long_words=True,
        break_on_hyphens=False,
    ) or [lead.rstrip()]


def _facts_text(values: dict[str, Fact]) -> str:
    from hwcheck.base.safe import terminal_text

    shown = [f"{path} = {terminal_text(fact.shown)}" for path, fact in values.items()]
    return "; ".join(shown) or "the rule's facts"


def to_json(atlas: Atlas, causes: list[Cause], characters: int) -> dict[str, Any]:
    """The causes as a JSON document, with what was checked."""
    return {
        "checked": {
            "characters": characters,
            "classes": len(atlas.classes),
            "signatures": atlas.signature_count,
        },
        "causes": [
            {
                "class": cause.atlas_class.id,
                "title": cause.atlas_class.title,
                "status": cause.status,
                "severity": cause.severity,
                "framework_said": cause.quote,
                "finding": cause.finding,
                "remedy": cause.remedy,
                "source": cause.source,
                "facts": {path: fact._asdict() for path, fact in cause.facts.items()},
                "check": cause.atlas_class.check,
                "framework": cause.framework,
                "rules": list(cause.atlas_class.rules),
                "threads": list(cause.atlas_class.threads),
            }
            for cause in causes
        ],
    }
