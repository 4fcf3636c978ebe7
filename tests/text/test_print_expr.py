"""Expressions: precedence, operator vs call forms, literals in context. Expected strings are
what TVM 0.27 prints for the same IR."""

from __future__ import annotations

import pytest

from tirc.ir import dtype as dt
from tirc.ir.expr import (
    EQ,
    GE,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Sub,
    Var,
)
from tirc.text.printer import script

from .build import buffer, i32, i64

a, b, c = Var("a"), Var("b"), Var("c")
x, y = Var("x", dt.FLOAT32), Var("y", dt.FLOAT32)
p, q = Var("p", dt.BOOL), Var("q", dt.BOOL)
L = Var("L", dt.INT64)
A = buffer("A", 128)
F32 = dt.FLOAT32


def f32(value: float) -> FloatImm:
    return FloatImm(value, F32)


def call(op: str, *args: object, dtype: dt.DataType = dt.INT32) -> Call:
    return Call(dtype, op, args)


CASES: list[tuple[PrimExpr, str]] = [
    (Sub(a, Sub(b, c)), "a - (b - c)"),
    (Mul(Add(a, b), c), "(a + b) * c"),
    (Mul(a, Add(b, c)), "a * (b + c)"),
    (Add(Add(a, b), c), "a + b + c"),
    (Add(a, Add(b, c)), "a + (b + c)"),
    (Mul(a, i32(-1)), "a * -1"),
    (FloorDiv(a, b), "a // b"),
    (FloorMod(a, b), "a % b"),
    (Div(a, b), "T.Div(a, b)"),
    (Mod(a, b), "T.truncmod(a, b)"),
    (Mod(x, f32(1.5)), "T.truncmod(x, T.float32(1.5))"),  # C's fmod, as TVM's truncmod reads
    (Add(Min(a, b), Max(a, c)), "T.min(a, b) + T.max(a, c)"),
    (Select(p, a, b), "T.Select(p, a, b)"),
    (call("if_then_else", p, a, b), "T.if_then_else(p, a, b)"),
    (Cast(dt.INT32, x), 'T.Cast("int32", x)'),
    (call("shift_left", a, b), "a << b"),
    (call("shift_right", a, b), "a >> b"),
    (call("bitwise_and", a, b), "a & b"),
    (call("bitwise_or", a, b), "a | b"),
    (call("bitwise_xor", a, b), "a ^ b"),
    (call("bitwise_not", a), "~a"),
    (FloorMod(FloorDiv(Add(a, b), Sub(c, a)), i32(3)), "(a + b) // (c - a) % 3"),
    (And(p, q), "p and q"),
    (Or(p, q), "p or q"),
    (Not(p), "not p"),
    (And(p, Or(q, p)), "p and (q or p)"),
    (LT(a, b), "a < b"),
    (EQ(a, b), "a == b"),
    (NE(a, b), "a != b"),
    (GE(a, b), "a >= b"),
    (Not(LE(a, b)), "not a <= b"),
    (Not(EQ(p, q)), "not p == q"),
    (Add(call("shift_left", a, i32(2)), call("bitwise_and", b, i32(3))), "(a << 2) + (b & 3)"),
    (call("shift_left", a, Add(b, i32(1))), "a << b + 1"),
    (call("bitwise_and", a, call("bitwise_or", b, c)), "a & (b | c)"),
    (call("bitwise_or", call("bitwise_and", a, b), c), "a & b | c"),
    (Cast(dt.INT32, Add(L, i64(1))), 'T.Cast("int32", L + T.int64(1))'),
    (Div(x, y), "x / y"),
    (Add(Mul(x, y), f32(1.0)), "x * y + T.float32(1.0)"),
    (Add(call("exp", x, dtype=F32), call("sqrt", y, dtype=F32)), "T.exp(x) + T.sqrt(y)"),
    (LT(Mul(a, i32(-1)), b), "a * -1 < b"),
    (Sub(i32(0), a), "0 - a"),
    (Sub(a, a), "a - a"),
    (Min(i32(3), Var("m")), "T.min(3, m)"),
    (Not(IntImm(1, dt.BOOL)), "not T.bool(True)"),
    (call("bitwise_and", a, i32(0)), "a & 0"),
    (Cast(dt.INT32, i64(5)), 'T.Cast("int32", T.int64(5))'),
    (Max(i32(-2147483648), a), "T.max(-2147483648, a)"),
    # a comparison inside a comparison keeps its parentheses (Python would chain them)
    (EQ(LT(a, b), p), "(a < b) == p"),
    (EQ(p, LT(a, b)), "p == (a < b)"),
]

