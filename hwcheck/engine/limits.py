"""Bounds on what a rule expression may cost, checked when a site file is loaded.

The CEL extension has no cost limit and no timeout, holds the GIL while it evaluates
and ignores signals, so a slow expression cannot be interrupted: what would be slow
is refused before it runs. Measured on the extension (common-expression-language
0.10): `map` and `filter` copy their result on every element (4,000 elements take
2.2 s, 16,000 take 22 s); comprehensions nested five deep over ten-element lists take
0.5 s and six deep 10 s; `matches` compiles its pattern on every call (`\\w{300}` takes
0.3 s); `1 + 1 + ...` with 30,000 terms overflows the stack and kills the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from hwcheck.base.numbers import MAX_DIGITS, whole_or_none
from hwcheck.engine.names import Token, closing_bracket, tokenize

# The longest shipped expression is 465 characters; 1,000 also keeps operator chains
# 20x below the depth (~30,000 terms) at which the extension's stack overflows.
MAX_EXPRESSION_CHARS = 1000
# Comprehensions (all, exists, exists_one, map, filter) one after another in an expression.
MAX_COMPREHENSIONS = 4
# Elements one comprehension may iterate: `map` over 1,000 elements takes ~0.15 s.
MAX_ITERATED = 1000
# `matches` calls in an expression, and a pattern's length times its repetition counts.
MAX_MATCHES = 2
MAX_PATTERN_WEIGHT = 512
# Elements (list items, map entries, string characters / 64) a derived value may hold:
# derive entries read each other, so `derived.a + derived.a` could double at every step.
MAX_DERIVED_SIZE = 10_000
# Rules and derive entries in one site file (compiling and checking each costs ~0.2 ms).
MAX_SITE_ENTRIES = 1000

COMPREHENSIONS = frozenset(("all", "exists", "exists_one", "existsOne", "map", "filter"))
_MAY_ITERATE = re.compile(r"\.\s*(?:all|exists|exists_one|existsOne|map|filter)\s*\(")
_REPEAT = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")


def cost_problem(expression: str) -> str | None:
    """Why `expression` could take too long to evaluate, or None."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        return f"the expression is {len(expression)} characters long (limit {MAX_EXPRESSION_CHARS})"
    tokens = tokenize(expression)
    comprehensions = [at for at in range(len(tokens)) if _is_comprehension(tokens, at)]
    for at in comprehensions:
        inside = range(at + 1, closing_bracket(tokens, at + 1))
        nested = next((i for i in inside if i in comprehensions), None)
        if nested is not None:
            return (
                f".{tokens[nested].text}() inside .{tokens[at].text}(): nested comprehensions "
                "multiply their cost (limit: one level)"
            )
        if _receiver(tokens, at - 1) is None:
            return (
                f".{tokens[at].text}() iterates a computed value: iterate a variable or a "
                "list literal (a concatenation could grow past the limit of "
                f"{MAX_ITERATED} elements)"
            )
    if len(comprehensions) > MAX_COMPREHENSIONS:
        return f"{len(comprehensions)} comprehensions (limit {MAX_COMPREHENSIONS} in one expression)"
    matches = [at for at, token in enumerate(tokens) if token.text == "matches" and _called(tokens, at)]
    if len(matches) > MAX_MATCHES:
        return f"{len(matches)} matches() calls (limit {MAX_MATCHES} in one expression)"
    for at in matches:
        if any(start < at < closing_bracket(tokens, start + 1) for start in comprehensions):
            return "matches() inside a comprehension compiles its pattern once per element (not allowed)"
        closing = closing_bracket(tokens, at + 1)
        pattern = tokens[closing - 1] if closing - 1 > at + 1 else None
        if pattern is None or pattern.kind != "string" or tokens[closing - 2].text not in ("(", ","):
            return "matches() needs its pattern as a string literal (its cost is checked when loading)"
        weight = _pattern_weight(pattern.text)
        if weight > MAX_PATTERN_WEIGHT:
            return (
                f"the pattern {pattern.text} is too costly to compile (length x repetition counts "
                f"= {weight}, limit {MAX_PATTERN_WEIGHT})"
            )
    return None


