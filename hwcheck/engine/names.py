"""The variables a CEL expression reads, checked against the ones rules are given.

The CEL extension reports only the top-level names an expression reads (and counts
comprehension variables among them), so the dotted paths (`gpu.count`,
`probes[name].status`) come from a small scan over the expression's tokens: string
literals, function and method names, and names bound by comprehension macros are
skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

# One path segment that an index expression chose (`probes[name]`, `gpu.names[0]`).
ANY_KEY = "[...]"

_TOKEN = re.compile(
    r"""
    (?P<string>[rRbB]{0,2}(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    |(?P<number>0[xX][0-9a-fA-F]+[uU]?|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[uU]?|\.\d+(?:[eE][+-]?\d+)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>\.\?|\[\?|[.()\[\]{},])
    |(?P<other>\S)
    """,
    re.VERBOSE | re.DOTALL,
)
# Macros whose first argument names each element of the receiver within the call.
_COMPREHENSIONS = frozenset(
    ("all", "exists", "exists_one", "existsOne", "map", "filter", "sortBy", "transformList", "transformMap")
)
# Two-variable forms (`map.all(key, value, predicate)`) bind their second argument too.
_TWO_VARIABLE = frozenset(("all", "exists", "exists_one", "existsOne", "transformList", "transformMap"))
# Names that are CEL itself, not variables: literals, `in`, and type names (`type(x) == int`).
_RESERVED = frozenset(
    ("true", "false", "null", "in", "int", "uint", "double", "bool", "string", "bytes", "list", "map")
    + ("null_type", "type", "dyn")
)


class Token:
    """One token of an expression, with the comprehension variables bound where it stands."""

    __slots__ = ("kind", "text", "bound")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text
        self.bound: frozenset[str] = frozenset()


def tokenize(expression: str) -> list[Token]:
    """The expression's tokens (whitespace dropped), each knowing its bound names."""
    tokens = [
        Token(match.lastgroup or "other", match.group())
        for match in _TOKEN.finditer(expression)
        if match.lastgroup
    ]
    for start, token in enumerate(tokens):
        if token.text == "(" and start >= 2 and tokens[start - 2].text == ".":
            macro = tokens[start - 1].text
            if macro not in _COMPREHENSIONS:
                continue
            bound = _bound_names(tokens, start + 1, two=macro in _TWO_VARIABLE)
            for inner in tokens[start + 1 : closing_bracket(tokens, start)]:
                inner.bound = inner.bound | bound
    return tokens


def _bound_names(tokens: list[Token], first: int, *, two: bool) -> frozenset[str]:
    def name_then_comma(at: int) -> bool:
        return at + 1 < len(tokens) and tokens[at].kind == "name" and tokens[at + 1].text == ","

    if not name_then_comma(first):
        return frozenset()
    if two and name_then_comma(first + 2):
        return frozenset((tokens[first].text, tokens[first + 2].text))
    return frozenset((tokens[first].text,))


def closing_bracket(tokens: list[Token], opening: int) -> int:
    """The index of the bracket closing tokens[opening] (the end when unbalanced)."""
    depth = 0
    for at in range(opening, len(tokens)):
        if tokens[at].text in ("(", "[", "[?", "{"):
            depth += 1
        elif tokens[at].text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return at
    return len(tokens)


def variable_paths(expression: str) -> Iterator[tuple[str, ...]]:
    """The dotted paths of the variables `expression` reads, in order of appearance.

    `gpu.names.exists(n, n.contains('x')) && probes[p].status == ''` reads
    ("gpu", "names") and ("probes", ANY_KEY, "status"); a string-literal index
    (`tf['version']`) is a named segment.
    """
    tokens = tokenize(expression)
    for at, token in enumerate(tokens):
        if token.kind != "name" or token.text in _RESERVED or token.text in token.bound:
            continue
        before = tokens[at - 1].text if at else ""
        after = tokens[at + 1].text if at + 1 < len(tokens) else ""
        if before in (".", ".?") or after in ("(", "{"):
            continue  # a field or method of something else, a function, a message type
        path = [token.text]
        step = at + 1
        while step < len(tokens):
            if (
                tokens[step].text in (".", ".?")
                and step + 1 < len(tokens)
                and tokens[step + 1].kind == "name"
            ):
                if step + 2 < len(tokens) and tokens[step + 2].text == "(":
                    break  # a method called on the path read so far
                path.append(tokens[step + 1].text)
                step += 2
            elif tokens[step].text in ("[", "[?"):
                closing = closing_bracket(tokens, step)
                inside = tokens[step + 1 : closing]
                literal = len(inside) == 1 and inside[0].kind == "string"
                path.append(_unquote(inside[0].text) if literal else ANY_KEY)
                step = closing + 1
            else:
                break
        yield tuple(path)


def _unquote(literal: str) -> str:
    body = literal.lstrip("rRbB")
    quote = 3 if body[:3] in ("'''", '"""') else 1
    return body[quote:-quote]


_KINDS = {str: "a string", bool: "true or false", int: "a number", float: "a number"}


class AnyKeys:
    """A map whose keys are not known in advance (environment variables): any name is allowed."""


def unknown_variable(path: tuple[str, ...], allowed: Mapping[str, Any]) -> str | None:
    """Why `path` is not a variable in `allowed` (a tree shaped like the context), or None."""
    node: Any = allowed
    for depth, segment in enumerate(path):
        if isinstance(node, AnyKeys):
            return None
        if isinstance(node, list):
            return None if segment == ANY_KEY else _unknown(path, depth, "it is a list")
        if not isinstance(node, Mapping):
            kind = _KINDS.get(type(node), "a value")
            return _unknown(path, depth, f"{_text(path[:depth])} is {kind}, with no fields")
        if segment == ANY_KEY:
            shapes = list(node.values())
            if not shapes or any(shape != shapes[0] for shape in shapes):
                return None  # an index into a map of differently shaped values: not checked
            node = shapes[0]
            continue
        if segment not in node:
            import difflib  # only a rejected name needs a suggestion

            close = difflib.get_close_matches(segment, [str(key) for key in node], n=1)
            hint = f"did you mean {_text((*path[:depth], close[0]))}?" if close else None
            return _unknown(path, depth, hint)
        node = node[segment]
    return None


def _unknown(path: tuple[str, ...], depth: int, hint: str | None) -> str:
    name = _text(path[: depth + 1])
    return f"unknown variable {name}" + (f" ({hint})" if hint else "")


def _text(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(f".{ANY_KEY}", ANY_KEY)


def first_unknown(expression: str, allowed: Mapping[str, Any]) -> str | None:
    """The problem with the first variable in `expression` that `allowed` lacks, or None."""
    for path in variable_paths(expression):
        problem = unknown_variable(path, allowed)
        if problem:
            return problem
    return None


# The functions and methods the CEL extension evaluates (common-expression-language 0.10): a
# call of any other name fails on every run, so a site rule calling one is refused at load.
CEL_FUNCTIONS = frozenset(
    ("size", "has", "type", "dyn", "int", "uint", "double", "string", "bytes", "timestamp", "duration")
    + ("contains", "startsWith", "endsWith", "matches", "all", "exists", "exists_one", "existsOne")
    + ("map", "filter", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear")
    + ("getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds")
)


def unknown_function(expression: str, known: AbstractSet[str]) -> str | None:
    """The problem with the first function or method `expression` calls that is not `known`, or None."""
    tokens = tokenize(expression)
    for at, token in enumerate(tokens[:-1]):
        if token.kind != "name" or tokens[at + 1].text != "(" or token.text in known:
            continue
        import difflib  # only a rejected name needs a suggestion

        close = difflib.get_close_matches(token.text, sorted(known), n=1)
        return f"unknown function {token.text}" + (f" (did you mean {close[0]}?)" if close else "")
    return None


def reads_missing(expression: str, values: Mapping[str, Any]) -> bool:
    """Whether `expression` reads a fact that is null or absent in `values`."""
    for path in variable_paths(expression):
        node: Any = values
        for segment in path:
            if segment == ANY_KEY or isinstance(node, list):
                break  # which element is read is decided at run time
            if not isinstance(node, Mapping) or node.get(segment) is None:
                return True
            node = node[segment]
    return False
