"""fresh_copy: an expression met twice is copied once, yet every definition in the copy is
new, and a variable defined twice (two sibling loops over one variable) gets a fresh one at
each definition, its uses too."""

from __future__ import annotations

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import make_buffer
from tirc.ir.functor import walk
from tirc.transform.fresh_copy import fresh_copy


def variables_in(stmt: S.Stmt) -> list[E.Var]:
    found: list[E.Var] = []
    walk(stmt, lambda node: found.append(node) if isinstance(node, E.Var) else None)
    return [var for var in found if var.dtype == dt.INT32]


def test_shared_expression_is_copied_once() -> None:
    i = E.Var("i", dt.INT32)
    buffer = make_buffer("A", (E.IntImm(64, dt.INT32),))
    index = E.Add(E.Mul(i, E.IntImm(8, dt.INT32)), E.IntImm(1, dt.INT32))
    body = S.seq(
        S.BufferStore(buffer, E.FloatImm(1.0, dt.FLOAT32), (index,)),
        S.BufferStore(buffer, E.FloatImm(2.0, dt.FLOAT32), (index,)),
    )
    copied = fresh_copy(body, {i: E.IntImm(3, dt.INT32)})
    assert isinstance(copied, S.SeqStmt)
    first, second = copied.stmts
    assert isinstance(first, S.BufferStore) and isinstance(second, S.BufferStore)
    assert first.indices[0] is second.indices[0]  # one copy, shared as the input shared it
    assert isinstance(first.indices[0], E.Add)
    assert first.indices[0].a.a.value == 3  # type: ignore[attr-defined]


def test_a_variable_defined_twice_gets_a_fresh_one_at_each_definition() -> None:
    k = E.Var("k", dt.INT32)
    buffer = make_buffer("A", (E.IntImm(64, dt.INT32),))
    index = E.Add(k, E.IntImm(1, dt.INT32))  # the same object in both loops

    def loop() -> S.For:
        store = S.BufferStore(buffer, E.FloatImm(0.0, dt.FLOAT32), (index,))
        return S.For(k, E.IntImm(0, dt.INT32), E.IntImm(4, dt.INT32), S.ForKind.SERIAL, store)

    copied = fresh_copy(S.seq(loop(), loop()), {})
    assert isinstance(copied, S.SeqStmt)
    for copy in copied.stmts:
        assert isinstance(copy, S.For) and copy.loop_var is not k
        assert variables_in(copy.body) == [copy.loop_var], "a use kept the other loop's one"
    first, second = copied.stmts
    assert isinstance(first, S.For) and isinstance(second, S.For)
    assert first.loop_var is not second.loop_var
