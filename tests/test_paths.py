"""base.inputs.plain_path and joined spell a path exactly as pathlib does, without importing it."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwcheck.base.inputs import joined, plain_path

# Paths made of the pieces that pathlib spells differently from the text: empty parts,
# ".", "..", runs of slashes at the start, in the middle and at the end.
pieces = st.sampled_from(["", ".", "..", "a", "b.toml", " ", "~", "x.dist-info"])
paths = st.tuples(st.sampled_from(["", "/", "//", "///", "./", "../"]), st.lists(pieces, max_size=5)).map(
    lambda parts: parts[0] + "/".join(parts[1])
)


@settings(max_examples=400, deadline=None)
@given(paths)
def test_a_path_is_spelled_as_pathlib_spells_it(text):
    assert plain_path(text) == str(PurePosixPath(text))


@settings(max_examples=300, deadline=None)
@given(paths, st.lists(paths, min_size=1, max_size=3))
def test_joined_names_what_the_slash_operator_names(first, rest):
    expected = PurePosixPath(first)
    for part in rest:
        expected = expected / part
    assert joined(first, *rest) == str(expected)


@pytest.mark.parametrize("text", ["/usr/lib/", "/usr//local/./cuda", "//net/share", "./x/", "", "."])
def test_a_path_object_is_taken_too(text):
    assert plain_path(Path(text)) == str(Path(text)) == plain_path(text)
