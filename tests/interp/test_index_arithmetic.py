"""Integer expressions over loop variables, as index arithmetic is: the interpreter skips
wrap-around and bounds checks where value ranges prove them unnecessary, and computes
loop-invariant parts outside inner loops. Random expressions check that this changes
nothing: each result equals the same expression evaluated directly with int8/int32 wrap."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.interp.build import function
from tirc import interp
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import make_buffer
from tirc.ir.dtype import DataType
from tirc.ir.stmt import BufferStore, For, ForKind, SeqStmt

Evaluate = Callable[[dict[str, int]], int]


def wrap(value: int, dtype: DataType) -> int:
    half = 1 << (dtype.bits - 1)
    return ((value + half) % (1 << dtype.bits)) - half


def floor_div(a: int, b: int) -> int:
    return a // b


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


OPERATIONS: dict[str, tuple[type, Callable[[int, int], int]]] = {
    "add": (E.Add, lambda a, b: a + b),
    "sub": (E.Sub, lambda a, b: a - b),
    "mul": (E.Mul, lambda a, b: a * b),
    "floordiv": (E.FloorDiv, floor_div),
    "floormod": (E.FloorMod, lambda a, b: a - b * floor_div(a, b)),
    "truncdiv": (E.Div, trunc_div),
    "truncmod": (E.Mod, lambda a, b: a - b * trunc_div(a, b)),
    "min": (E.Min, min),
    "max": (E.Max, max),
}


def expressions(
    variables: dict[str, E.Var], dtype: DataType
) -> st.SearchStrategy[tuple[E.PrimExpr, Evaluate]]:
    leaves = st.one_of(
        st.sampled_from(sorted(variables)).map(
            lambda name: (variables[name], lambda env, name=name: env[name])
        ),
        st.integers(-40, 40).map(lambda v: (E.IntImm(v, dtype), lambda env, v=v: v)),
    )

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        def combine(op: str, a: tuple, b: tuple) -> tuple:
            node, apply = OPERATIONS[op]
            if op in ("floordiv", "floormod", "truncdiv", "truncmod"):
                # divide by a non-zero constant, as index arithmetic does
                if not isinstance(b[0], E.IntImm) or b[0].value == 0:
                    b = (E.IntImm(7, dtype), lambda env: 7)

            def evaluate(env: dict[str, int], a: tuple = a, b: tuple = b) -> int:
                return wrap(apply(a[1](env), b[1](env)), dtype)

            return node(a[0], b[0]), evaluate

        return st.builds(combine, st.sampled_from(sorted(OPERATIONS)), children, children)

    return st.recursive(leaves, extend, max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    bits=st.sampled_from([8, 32]),
    start=st.integers(-5, 5),
    extents=st.tuples(st.integers(1, 6), st.integers(1, 6)),
)
def test_index_expressions_match_direct_evaluation(
    data: st.DataObject, bits: int, start: int, extents: tuple[int, int]
) -> None:
    dtype = dt.make("int", bits)
    i, j = E.Var("i", dtype), E.Var("j", dtype)
    expression, evaluate = data.draw(expressions({"i": i, "j": j}, dtype))
    size = extents[0] * extents[1]
    out = make_buffer("out", (E.IntImm(size, dt.INT32),), dt.make("int", bits))
    flat = E.Add(E.Mul(E.Sub(i, E.IntImm(start, dtype)), E.IntImm(extents[1], dtype)), j)
    table = make_buffer("table", (E.IntImm(size, dt.INT32),), dt.make("int", bits))
    picked = make_buffer("picked", (E.IntImm(size, dt.INT32),), dt.make("int", bits))
    wrapped_index = E.FloorMod(expression, E.IntImm(size, dtype))
    store = SeqStmt(
        (
            BufferStore(out, expression, (flat,)),
            BufferStore(picked, E.BufferLoad(table, (wrapped_index,)), (flat,)),
        )
    )
    inner = For(j, E.IntImm(0, dtype), E.IntImm(extents[1], dtype), ForKind.SERIAL, store)
    loop = For(i, E.IntImm(start, dtype), E.IntImm(extents[0], dtype), ForKind.SERIAL, inner)
    kind = np.int8 if bits == 8 else np.int32
    result, picks = np.zeros(size, kind), np.zeros(size, kind)
    values = np.arange(size, dtype=kind) * 3
    interp.run(
        function([out, table, picked], loop), {"out": result, "table": values, "picked": picks}
    )
    expected = [
        evaluate({"i": start + a, "j": b}) for a in range(extents[0]) for b in range(extents[1])
    ]
    assert result.tolist() == expected
    assert picks.tolist() == [values[e % size] for e in expected]
