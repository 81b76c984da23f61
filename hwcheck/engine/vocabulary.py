"""The declared rule vocabulary (rules/vocabulary.toml): every variable rule expressions read.

Rule files are checked against this declaration, not against a context built for an empty
machine, so loading rules needs nothing of how the variables are made (context.py), and the
variable table in docs/rules.md is printed from it (`python -m hwcheck.engine.vocabulary
--markdown`, or `--update docs/rules.md` to rewrite it there). tests/test_vocabulary.py
holds it equal to build_context's output on every replay.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

from hwcheck.base.records import NamedTuple
from hwcheck.base.tables import read_toml, rules_folder

# A map key the declaration does not name (`probes.*.status`: each probe's status).
EACH = "*"
# The CEL types a variable may have, each with the value an empty (unknown) one takes.
EMPTY: dict[str, Any] = {"bool": False, "int": 0, "double": 0.0, "string": "", "list of string": []}
_EMPTY_TEXT = {"bool": "false", "int": "`0`", "double": "`0.0`", "string": '`""`', "list of string": "`[]`"}
_MARKER = "<!-- the table below is generated: python -m hwcheck.engine.vocabulary --markdown -->"


class Variable(NamedTuple):
    """One declared variable: its dotted name, CEL type, and where null is one of its values."""

    name: str
    type: str
    null: bool
    meaning: str
    unknown: str
    keys: tuple[str, ...] | None = None  # a map's keys; None: any key (or not a map)
    values: str | None = None  # the type of an open map's values, when declared
    made_by: str = "context"  # "context" (build_context), "derive" or "decision"


def vocabulary_file() -> str:
    """The path of rules/vocabulary.toml."""
    return os.path.join(rules_folder(), "vocabulary.toml")


@cache
def groups() -> tuple[tuple[str, str | None, tuple[Variable, ...]], ...]:
    """The declaration's groups in file order: (meaning, unknown or None, variables)."""
    document = read_toml(vocabulary_file())
    found = []
    for group in document["group"]:
        unknown = group.get("unknown")
        variables = tuple(
            Variable(
                name=entry["name"],
                type=entry["type"],
                null=bool(entry.get("null")),
                meaning=group["meaning"],
                unknown=unknown or ("null" if entry.get("null") else _EMPTY_TEXT.get(entry["type"], "`{}`")),
                keys=tuple(entry["keys"]) if isinstance(entry.get("keys"), list) else None,
                values=entry.get("values"),
                made_by=entry.get("from", "context"),
            )
            for entry in group["variables"]
        )
        found.append((group["meaning"], unknown, variables))
    return tuple(found)


def variables(made_by: str | None = None) -> dict[str, Variable]:
    """Every declared variable by name (only those `made_by` "context", "derive" or "decision")."""
    return {
        variable.name: variable
        for _, _, members in groups()
        for variable in members
        if made_by is None or variable.made_by == made_by
    }


@cache
def shape(made_by: str = "context") -> dict[str, Any]:
    """A tree shaped like the variables, as names.unknown_variable reads it (open maps: AnyKeys)."""
    from hwcheck.engine.names import AnyKeys

    declared = variables(made_by)
    tree: dict[str, Any] = {}

    def build(prefix: str, node: dict[str, Any]) -> dict[str, Any]:
        built: dict[str, Any] = {}
        for segment, below in node.items():
            name = f"{prefix}.{segment}" if prefix else segment
            variable = declared.get(name)
            if variable is not None and variable.type == "map":
                fields = build(f"{name}.{EACH}", below.get(EACH, {}))
                built[segment] = (
                    AnyKeys() if variable.keys is None else {key: fields for key in variable.keys}
                )
            elif variable is not None:
                built[segment] = EMPTY[variable.type]
            else:
                built[segment] = build(name, below)
        return built

    for name in declared:
        node = tree
        for segment in name.split("."):
            node = node.setdefault(segment, {})
    return build("", tree)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list of string" if all(isinstance(item, str) for item in value) else "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def problems(context: dict[str, Any]) -> tuple[list[str], set[str]]:
    """What in `context` the declaration does not say (undeclared names, other types), and the names seen."""
    declared = variables("context")
    found: list[str] = []
    seen: set[str] = set()

    def walk(name: str, value: Any) -> None:
        variable = declared.get(name)
        if variable is None and isinstance(value, dict) and name not in declared:
            for key, inner in value.items():
                walk(f"{name}.{key}" if name else str(key), inner)
            return
        if variable is None:
            found.append(f"{name}: not declared ({_kind(value)})")
            return
        seen.add(name)
        kind = _kind(value)
        if value is None and not variable.null:
            found.append(f"{name}: null, declared {variable.type} that is never null")
        elif value is not None and kind != variable.type:
            found.append(f"{name}: {kind}, declared {variable.type}")
        if variable.type != "map" or not isinstance(value, dict):
            return
        if variable.keys is not None and sorted(value) != sorted(variable.keys):
            found.append(f"{name}: keys {sorted(value)}, declared {sorted(variable.keys)}")
        for key, inner in value.items():
            if variable.keys is not None:
                walk(f"{name}.{EACH}", inner)
            elif variable.values is not None and _kind(inner) != variable.values:
                found.append(f"{name}[{key!r}]: {_kind(inner)}, declared {variable.values}")

    walk("", context)
    return found, seen


def markdown() -> str:
    """docs/rules.md's variable table, from the declaration."""
    lines = [_MARKER, "", "| variable | what | unknown |", "|---|---|---|"]
    for meaning, unknown, members in groups():
        names = ", ".join(f"`{variable.name}` {_type_text(variable)}" for variable in members)
        nulls = [variable for variable in members if variable.null]
        shown = unknown or ("null" if len(nulls) == len(members) else _unknown_text(members))
        lines.append(f"| {names} | {meaning} | {shown} |")
    return "\n".join(lines) + "\n"


def _type_text(variable: Variable) -> str:
    text = variable.type
    if variable.type == "map" and variable.keys is not None:
        text = f"map of {', '.join(variable.keys)}"
    elif variable.type == "map" and variable.values is not None:
        text = f"map of {variable.values}"
    return f"({text} or null)" if variable.null else f"({text})"


def _unknown_text(members: tuple[Variable, ...]) -> str:
    kinds = dict.fromkeys(
        "null" if variable.null else _EMPTY_TEXT.get(variable.type, "`{}`") for variable in members
    )
    return ", ".join(kinds)


def table_in(page: str) -> str:
    """The generated table as it stands in a docs page's text (from its marker to the first blank line)."""
    start = page.index(_MARKER)
    end = page.find("\n\n", start + len(_MARKER) + 2)
    return page[start : end + 1 if end >= 0 else len(page)]


def main(argv: list[str]) -> int:
    """`--markdown`: print docs/rules.md's variable table; `--update PAGE`: rewrite it in PAGE."""
    if argv == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if len(argv) == 2 and argv[0] == "--update":
        with open(argv[1], encoding="utf-8") as page:
            text = page.read()
        if _MARKER not in text:
            print(f"hwcheck: error: {argv[1]}: no generated variable table in it", file=sys.stderr)
            return 2
        temporary = f"{argv[1]}.tmp"
        with open(temporary, "w", encoding="utf-8") as page:
            page.write(text.replace(table_in(text), markdown()))
        os.replace(temporary, argv[1])  # the page whole, never half-written
        return 0
    print("usage: python -m hwcheck.engine.vocabulary --markdown | --update docs/rules.md", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
