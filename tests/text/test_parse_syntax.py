"""The grammar: Python's expression precedence, literals, layout, and the syntax tree."""

from __future__ import annotations

import pytest

from tirc.diagnostics import DiagnosticError, Source
from tirc.text.syntax import parse_syntax
from tirc.text.syntax import tree as t


def expression(text: str) -> t.Expr:
    module = parse_syntax(Source("e", f"x = {text}\n"))
    statement = module.body[0]
    assert isinstance(statement, t.Assign)
    return statement.value


def shape(node: object) -> object:
    """A compact nested form of an expression tree, for comparing structure."""
    if isinstance(node, t.Name):
        return node.id
    if isinstance(node, t.Constant):
        return node.value
    if isinstance(node, t.BinOp):
        return (node.op, shape(node.left), shape(node.right))
    if isinstance(node, t.BoolOp):
        return (node.op, shape(node.left), shape(node.right))
    if isinstance(node, t.UnaryOp):
        return (node.op, shape(node.operand))
    if isinstance(node, t.Compare):
        return ("cmp", node.ops, tuple(shape(o) for o in node.operands))
    if isinstance(node, t.Tuple):
        return ("tuple",) + tuple(shape(i) for i in node.items)
    if isinstance(node, t.List):
        return ["list"] + [shape(i) for i in node.items]
    if isinstance(node, t.Call):
        return (
            "call",
            shape(node.func),
            tuple(shape(a) for a in node.args),
            tuple((k.name, shape(k.value)) for k in node.keywords),
        )
    if isinstance(node, t.Attribute):
        return (shape(node.value), node.attr)
    if isinstance(node, t.Subscript):
        return ("[]", shape(node.value), tuple(shape(i) for i in node.indices), node.is_tuple)
    if isinstance(node, t.Slice):
        return ("slice", shape(node.lower), shape(node.upper), shape(node.step))
    if isinstance(node, t.IfExp):
        return ("if", shape(node.test), shape(node.body), shape(node.orelse))
    if isinstance(node, t.Lambda):
        return ("lambda", node.params, shape(node.body))
    if node is None:
        return None
    raise AssertionError(type(node))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + b * c", ("+", "a", ("*", "b", "c"))),
        ("a - b - c", ("-", ("-", "a", "b"), "c")),
        ("a // b % c", ("%", ("//", "a", "b"), "c")),
        ("-a ** b", ("-", ("**", "a", "b"))),
        ("a ** b ** c", ("**", "a", ("**", "b", "c"))),
        ("a ** -b", ("**", "a", ("-", "b"))),
        ("a << 1 + 2", ("<<", "a", ("+", 1, 2))),
        ("a & b | c ^ d", ("|", ("&", "a", "b"), ("^", "c", "d"))),
        ("~a + b", ("+", ("~", "a"), "b")),
        ("a < b <= c", ("cmp", ("<", "<="), ("a", "b", "c"))),
        ("a + 1 == b", ("cmp", ("==",), (("+", "a", 1), "b"))),
        ("not a == b", ("not", ("cmp", ("==",), ("a", "b")))),
        ("a or b and not c", ("or", "a", ("and", "b", ("not", "c")))),
        ("a and b or c and d", ("or", ("and", "a", "b"), ("and", "c", "d"))),
        ("(a + b) * c", ("*", ("+", "a", "b"), "c")),
        ("a if b else c", ("if", "b", "a", "c")),
        ("lambda i, j: (j, i)", ("lambda", ("i", "j"), ("tuple", "j", "i"))),
        ("f(a, b=1)(c)", ("call", ("call", "f", ("a",), (("b", 1),)), ("c",), ())),
        (
            "A[i, 0:4, ::2]",
            ("[]", "A", ("i", ("slice", 0, 4, None), ("slice", None, None, 2)), True),
        ),
        ("A[i]", ("[]", "A", ("i",), False)),
        ("A[i,]", ("[]", "A", ("i",), True)),
        ("T.axis.spatial", (("T", "axis"), "spatial")),
        ("(1,)", ("tuple", 1)),
        ("()", ("tuple",)),
        ("[1, 2,]", ["list", 1, 2]),
        ("- - a", ("-", ("-", "a"))),
    ],
)
def test_precedence_and_shapes(text: str, expected: object) -> None:
    assert shape(expression(text)) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0), ("42", 42), ("1_000", 1000), ("0x1F", 31), ("1.5", 1.5), ("1e-3", 0.001),
        ("2.", 2.0), (".5", 0.5), ("1.5E+2", 150.0), ("True", True), ("False", False), ("None", None),  # noqa: E501
        ('"a\\tb"', "a\tb"), ("'it''s'", "its"), ('"é\\n"', "é\n"), ('r"\\d"', "\\d"),
        ('"\\x41\\u00e9"', "Aé"), ('"""long\nstring"""', "long\nstring"), ('"a" "b"', "ab"), ('""', ""),  # noqa: E501
    ],
)  # fmt: skip
def test_literals(text: str, value: object) -> None:
    node = expression(text)
    assert isinstance(node, t.Constant) and node.value == value and type(node.value) is type(value)


