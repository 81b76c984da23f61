"""probes/literals.py reads a literal exactly as ast.literal_eval does, without importing ast."""

from __future__ import annotations

import _ast
import ast
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from hwcheck.probes.literals import literal, module_constants

# Sources of expressions, literal or not: what a build_info.py or version.py may hold.
numbers = st.one_of(
    st.integers(-(10**30), 10**30).map(repr),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["1j", "2.5j", "0j", "1e999", "0x1f", "1_000", "True", "False", "None", "..."]),
)
literal_atoms = st.one_of(numbers, st.text(max_size=8).map(repr), st.binary(max_size=8).map(repr))
# Not literals: names, calls, operators other than a signed number or a complex sum.
other_atoms = st.sampled_from(
    ["x", "f()", "set()", "set([])", "a.set()", "dict()", "1 + 2", "2 * 3j", "not 1", "-x"]
)
# One leaf in twenty is no literal, so that most trees are literals and some are not.
atoms = st.integers(0, 19).flatmap(lambda pick: other_atoms if pick == 0 else literal_atoms)


def _composite(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(children, max_size=4)
    containers = st.one_of(
        items.map(lambda parts: f"({', '.join(parts)},)"),
        items.map(lambda parts: f"[{', '.join(parts)}]"),
        st.lists(children, min_size=1, max_size=4).map(lambda parts: f"{{{', '.join(parts)}}}"),
        st.lists(st.tuples(children, children), max_size=3).map(
            lambda pairs: "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}"
        ),
    )
    # Signs and sums are literals only around numbers, and a ** unpacking never is: fewer of them.
    operators = st.one_of(
        st.tuples(st.sampled_from(["+", "-"]), children).map("".join),
        st.tuples(children, st.sampled_from([" + ", " - "]), children).map("".join),
        children.map(lambda inner: "{**" + inner + "}"),
    )
    return st.integers(0, 9).flatmap(lambda pick: operators if pick == 0 else containers)


expressions = st.recursive(atoms, _composite, max_leaves=12)


def _outcome(evaluate, tree):
    try:
        return ("value", repr(evaluate(tree)))
    except (ValueError, TypeError, RecursionError, MemoryError) as error:
        return ("error", type(error).__name__)


@settings(max_examples=500, deadline=None)
@given(expressions)
def test_every_expression_reads_as_literal_eval_reads_it(source):
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return
    assert _outcome(literal, tree) == _outcome(ast.literal_eval, tree), source


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("-1", -1),
        ("+2.5", 2.5),
        ("1 - 2j", 1 - 2j),
        ("-1 + 2j", -1 + 2j),
        ("set()", set()),
        ("{1: (2,)}", {1: (2,)}),
    ],
)
def test_signed_numbers_complex_sums_and_empty_sets_are_literals(source, value):
    assert literal(compile(source, "<test>", "eval", _ast.PyCF_ONLY_AST).body) == value


@pytest.mark.parametrize("source", ["-True", "1 + 2", "1j + 1", "{**x}", "set([1])", "f()"])
def test_what_literal_eval_refuses_is_refused(source):
    with pytest.raises(ValueError):
        literal(compile(source, "<test>", "eval", _ast.PyCF_ONLY_AST).body)


def test_a_module_gives_its_literal_assignments_only(tmp_path):
    path = tmp_path / "build_info.py"
    path.write_text(
        "import collections, os\n"
        "build_info = collections.OrderedDict([('cuda_version', '12.3'), ('is_cuda_build', True)])\n"
        "cuda: Optional[str] = '12.4'\n"
        "debug = False\n"
        "computed = os.getcwd()\n"
        "a = b = 1\n"
        "options = dict({'x': [1, 2]})\n"
    )
    assert module_constants(path) == {
        "build_info": {"cuda_version": "12.3", "is_cuda_build": True},
        "cuda": "12.4",
        "debug": False,
        "options": {"x": [1, 2]},
    }


def test_reading_constants_does_not_import_ast(tmp_path):
    path = tmp_path / "version.py"
    path.write_text("__version__ = '2.4.1'\n")
    code = (
        "import sys\n"
        "from hwcheck.probes.literals import module_constants\n"
        f"print(module_constants({str(path)!r}), 'ast' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout == "{'__version__': '2.4.1'} False\n"


@pytest.fixture
def compiled(monkeypatch):
    """How many files were compiled to a syntax tree (remembered constants compile none)."""
    import builtins

    from hwcheck.base import tables
    from hwcheck.probes import literals

    calls: list[str] = []

    def counted(source, filename, *args, **kwargs):
        calls.append(filename)
        return builtins.compile(source, filename, *args, **kwargs)

    monkeypatch.setattr(literals, "compile", counted, raising=False)
    # The files were written just now: a clock some seconds on lets their signature name them.
    monkeypatch.setattr(tables, "_now_ns", lambda: 2**62)
    return calls


def test_constants_are_remembered_until_the_file_changes(tmp_path, cache, compiled):
    import time

    path = tmp_path / "version.py"
    path.write_text("__version__ = '2.4.1'\ncuda = '12.4'\n")
    assert module_constants(path) == module_constants(path) == {"__version__": "2.4.1", "cuda": "12.4"}
    assert len(compiled) == 1
    time.sleep(0.05)  # past the file system's clock tick
    path.write_text("__version__ = '2.4.2'\ncuda = '12.4'\n")  # the same size
    assert module_constants(path)["__version__"] == "2.4.2"
    assert len(compiled) == 2


def test_constants_json_cannot_hold_exactly_are_read_every_time(tmp_path, cache, compiled):
    path = tmp_path / "version.py"
    path.write_text("pair = (1, 2)\n")
    assert module_constants(path) == module_constants(path) == {"pair": (1, 2)}
    assert len(compiled) == 2