# the text's own operators would fold these, so they print in call form
FOLDING: list[tuple[PrimExpr, str]] = [
    (Add(a, i32(0)), "T.Add(a, 0)"),
    (Add(i32(0), a), "T.Add(0, a)"),
    (Add(i32(1), i32(2)), "T.Add(1, 2)"),
    (Mul(a, i32(1)), "T.Mul(a, 1)"),
    (Mul(i32(0), a), "T.Mul(0, a)"),
    (Mul(a, i32(0)), "T.Mul(a, 0)"),
    (Sub(a, i32(0)), "T.Sub(a, 0)"),
    (Div(a, i32(1)), "T.Div(a, 1)"),
    (Div(i32(0), a), "T.Div(0, a)"),
    (FloorDiv(a, i32(1)), "T.FloorDiv(a, 1)"),
    (FloorMod(a, i32(1)), "T.FloorMod(a, 1)"),
    (FloorDiv(i32(0), a), "T.FloorDiv(0, a)"),
    (FloorMod(i32(0), a), "T.FloorMod(0, a)"),
    (Mod(a, i32(1)), "T.Mod(a, 1)"),  # T.truncmod(a, 1) would read back as 0
    (Mod(i32(0), a), "T.Mod(0, a)"),
    (FloorDiv(i32(6), i32(4)), "T.FloorDiv(6, 4)"),
    (EQ(i32(1), i32(1)), "T.EQ(1, 1)"),
    (LT(i32(1), i32(2)), "T.LT(1, 2)"),
    (GE(i32(3), i32(2)), "T.GE(3, 2)"),
    (Or(p, IntImm(0, dt.BOOL)), "T.Or(p, T.bool(False))"),
    (And(p, IntImm(1, dt.BOOL)), "T.And(p, T.bool(True))"),
    (And(IntImm(1, dt.BOOL), p), "T.And(T.bool(True), p)"),
    (Add(x, f32(0.0)), "T.Add(x, T.float32(0.0))"),
    (Mul(x, f32(1.0)), "T.Mul(x, T.float32(1.0))"),
    (Div(x, f32(1.0)), "T.Div(x, T.float32(1.0))"),
    (Mul(f32(2.0), f32(3.0)), "T.Mul(T.float32(2.0), T.float32(3.0))"),
    (Mul(Sub(a, i32(0)), i32(2)), "T.Sub(a, 0) * 2"),
    (Add(Add(a, i32(0)), i32(1)), "T.Add(a, 0) + 1"),
    # TVM itself prints these as T.min / T.max, which its parser then folds
    (Min(i32(3), i32(4)), "T.Min(3, 4)"),
    (Min(a, a), "T.Min(a, a)"),
    (Max(x, f32(float("inf"))), 'T.Max(x, T.float32("inf"))'),
]

VECTORS: list[tuple[PrimExpr, str]] = [
    (BufferLoad(A, (Ramp(i32(8), i32(1), 8),)), "A[T.Ramp(8, 1, 8)]"),
    (Broadcast(f32(1.0), 8), "T.Broadcast(T.float32(1.0), 8)"),
    (Broadcast(BufferLoad(A, (i32(0),)), 4), "T.Broadcast(A[0], 4)"),
    (
        Shuffle((Var("v", dt.FLOAT32.with_lanes(4)),) * 2, tuple(map(i32, (0, 1, 4, 5)))),
        "T.Shuffle([v, v], [0, 1, 4, 5])",
    ),
    (
        call(
            "vectorlow",
            Cast(F32.with_lanes(8), BufferLoad(A, (Ramp(i32(0), i32(1), 8),))),
            dtype=F32.with_lanes(4),
        ),
        'T.vectorlow("float32x4", T.Cast("float32x8", A[T.Ramp(0, 1, 8)]))',
    ),
]

CALLS: list[tuple[PrimExpr, str]] = [
    (
        call("call_extern", StringImm("f"), Var("h", dt.HANDLE), a),
        'T.call_extern("int32", "f", h, a)',
    ),
    (call("call_extern", StringImm("g"), dtype=dt.VOID), 'T.call_extern("void", "g")'),
    (call("reinterpret", a, dtype=F32), 'T.reinterpret("float32", a)'),
    (call("type_annotation", dtype=dt.FLOAT16), 'T.type_annotation("float16")'),
    (
        call(
            "q_multiply_shift_per_axis", a, b, c, a, i32(31), IntImm(0, dt.BOOL), IntImm(1, dt.BOOL)
        ),
        "T.q_multiply_shift_per_axis(a, b, c, a, 31, T.bool(False), T.bool(True))",
    ),
    (call("tvm_storage_sync", StringImm("shared")), 'T.tvm_storage_sync("shared")'),
    (Let(c, i32(3), Add(c, i32(1))), "T.Let(c + 1, where={c: 3})"),
]


@pytest.mark.parametrize(
    ("expr", "text"),
    CASES + FOLDING + VECTORS + CALLS,
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_expression_text(expr: PrimExpr, text: str) -> None:
    assert script(expr) == text


def test_zero_dimensional_load() -> None:
    scalar = buffer("p7", dtype="int32")
    assert script(BufferLoad(scalar, ())) == "p7[()]"


def test_deep_expressions_do_not_overflow() -> None:
    expr: PrimExpr = a
    for index in range(5000):
        expr = Add(expr, i32(index + 1)) if index % 2 else Sub(expr, b)
    text = script(expr)
    assert text.startswith("a - b + 2 - b + 4")
    nested: PrimExpr = a
    for _ in range(3000):
        nested = Mul(b, Add(nested, c))
    assert script(nested).count("(") == 3000
