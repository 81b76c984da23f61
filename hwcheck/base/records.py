"""NamedTuple without importing typing: the same class syntax, built by collections.namedtuple.

Importing typing costs doctor ~2.5 ms a run, and typing.NamedTuple compiles every field's
annotation besides; doctor starts in 4x a bare interpreter only without either. A class
written `class Finding(NamedTuple)` with this NamedTuple is what typing's would make: a
collections.namedtuple with the fields in annotation order, their defaults, and the
class body's methods, properties and docstring. Type checkers see typing.NamedTuple.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # What a class body may not define, as typing.NamedTuple refuses it too.
    _RESERVED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make"}
        | {"_replace", "_asdict", "_source"}
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleBuilder(type):
        """Turns a class statement deriving from NamedTuple into a namedtuple class."""

        def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
            if not bases:
                return super().__new__(cls, name, bases, namespace)  # NamedTuple itself
            annotations = dict(namespace.get("__annotations__", {}))
            fields = list(annotations)
            defaults = [namespace[field] for field in fields if field in namespace]
            for before, after in zip(fields, fields[1:], strict=False):
                if before in namespace and after not in namespace:
                    raise TypeError(
                        f"Non-default namedtuple field {after} cannot follow default field {before}"
                    )
            made = namedtuple(name, fields, defaults=defaults, module=str(namespace["__module__"]))
            made.__annotations__ = made.__new__.__annotations__ = annotations
            for key, value in namespace.items():
                if key in _RESERVED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in fields:
                    setattr(made, key, value)
            return made

    class NamedTuple(metaclass=_NamedTupleBuilder):
        """Derive from this, as from typing.NamedTuple."""
