"""base.records.NamedTuple: the class typing.NamedTuple makes, without importing typing."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from conftest import ROOT
from hwcheck.base import records


class Cheap(records.NamedTuple):
    """A record."""

    name: str
    count: int = 0
    note: str | None = None

    @property
    def shout(self) -> str:
        """The name in capitals."""
        return self.name.upper()

    def doubled(self) -> int:
        """Twice the count."""
        return self.count * 2


class Typed(typing.NamedTuple):
    """A record."""

    name: str
    count: int = 0
    note: str | None = None


def test_it_behaves_as_typing_makes_it():
    cheap, typed = Cheap("gpu", 2), Typed("gpu", 2)
    assert tuple(cheap) == tuple(typed) == ("gpu", 2, None)
    assert Cheap._fields == Typed._fields
    assert Cheap._field_defaults == Typed._field_defaults
    assert cheap._asdict() == typed._asdict()
    assert cheap._replace(note="x") == ("gpu", 2, "x")
    assert Cheap.__doc__ == Typed.__doc__ == "A record."
    assert (Cheap.__module__, Cheap.__qualname__) == (__name__, "Cheap")
    assert list(Cheap.__annotations__) == ["name", "count", "note"]
    assert (cheap.shout, cheap.doubled()) == ("GPU", 4)
    assert isinstance(cheap, tuple)
    assert pickle.loads(pickle.dumps(cheap)) == cheap
    with pytest.raises(TypeError):
        Cheap()  # name has no default


def test_a_field_without_a_default_after_one_with_is_refused():
    with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow default field a"):

        class Wrong(records.NamedTuple):
            a: int = 1
            b: int


def test_a_namedtuple_attribute_cannot_be_overwritten():
    with pytest.raises(AttributeError, match="_replace"):

        class Wrong(records.NamedTuple):
            a: int

            def _replace(self) -> None:
                pass


def test_it_does_not_import_typing():
    code = "import sys\nfrom hwcheck.base.records import NamedTuple\nprint('typing' in sys.modules)\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout == "False\n"