def test_layout_comments_continuations_and_semicolons() -> None:
    text = (
        "# a header comment\n\n"
        "x = (1 +\n     2)  # a comment\n"
        "y = 3 + \\\n    4\n"
        "a = 1; b = 2;\n"
        "if x:\n\n    # a comment line inside\n    pass\n"
        "else:\n    pass\n"
    )
    module = parse_syntax(Source("l", text))
    assert [type(s).__name__ for s in module.body] == ["Assign", "Assign", "Assign", "Assign", "If"]


def test_tabs_and_missing_final_newline() -> None:
    module = parse_syntax(Source("tabs", "if x:\n\tpass\nelse:\n\tpass"))
    assert isinstance(module.body[0], t.If) and module.body[0].orelse


def test_statements() -> None:
    text = (
        "@T.prim_func(private=True)\n"
        "def f(a: T.handle, n: T.int32 = 3) -> T.int32:\n"
        "    x: T.let[T.int32] = 1\n"
        "    x += 2\n"
        "    with T.sblock('b') as s, T.init():\n        pass\n"
        "    for i, j in T.grid(2, 3):\n        continue\n"
        "    while x < 3:\n        break\n"
        "    if a:\n        pass\n    elif b:\n        pass\n    else:\n        return 1\n"
        "    assert x, 'message'\n"
        "from tvm.script import tirx as T\nimport tvm\n"
        "class Module:\n    pass\n"
    )
    module = parse_syntax(Source("s", text))
    func, *rest = module.body
    assert isinstance(func, t.FunctionDef) and func.name == "f" and len(func.decorators) == 1
    assert [p.name for p in func.params] == ["a", "n"] and func.params[1].default is not None
    kinds = [type(s).__name__ for s in func.body]
    assert kinds == ["AnnAssign", "AugAssign", "With", "For", "While", "If", "Assert"]
    assert isinstance(func.body[5], t.If) and isinstance(func.body[5].orelse[0], t.If)
    assert [type(s).__name__ for s in rest] == ["Import", "Import", "ClassDef"]
    assert rest[0].module == "tvm.script" and rest[0].names == (("tirx", "T"),)


def test_positions() -> None:
    text = "x = 1\nyy = foo(a,\n         b)\n"
    module = parse_syntax(Source("p", text))
    call = module.body[1].value
    assert isinstance(call, t.Call)
    assert text[call.start : call.end] == "foo(a,\n         b)"
    assert text[module.body[1].start : module.body[1].end].startswith("yy = foo")


def test_long_lists_are_linear() -> None:
    count = 50_000
    node = expression("[" + ", ".join("a" for _ in range(count)) + "]")
    assert isinstance(node, t.List) and len(node.items) == count


@pytest.mark.parametrize(
    "text", ["x = = 1\n", "def f(:\n", "x = (1, 2]\n", "  x = 1\n", "x = 'abc\n"]
)
def test_syntax_errors_are_diagnostics(text: str) -> None:
    with pytest.raises(DiagnosticError):
        parse_syntax(Source("bad", text))
