"""Symbolic ranges: variables bound to `[0, n)` with `n` a (non-negative) shape variable.

The expected answers are TVM 0.27's (`tvm.sym.Analyzer` with `n` updated to [0, +inf) as its
schedule primitives do for shape variables, then `bind`, `simplify`, `can_prove` with
`ProofStrength.SYMBOLIC_BOUND`), and property tests check that nothing proved or rewritten is
ever false.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.arith.test_simplify import evaluate
from tirc.analysis.arith import Analyzer, Bound
from tirc.analysis.arith.bound import const_bound
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.text import script

N, F, I, AX = (Var(name, dt.INT64) for name in ("n", "f", "i", "ax0"))  # noqa: E741  (the index i of the program)


def c(value: int) -> IntImm:
    return IntImm(value, dt.INT64)


def analyzer() -> Analyzer:
    """n >= 0; f in [0, n * 32); i in [0, n); ax0 in [0, 1)."""
    result = Analyzer()
    result.mark_non_negative(N)
    result.bind(F, Range(c(0), E.Mul(N, c(32))))
    result.bind(I, Range(c(0), N))
    result.bind(AX, Range(c(0), c(1)))
    return result


def clamp(x: PrimExpr) -> PrimExpr:
    """`min(max(x - 1, 0), x - 1)`: the last index of a dimension, as compute_at writes it."""
    return E.Min(E.Max(E.Sub(x, c(1)), c(0)), E.Sub(x, c(1)))


# -- TVM's answers --------------------------------------------------------------------------


def test_absorption_laws() -> None:
    plain = Analyzer()
    m = Var("m", dt.INT64)
    assert script(plain.simplify(clamp(m))) == "m - T.int64(1)"
    assert plain.simplify(E.Min(E.Max(m, c(0)), m)) is m
    assert plain.simplify(E.Max(E.Min(m, c(0)), m)) is m
    assert script(plain.simplify(E.Min(E.Sub(m, c(1)), E.Max(E.Sub(m, c(1)), c(0))))) == (
        "m - T.int64(1)"
    )


def test_multiples_of_a_symbolic_divisor_leave_the_dividend() -> None:
    a = analyzer()
    assert script(a.simplify(E.FloorDiv(E.Sub(E.Mul(N, c(32)), c(1)), N))) == (
        "T.int64(-1) // n + T.int64(32)"
    )
    assert script(a.simplify(E.FloorDiv(E.Add(E.Mul(N, c(32)), c(5)), N))) == (
        "T.int64(5) // n + T.int64(32)"
    )
    assert a.const_bound(a.simplify(E.FloorDiv(E.Sub(E.Mul(N, c(7)), c(1)), N))) == Bound(6, 6)
    assert a.const_bound(a.simplify(E.FloorDiv(E.Add(E.Mul(N, c(32)), c(5)), N))) == Bound(32, 37)


def test_divisor_of_unknown_sign_is_left_alone() -> None:
    m = Var("m", dt.INT64)
    dividend = E.Sub(E.Mul(m, c(32)), c(1))
    assert (
        script(Analyzer().simplify(E.FloorDiv(dividend, m)))
        == "(m * T.int64(32) - T.int64(1)) // m"
    )


def test_symbolic_bound_proofs() -> None:
    a = analyzer()
    quotient, remainder = E.FloorDiv(F, N), E.FloorMod(F, N)
    # TVM: provable by the simplifier alone
    assert a.can_prove(E.LE(c(0), quotient))
    assert a.can_prove(E.GE(remainder, c(0)))
    # TVM: provable only with the symbolic-bound strength
    for condition in (
        E.LT(quotient, c(32)),
        E.LT(E.Add(quotient, AX), c(32)),
        E.LT(remainder, E.Add(clamp(N), c(1))),
        E.LT(remainder, N),
        E.LT(I, N),
        E.LT(I, E.Add(clamp(N), c(1))),
        E.LT(F, E.Mul(N, c(32))),
        E.LE(F, E.Sub(E.Mul(N, c(32)), c(1))),
    ):
        assert a.can_prove(condition, symbolic=True), script(condition)
        assert not a.can_prove(condition), script(condition)
    # and not more than is true
    for condition in (E.LT(quotient, c(31)), E.LT(I, E.Sub(N, c(1))), E.LT(remainder, c(5))):
        assert not a.can_prove(condition, symbolic=True), script(condition)


def test_const_bound_of_division_by_non_negative_variable() -> None:
    known = {N: Bound(0, None)}
    assert const_bound(E.FloorDiv(c(-1), N), known) == Bound(-1, -1)
    assert const_bound(E.FloorDiv(c(5), N), known) == Bound(0, 5)
    assert const_bound(E.FloorMod(I, N), {**known, I: Bound(0, 9)}) == Bound(0, 9)
    assert const_bound(E.FloorDiv(c(5), N), {N: Bound(2, 3)}) == Bound(1, 2)


# -- properties: nothing rewritten or proved is ever false ----------------------------------


def sym_exprs() -> st.SearchStrategy[PrimExpr]:
    leaves = st.one_of(st.sampled_from([N, F, I, AX]), st.integers(-40, 40).map(c))

    def extend(children: st.SearchStrategy[PrimExpr]) -> st.SearchStrategy[PrimExpr]:
        arithmetic = st.tuples(
            st.sampled_from([E.Add, E.Sub, E.Min, E.Max]), children, children
        ).map(lambda t: t[0](t[1], t[2]))
        scaled = st.tuples(children, st.integers(-4, 33).map(c)).map(lambda t: E.Mul(*t))
        by_n = st.tuples(st.sampled_from([E.FloorDiv, E.FloorMod]), children).map(
            lambda t: t[0](t[1], N)
        )
        return st.one_of(arithmetic, scaled, by_n)

    return st.recursive(leaves, extend, max_leaves=8)


def environments(n: int) -> list[dict[Var, int]]:
    return [
        {N: n, F: f, I: i, AX: 0}
        for f in {0, 1, n, 32 * n - 1, 17 * n // 2}
        for i in {0, n // 2, n - 1}
    ]


@settings(max_examples=400, deadline=None)
@given(sym_exprs(), st.integers(1, 40))
def test_simplify_preserves_value(expr: PrimExpr, n: int) -> None:
    simplified = analyzer().simplify(expr)
    for env in environments(n):
        assert evaluate(simplified, env) == evaluate(expr, env)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([E.LT, E.LE, E.GT, E.GE]), sym_exprs(), sym_exprs())
def test_symbolic_proofs_are_sound(op, a: PrimExpr, b: PrimExpr) -> None:  # noqa: ANN001
    condition = op(a, b)
    if not analyzer().can_prove(condition, symbolic=True):
        return
    for n in (1, 2, 3, 7, 40):
        for env in environments(n):
            assert evaluate(condition, env) == 1, (script(condition), env)
