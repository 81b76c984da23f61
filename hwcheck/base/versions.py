"""Dotted version strings (drivers, CUDA, cuDNN, TensorFlow) compared as numbers."""

from __future__ import annotations

import re

from hwcheck.base.numbers import whole_or_none

# ASCII digits only: "１２.４" is no version a loader or pip would read.
_LEADING_NUMBERS = re.compile(r"[0-9]+(?:\.[0-9]+)*")
# The longest version a facts file holds (the facts schema's `version`): a version found
# longer on the machine (a long local label, a file name or header of hostile digits) is
# recorded cut to this by recorded_version.
MAX_VERSION = 64
_SEPARATORS = ".+-_"


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """The leading numeric parts of `text` ("2.17.0rc1" -> (2, 17, 0)); None when there are none."""
    if not isinstance(text, str):
        return None
    match = _LEADING_NUMBERS.search(text)
    if not match:
        return None
    parts = [whole_or_none(part) for part in match.group().split(".")]
    # A part too long to be a version number makes the whole version unknown.
    numbers = tuple(part for part in parts if part is not None)
    return numbers if len(numbers) == len(parts) else None


def recorded_version(text: str | None) -> str | None:
    """`text` as a probe records a version: at most MAX_VERSION characters, else cut or unknown.

    A longer version is cut after its last whole part that fits ("2.5.1+cu124.<long label>"
    -> "2.5.1+cu124"), so that what stays reads as the start of what was found; when even
    its leading numbers do not fit ("9.1111...1") it is unknown (None), never a different number.
    """
    if not isinstance(text, str) or len(text) <= MAX_VERSION:
        return text
    head = text[: MAX_VERSION + 1]
    cut = max(head.rfind(separator) for separator in _SEPARATORS)
    kept = head[:cut].rstrip(_SEPARATORS) if cut > 0 else ""
    numbers = _LEADING_NUMBERS.search(text[: MAX_VERSION * 2])
    if not kept or numbers is None or not kept[numbers.start() :].startswith(numbers.group()):
        return None
    return kept


def version_key(text: str | None) -> tuple[int, ...]:
    """parse_version as a sort key: an unknown version is () and sorts before every known one."""
    return parse_version(text) or ()


def version_less(left: str | None, right: str | None) -> bool:
    """Whether `left` is an older version than `right`; False when either is unknown."""
    parsed_left, parsed_right = parse_version(left), parse_version(right)
    if parsed_left is None or parsed_right is None:
        return False
    width = max(len(parsed_left), len(parsed_right))
    return _padded(parsed_left, width) < _padded(parsed_right, width)


def version_at_least(left: str | None, right: str | None) -> bool:
    """Whether `left` is `right` or newer; False when either is unknown."""
    if parse_version(left) is None or parse_version(right) is None:
        return False
    return not version_less(left, right)


def major_minor(text: str | None) -> str | None:
    """The "major.minor" of a version ("12.5.1" -> "12.5"), None when unknown."""
    parsed = parse_version(text)
    if parsed is None:
        return None
    return ".".join(str(part) for part in _padded(parsed, 2)[:2])


def major(text: str | None) -> int:
    """The major version number, 0 when unknown (so rules can compare without null checks)."""
    parsed = parse_version(text)
    return parsed[0] if parsed else 0


def _padded(parts: tuple[int, ...], width: int) -> tuple[int, ...]:
    return parts + (0,) * (width - len(parts))