def _called(tokens: list[Token], at: int) -> bool:
    return at + 1 < len(tokens) and tokens[at + 1].text == "("


def _is_comprehension(tokens: list[Token], at: int) -> bool:
    return (
        tokens[at].kind == "name"
        and tokens[at].text in COMPREHENSIONS
        and at >= 1
        and tokens[at - 1].text in (".", ".?")
        and _called(tokens, at)
    )


def _opening(tokens: list[Token], closing: int) -> int:
    """The index of the bracket that tokens[closing] closes (-1 when unbalanced)."""
    depth = 0
    for at in range(closing, -1, -1):
        if tokens[at].text in (")", "]", "}"):
            depth += 1
        elif tokens[at].text in ("(", "[", "[?", "{"):
            depth -= 1
            if depth == 0:
                return at
    return -1


def _receiver(tokens: list[Token], dot: int) -> tuple[str, ...] | None:
    """The variable path a comprehension's receiver (ending before tokens[dot]) iterates.

    () for a literal list or map, whose size the expression's length bounds; None for
    anything computed (a call, a parenthesised group, an index chosen at run time).
    """
    at = dot - 1
    path: list[str] = []
    while at >= 0:
        token = tokens[at]
        if token.text == ")":
            opening = _opening(tokens, at)
            if opening >= 2 and _is_comprehension(tokens, opening - 1):
                at = opening - 3  # a comprehension's result is no longer than its receiver
                path = []
                continue
            return None
        if token.text in ("]", "}"):
            opening = _opening(tokens, at)
            before = tokens[opening - 1] if opening >= 1 else None
            indexes = before is not None and (
                (before.kind == "name" and before.text != "in") or before.text in (")", "]")
            )
            if token.text == "]" and indexes:
                inside = tokens[opening + 1 : at]
                if len(inside) != 1 or inside[0].kind != "string":
                    return None
                path.insert(0, inside[0].text.strip("'\""))
                at = opening - 1
                continue
            return () if opening >= 0 and not indexes else None
        if token.kind == "name":
            path.insert(0, token.text)
            if at >= 1 and tokens[at - 1].text in (".", ".?"):
                at -= 2
                continue
            return tuple(path)
        return None
    return None


def _pattern_weight(literal: str) -> int:
    weight = len(literal)
    for match in _REPEAT.finditer(literal):
        low, high = whole_or_none(match.group(1)), whole_or_none(match.group(2) or "0")
        if low is None or high is None:
            return 10**MAX_DIGITS  # a count too long to read is too costly by far
        weight *= max(low, high, 1)
    return weight


@cache
def iterated_paths(expression: str) -> tuple[tuple[str, ...], ...]:
    """The variable paths the comprehensions in `expression` iterate (checked before it runs)."""
    if not _MAY_ITERATE.search(expression):
        return ()
    tokens = tokenize(expression)
    paths = (_receiver(tokens, at - 1) for at in range(len(tokens)) if _is_comprehension(tokens, at))
    return tuple(path for path in paths if path)


def too_many_elements(expression: str, values: Mapping[str, Any]) -> str | None:
    """Why `expression` may not run over `values`: a variable it iterates is too long, or None."""
    for path in iterated_paths(expression):
        node: Any = values
        for segment in path:
            node = node.get(segment) if isinstance(node, Mapping) else None
        if isinstance(node, (list, tuple, Mapping)) and len(node) > MAX_ITERATED:
            name = ".".join(path)
            return f"it iterates {name}, which has {len(node)} elements (limit {MAX_ITERATED})"
    return None


def oversized(value: Any) -> bool:
    """Whether a derived value holds more than MAX_DERIVED_SIZE elements."""
    budget = MAX_DERIVED_SIZE
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, (str, bytes)):
            budget -= len(item) // 64
        elif isinstance(item, (list, tuple)):
            budget -= len(item)
            pending.extend(item)
        elif isinstance(item, Mapping):
            budget -= len(item)
            pending.extend(item.values())
        if budget < 0:
            return True
    return False
