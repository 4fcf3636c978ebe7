"""The parser's constant folding per integer width, as TVM 0.27's const_fold.h decides it:
remainders fold on int32 / int64 only (and floormod of two unsigned constants), so a narrow
`0 % x` keeps the division that traps when x is 0; divisions and + - * fold on every width,
to the wrapped value."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.interp import run
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic, fold
from tirc.ir.expr import IntImm, Var
from tirc.text import parse, print_module

NARROW = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]


def _dtype(name: str) -> dt.DataType:
    return dt.parse_dtype(name)


def _is_const(expr: object, value: int, dtype: dt.DataType) -> bool:
    return isinstance(expr, IntImm) and expr.value == value and expr.dtype == dtype


@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("op", ["truncmod", "floormod"])
def test_a_narrow_remainder_keeps_its_division(name: str, op: str) -> None:
    kind = _dtype(name)
    x = Var("x", kind)
    zero, one = IntImm(0, kind), IntImm(1, kind)
    for a, b in ((zero, x), (x, one)):
        assert isinstance(arithmetic(op, a, b), (E.Mod, E.FloorMod)), (op, a, b)


@pytest.mark.parametrize("name", ["int32", "int64"])
def test_an_index_remainder_folds(name: str) -> None:
    kind = _dtype(name)
    x = Var("x", kind)
    assert _is_const(arithmetic("floormod", IntImm(0, kind), x), 0, kind)
    assert _is_const(arithmetic("truncmod", x, IntImm(1, kind)), 0, kind)
    assert _is_const(arithmetic("floormod", IntImm(-7, kind), IntImm(2, kind)), 1, kind)
    assert _is_const(arithmetic("truncmod", IntImm(-7, kind), IntImm(2, kind)), -1, kind)


def test_remainders_of_constants_fold_only_where_tvm_folds_them() -> None:
    int8, uint8 = _dtype("int8"), _dtype("uint8")
    assert isinstance(arithmetic("floormod", IntImm(7, int8), IntImm(3, int8)), E.FloorMod)
    assert isinstance(arithmetic("truncmod", IntImm(7, uint8), IntImm(3, uint8)), E.Mod)
    assert _is_const(arithmetic("floormod", IntImm(200, uint8), IntImm(7, uint8)), 4, uint8)


@pytest.mark.parametrize(
    "op, a, b, want",
    [
        ("+", 127, 1, -128),
        ("-", -128, 1, 127),
        ("*", 127, 2, -2),
        ("floordiv", -128, -1, -128),
        ("truncdiv", -128, -1, -128),
        ("floordiv", -7, 2, -4),
        ("truncdiv", -7, 2, -3),
    ],
)
def test_int8_constants_fold_to_the_wrapped_value(op: str, a: int, b: int, want: int) -> None:
    int8 = _dtype("int8")
    assert _is_const(arithmetic(op, IntImm(a, int8), IntImm(b, int8)), want, int8)


def test_uint8_constants_wrap() -> None:
    uint8 = _dtype("uint8")
    assert _is_const(arithmetic("+", IntImm(255, uint8), IntImm(1, uint8)), 0, uint8)
    assert _is_const(arithmetic("*", IntImm(255, uint8), IntImm(2, uint8)), 254, uint8)


def test_fold_leaves_a_constant_zero_divisor() -> None:
    """The simplifier folds through `fold`: `x // 0` stays for the program to trap, where the
    parser reports it."""
    int8 = _dtype("int8")
    assert fold(E.FloorDiv(IntImm(4, int8), IntImm(0, int8))) is None
    assert fold(E.Mod(IntImm(0, int8), Var("x", int8))) is None
    assert _is_const(fold(E.FloorDiv(IntImm(0, int8), Var("x", int8))), 0, int8)


PROGRAM = """
@T.prim_func
def main(x: T.int8, B: T.Buffer((2,), "int8")):
    B[0] = T.int8(0) % x
    B[1] = T.int8(7) % T.int8(3)
"""


def test_a_narrow_remainder_prints_as_written_and_still_traps() -> None:
    module = parse(PROGRAM)
    text = print_module(module)
    assert "B[0] = T.int8(0) % x" in text and "B[1] = T.int8(7) % T.int8(3)" in text
    func = module["main"]
    out = np.zeros(2, dtype=np.int8)
    run(func, {"x": 3, "B": out}, module=module)
    assert out.tolist() == [0, 1]
    with pytest.raises(DiagnosticError, match="modulo by zero"):
        run(func, {"x": 0, "B": np.zeros(2, dtype=np.int8)}, module=module)
