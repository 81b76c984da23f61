"""The literal module-level assignments of a Python file, read from its syntax tree, never run.

TensorFlow's build_info.py and PyTorch's version.py say how each framework was built;
running them would run whatever they hold. compile() gives the syntax tree (the `_ast`
node types that the `ast` module re-exports), and `literal` reads a value exactly as
ast.literal_eval does, without importing `ast`, which costs doctor ~2.5 ms a run.
Building a syntax tree at all costs ~3 ms more (the node types are made on first use), so
what a file held is remembered in the private cache, named by the file's signature.
"""

from __future__ import annotations

import math
import os

from hwcheck.base.inputs import read_head
from hwcheck.base.tables import cache_key, cached_document, file_signature, store_document

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# build_info.py and version.py are a few kilobytes; a larger file is cut, and then fails to parse.
SOURCE_BYTES = 256 * 1024
# Their assignments are one line each, the longest (TF's build_info) a few hundred characters.
LINE_BYTES = 4096


def module_constants(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The literal module-level assignments of the Python file `path`.

    `collections.OrderedDict([...])` and `dict(...)` of literals count as literals, since
    TensorFlow writes its build_info that way. Raises OSError or SyntaxError/ValueError.
    Constants JSON holds exactly (no tuple, set, bytes or complex) are remembered for a
    file whose signature (base/tables.py) names its bytes.
    """
    name = os.fspath(path)
    signature = file_signature(name)
    key = cache_key("constants", os.fsencode(name), signature.encode()) if signature else None
    if key is not None:
        remembered = cached_document(key)
        if remembered is not None:
            return remembered
    constants = _read_constants(name)
    if key is not None and _exact_in_json(constants):
        store_document(key, constants)
    return constants


def _read_constants(name: str) -> dict[str, Any]:
    source = read_head(name, SOURCE_BYTES)
    try:
        body = _statements(source, name)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        # An expression nested too deeply for the parser (`x = ----...1`, `1+1+...`) fails the
        # whole file with MemoryError or RecursionError: the one-line assignments around it
        # are read each on its own, so one hostile line costs its own name only.
        body = _line_statements(source, name)
        if not body:
            if isinstance(error, (SyntaxError, ValueError)):
                raise
            raise ValueError(f"an expression nested too deeply to parse ({type(error).__name__})") from None
    return _constants(body)


def _statements(source: bytes, name: str) -> list[Any]:
    import _ast  # made on first use: ~3 ms that a remembered file never pays

    tree = compile(source, name, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    assert isinstance(tree, _ast.Module)  # what compiling a file's source to its tree gives
    return list(tree.body)


def _line_statements(source: bytes, name: str) -> list[Any]:
    """The statements of each line of `source` that parses alone; longer lines than LINE_BYTES are skipped."""
    body = []
    for line in source.splitlines():
        if len(line) > LINE_BYTES or not line[:1].isalpha() and not line.startswith(b"_"):
            continue  # indented, a comment, blank, or too long for a version or a build setting
        try:
            body.extend(_statements(line, name))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
    return body


def _constants(body: list[Any]) -> dict[str, Any]:
    import _ast

    constants: dict[str, Any] = {}
    for node in body:
        if isinstance(node, _ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, _ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, _ast.Name):
            continue
        if (
            isinstance(value, _ast.Call)
            and _called_name(value.func) in ("OrderedDict", "dict")
            and len(value.args) == 1
            and not value.keywords
        ):
            value = value.args[0]
        try:
            found = literal(value)
        except (ValueError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(found, list) and target.id == "build_info":
            found = dict(found)
        constants[target.id] = found
    return constants


def literal(node: Any) -> Any:
    """The value of an expression node that is a literal, as ast.literal_eval reads it.

    Constants, tuples, lists, sets, dicts and `set()` of literals, a number with a sign,
    and a real number plus or minus an imaginary one; anything else is a ValueError (a
    TypeError for an unhashable set member or dict key).
    """
    import _ast

    if isinstance(node, _ast.Constant):
        return node.value
    if isinstance(node, _ast.Tuple):
        return tuple(literal(item) for item in node.elts)
    if isinstance(node, _ast.List):
        return [literal(item) for item in node.elts]
    if isinstance(node, _ast.Set):
        return {literal(item) for item in node.elts}
    if isinstance(node, _ast.Call) and isinstance(node.func, _ast.Name) and node.func.id == "set":
        if not node.args and not node.keywords:
            return set()
    if isinstance(node, _ast.Dict):
        # A None key is a `**mapping` unpacking, which is not a literal.
        if len(node.keys) != len(node.values) or any(key is None for key in node.keys):
            raise ValueError(f"malformed node or string: {node!r}")
        return dict(zip(map(literal, node.keys), map(literal, node.values), strict=True))
    if isinstance(node, _ast.BinOp) and isinstance(node.op, (_ast.Add, _ast.Sub)):
        left, right = _signed_number(node.left), _number(node.right)
        if isinstance(left, (int, float)) and isinstance(right, complex):
            return left + right if isinstance(node.op, _ast.Add) else left - right
    return _signed_number(node)


def _signed_number(node: Any) -> Any:
    import _ast

    if isinstance(node, _ast.UnaryOp) and isinstance(node.op, (_ast.UAdd, _ast.USub)):
        operand = _number(node.operand)
        return +operand if isinstance(node.op, _ast.UAdd) else -operand
    return _number(node)


def _number(node: Any) -> Any:
    import _ast

    # bool is an int subclass, yet not a number here: literal_eval refuses -True too.
    if isinstance(node, _ast.Constant) and type(node.value) in (int, float, complex):
        return node.value
    raise ValueError(f"malformed node or string: {node!r}")


def _exact_in_json(value: Any, depth: int = 0) -> bool:
    """Whether JSON gives `value` back as it is: a tuple would come back a list, 1j not at all."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 32:
        return False
    if isinstance(value, list):
        return all(_exact_in_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _exact_in_json(v, depth + 1) for k, v in value.items())
    return False


def _called_name(func: Any) -> str | None:
    return getattr(func, "id", None) or getattr(func, "attr", None)
