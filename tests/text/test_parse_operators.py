"""Operator precedence: the syntax tree of a chain of binary and prefix operators is the one
Python builds, node for node and position for position (Python's own parser, `ast`, is the
oracle here, in the tests only), including where the grammar is looser than Python."""

from __future__ import annotations

import ast
import random

import pytest

from tirc.diagnostics import Source
from tirc.text.syntax import parse_syntax
from tirc.text.syntax import tree as t

BINARY = ["or", "and", "<", ">", "==", ">=", "<=", "!=", "|", "^", "&", "<<", ">>"]
BINARY += ["+", "-", "*", "/", "//", "%", "**"]
PYTHON_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
    ast.BitXor: "^", ast.BitAnd: "&", ast.And: "and", ast.Or: "or", ast.Not: "not",
    ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Lt: "<", ast.Gt: ">", ast.Eq: "==",
    ast.GtE: ">=", ast.LtE: "<=", ast.NotEq: "!=",
}  # fmt: skip
PREFIX = "x = "  # every chain is the value of an assignment


def value_of(text: str) -> t.Expr:
    statement = parse_syntax(Source("e", PREFIX + text + "\n")).body[0]
    assert isinstance(statement, t.Assign)
    return statement.value


def ours(node: t.Expr) -> object:
    """(kind, operator, start, end, children), `a and b and c` flattened as Python does."""
    where = (node.start - len(PREFIX), node.end - len(PREFIX))
    if isinstance(node, t.Name):
        return ("name", node.id, *where)
    if isinstance(node, t.Constant):
        return ("constant", node.value, *where)
    if isinstance(node, t.BinOp):
        return ("binary", node.op, *where, (ours(node.left), ours(node.right)))
    if isinstance(node, t.UnaryOp):
        return ("prefix", node.op, *where, (ours(node.operand),))
    if isinstance(node, t.Compare):
        return ("compare", node.ops, *where, tuple(ours(o) for o in node.operands))
    assert isinstance(node, t.BoolOp)
    values = [node.right]
    left = node.left
    while isinstance(left, t.BoolOp) and left.op == node.op:
        values.append(left.right)
        left = left.left
    values.append(left)
    return ("bool", node.op, *where, tuple(ours(v) for v in reversed(values)))


def python(node: ast.expr) -> object:
    where = (node.col_offset - len(PREFIX), node.end_col_offset)
    where = (where[0], (where[1] or 0) - len(PREFIX))
    if isinstance(node, ast.Name):
        return ("name", node.id, *where)
    if isinstance(node, ast.Constant):
        return ("constant", node.value, *where)
    if isinstance(node, ast.BinOp):
        op = PYTHON_OPERATORS[type(node.op)]
        return ("binary", op, *where, (python(node.left), python(node.right)))
    if isinstance(node, ast.UnaryOp):
        return ("prefix", PYTHON_OPERATORS[type(node.op)], *where, (python(node.operand),))
    if isinstance(node, ast.Compare):
        ops = tuple(PYTHON_OPERATORS[type(op)] for op in node.ops)
        operands = (node.left, *node.comparators)
        return ("compare", ops, *where, tuple(python(o) for o in operands))
    assert isinstance(node, ast.BoolOp)
    op = PYTHON_OPERATORS[type(node.op)]
    return ("bool", op, *where, tuple(python(v) for v in node.values))


def random_chain(rng: random.Random) -> str:
    """Operands with prefixes where Python allows them: `-`, `+`, `~` before any operand,
    `not` at the start and after `and`, `or` or another `not`."""
    parts: list[str] = []
    for position in range(rng.randint(1, 7)):
        if position:
            parts.append(rng.choice(BINARY))
        may_not = position == 0 or parts[-1] in ("and", "or")
        while rng.random() < 0.3:
            prefix = rng.choice(["-", "+", "~", "not"] if may_not else ["-", "+", "~"])
            parts.append(prefix)
            may_not = prefix == "not"
        parts.append(rng.choice(["a", "b", "c", "1", "22"]))
    return " ".join(parts)


def test_chains_build_the_tree_python_builds() -> None:
    rng = random.Random(20251128)
    for _ in range(600):
        text = random_chain(rng)
        statement = ast.parse(PREFIX + text).body[0]
        assert isinstance(statement, ast.Assign)
        assert ours(value_of(text)) == python(statement.value), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # `not` where Python has no place for it: it reaches over every operator that binds
        # tighter than itself, as at the start of a chain
        ("a < not b < c", "a < (not (b < c))"),
        ("a * not b + c", "a * (not (b + c))"),
        ("a + not b and c", "(a + (not b)) and c"),
        ("a ** not b == c or d", "(a ** (not (b == c))) or d"),
    ],
)
def test_not_inside_a_chain(text: str, expected: str) -> None:
    def bare(value: object) -> object:  # the tree without positions
        assert isinstance(value, tuple)
        kind, op, _, _, *children = value
        return (kind, op, *(tuple(bare(c) for c in group) for group in children))

    assert bare(ours(value_of(text))) == bare(ours(value_of(expected)))
