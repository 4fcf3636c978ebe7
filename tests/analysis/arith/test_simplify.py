"""The simplifier: known identities, and a property test that it never changes a value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tirc.analysis.arith import Analyzer, Bound
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import integer
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var

VI, VJ, VK = Var("i"), Var("j"), Var("k")


def c(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def analyzer() -> Analyzer:
    result = Analyzer()
    result.bind(VI, Range(c(0), c(16)))
    result.bind(VJ, Range(c(0), c(8)))
    result.bind(VK, Range(c(-4), c(13)))  # k in [-4, 8]
    return result


_BINARY = {
    E.Add: lambda a, b: a + b,
    E.Sub: lambda a, b: a - b,
    E.Mul: lambda a, b: a * b,
    E.FloorDiv: integer.floordiv,
    E.FloorMod: integer.floormod,
    E.Div: integer.truncdiv,
    E.Mod: integer.truncmod,
    E.Min: min,
    E.Max: max,
    E.LT: lambda a, b: int(a < b),
    E.LE: lambda a, b: int(a <= b),
    E.GT: lambda a, b: int(a > b),
    E.GE: lambda a, b: int(a >= b),
    E.EQ: lambda a, b: int(a == b),
    E.NE: lambda a, b: int(a != b),
    E.And: lambda a, b: int(bool(a) and bool(b)),
    E.Or: lambda a, b: int(bool(a) or bool(b)),
}


def evaluate(expr: PrimExpr, env: dict[Var, int]) -> int:
    """A deliberately naive evaluator of integer expressions (the property's reference)."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, E.Select):
        cond = evaluate(expr.condition, env)
        return evaluate(expr.true_value if cond else expr.false_value, env)
    if isinstance(expr, E.Not):
        return int(not evaluate(expr.a, env))
    if isinstance(expr, E.Cast):
        return integer.wrap(evaluate(expr.value, env), expr.dtype)
    a, b = evaluate(expr.a, env), evaluate(expr.b, env)  # type: ignore[attr-defined]
    return integer.wrap(_BINARY[type(expr)](a, b), expr.dtype)  # type: ignore[attr-defined]


def int_exprs(depth: int = 4) -> st.SearchStrategy[PrimExpr]:
    leaves = st.one_of(st.sampled_from([VI, VJ, VK]), st.integers(-20, 20).map(c))

    def extend(children: st.SearchStrategy[PrimExpr]) -> st.SearchStrategy[PrimExpr]:
        arithmetic = st.tuples(
            st.sampled_from([E.Add, E.Sub, E.Mul, E.Min, E.Max]), children, children
        )
        division = st.tuples(
            st.sampled_from([E.FloorDiv, E.FloorMod, E.Div, E.Mod]),
            children,
            st.integers(1, 12).map(c),
        )
        return st.one_of(arithmetic, division).map(lambda t: t[0](t[1], t[2]))

    return st.recursive(leaves, extend, max_leaves=10)


@settings(max_examples=400, deadline=None)
@given(int_exprs(), st.integers(0, 15), st.integers(0, 7), st.integers(-4, 8))
def test_simplify_preserves_value(expr: PrimExpr, i: int, j: int, k: int) -> None:
    env = {VI: i, VJ: j, VK: k}
    simplified = analyzer().simplify(expr)
    assert evaluate(simplified, env) == evaluate(expr, env)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE]),
    int_exprs(),
    int_exprs(),
    st.integers(0, 15),
    st.integers(0, 7),
    st.integers(-4, 8),
)
def test_simplify_preserves_comparisons(op, a, b, i, j, k) -> None:  # noqa: ANN001
    env = {VI: i, VJ: j, VK: k}
    expr = op(a, b)
    assert evaluate(analyzer().simplify(expr), env) == evaluate(expr, env)


def test_split_pattern_divides_away() -> None:
    fused = E.Add(E.Mul(VI, c(8)), VJ)
    assert analyzer().simplify(E.FloorDiv(fused, c(8))) is VI
    assert analyzer().simplify(E.FloorMod(fused, c(8))) is VJ


def test_like_terms_cancel() -> None:
    result = analyzer().simplify(E.Sub(E.Add(E.Mul(VI, c(4)), VJ), E.Mul(VI, c(4))))
    assert result is VJ


def test_constants_fold_with_wrap_around() -> None:
    big = IntImm(2**31 - 1, dt.INT32)
    result = analyzer().simplify(E.Add(big, c(1)))
    assert isinstance(result, IntImm) and result.value == -(2**31)


def test_bounds_decide_comparisons() -> None:
    assert analyzer().can_prove(E.LT(E.Add(E.Mul(VI, c(8)), VJ), c(128)))
    assert not analyzer().can_prove(E.LT(E.Add(E.Mul(VI, c(8)), VJ), c(127)))


def test_min_max_by_bounds() -> None:
    assert analyzer().simplify(E.Min(VI, c(100))) is VI
    assert analyzer().simplify(E.Max(VJ, c(-1))) is VJ


def test_nested_floordiv_merges() -> None:
    result = analyzer().simplify(E.FloorDiv(E.FloorDiv(VK, c(2)), c(4)))
    assert isinstance(result, E.FloorDiv) and isinstance(result.b, IntImm) and result.b.value == 8


def test_floormod_of_floormod() -> None:
    result = analyzer().simplify(E.FloorMod(E.FloorMod(VK, c(8)), c(4)))
    assert isinstance(result, E.FloorMod) and result.a is VK and result.b.value == 4


def test_const_bound_of_split() -> None:
    bound = analyzer().const_bound(E.Add(E.Mul(VI, c(8)), VJ))
    assert bound == Bound(0, 127)


def test_unknown_variable_keeps_dtype_range() -> None:
    n = Var("n", dt.INT64)
    bound = Analyzer().const_bound(E.FloorMod(n, IntImm(32, dt.INT64)))
    assert bound == Bound(0, 31)


class _Counting:
    """A Simplifier that counts the comparisons it simplifies."""

    @staticmethod
    def make(ranges):  # noqa: ANN001, ANN205
        from tirc.analysis.arith.simplify import Simplifier

        class Counting(Simplifier):
            compares = 0

            def visit_CompareOp(self, node):  # noqa: ANN001, ANN202
                Counting.compares += 1
                return super().visit_CompareOp(node)

        return Counting(ranges)


def _chain(links: int, taken: int) -> PrimExpr:
    """Select(3 == 0, 0.0, Select(3 == 1, 1.0, ...)): link `taken` holds."""
    result: PrimExpr = E.FloatImm(-1.0, dt.FLOAT32)
    for link in reversed(range(links)):
        condition = E.And(E.EQ(c(taken), c(link)), E.LT(VI, c(100)))
        result = E.Select(condition, E.FloatImm(float(link), dt.FLOAT32), result)
    return result


def test_select_chain_folds_up_to_its_taken_link() -> None:
    simplifier = _Counting.make(analyzer().ranges)
    result = simplifier.visit(_chain(200, 3))
    assert isinstance(result, E.FloatImm) and result.value == 3.0
    # links 0..3 test `taken == link`; only link 3 goes on to `i < 100`; the tail is not visited
    assert type(simplifier).compares == 5


def test_and_or_decided_by_their_left_operand() -> None:
    simplifier = _Counting.make(analyzer().ranges)
    false, true = E.EQ(c(1), c(2)), E.EQ(c(2), c(2))
    assert simplifier.visit(E.And(false, E.LT(VI, VJ))).value == 0
    assert simplifier.visit(E.Or(true, E.LT(VI, VJ))).value == 1
    assert type(simplifier).compares == 2
    undecided = analyzer().simplify(E.And(E.LT(VI, VJ), true))
    assert isinstance(undecided, E.LT)


def test_shared_subtree_simplified_once() -> None:
    shared = E.LT(E.Add(VI, c(0)), VJ)
    simplifier = _Counting.make(analyzer().ranges)
    result = simplifier.visit(E.Select(E.Or(shared, shared), c(1), c(2)))
    assert type(simplifier).compares == 1
    assert isinstance(result, E.Select) and result.condition.a is result.condition.b


def test_constant_comparisons_do_not_wrap() -> None:
    a, b = IntImm(100, dt.INT8), IntImm(-100, dt.INT8)
    assert analyzer().simplify(E.LT(a, b)).value == 0  # 100 - (-100) does not fit in int8
    assert analyzer().simplify(E.GT(a, b)).value == 1


def test_unchanged_sum_is_the_same_object() -> None:
    expr = E.Add(E.Mul(VI, c(8)), VJ)
    assert analyzer().simplify(expr) is expr


def test_division_splits_coefficients_within_one_window() -> None:
    """TVM 0.27's Analyzer.simplify, for x in [0, 2) and y in [0, 4): a coefficient is read as
    d * (c // d) + c % d where the remainders stay in one window of the divisor."""
    from tirc.text import script

    x, y = Var("x"), Var("y")
    small = Analyzer()
    small.bind(x, Range(c(0), c(2)))
    small.bind(y, Range(c(0), c(4)))
    cases = [
        (E.FloorDiv(E.Mul(x, c(360)), c(16)), "x * 22"),
        (E.FloorDiv(E.Add(E.Mul(x, c(360)), y), c(16)), "x * 22"),
        (E.FloorDiv(E.Add(E.Mul(x, c(360)), c(359)), c(16)), "x * 22 + 22"),
        (E.FloorMod(E.Mul(x, c(360)), c(16)), "x * 8"),
        (E.FloorDiv(E.Mul(x, c(5)), c(3)), "x"),
        (E.FloorDiv(E.Add(E.Mul(x, c(360)), c(8)), c(16)), "(x * 360 + 8) // 16"),
    ]
    for expr, want in cases:
        assert script(small.simplify(expr)) == want, script(expr)


def test_remainder_keeps_a_constant_only_alone() -> None:
    """TVM 0.27's Analyzer.simplify, for x in [0, 1024) and z in [0, 4): a common factor g of
    the divisor splits `g * r + s` only where s is in [0, g); beside other terms, a quotient's
    constant stays whole in s and a remainder's s has no constant."""
    from tirc.text import script

    x, z = Var("x"), Var("z")
    bounded = Analyzer()
    bounded.bind(x, Range(c(0), c(1024)))
    bounded.bind(z, Range(c(0), c(4)))

    def dividend(constant: int) -> PrimExpr:
        return E.Add(E.Add(E.Mul(x, c(8)), z), c(constant))

    cases = [
        (E.FloorDiv(dividend(4), c(16)), "x // 2"),
        (E.FloorDiv(dividend(20), c(16)), "(x * 8 + z + 20) // 16"),
        (E.FloorMod(dividend(0), c(16)), "x % 2 * 8 + z"),
        (E.FloorMod(dividend(4), c(16)), "(x * 8 + z + 4) % 16"),
        (E.FloorMod(dividend(16), c(16)), "x % 2 * 8 + z"),
    ]
    for expr, want in cases:
        assert script(bounded.simplify(expr)) == want, script(expr)


def test_a_quotient_compared_with_a_constant_compares_its_dividend() -> None:
    """TVM 0.27's Analyzer.simplify, for i in [0, 16384) and j in [0, 64): `x // c < k` is
    `x < k * c` (and so on for <=, >, >=), and `x < c and x % m < r` with m | c drops the
    last row's places from r on (only for these two conjuncts side by side)."""
    from tirc.text import script

    i, j = Var("i"), Var("j")
    bounded = Analyzer()
    bounded.bind(i, Range(c(0), c(16384)))
    bounded.bind(j, Range(c(0), c(64)))
    row = E.FloorDiv(i, c(128))
    column = E.FloorMod(i, c(128))
    cases = [
        (E.LT(row, c(127)), "i < 16256"),
        (E.LE(row, c(126)), "i <= 16255"),
        (E.GT(row, c(3)), "511 < i"),
        (E.GE(row, c(3)), "384 <= i"),
        (E.EQ(row, c(3)), "i // 128 == 3"),
        (E.LT(row, j), "i // 128 < j"),
        (E.LT(E.FloorDiv(E.Add(E.Mul(i, c(4)), j), c(8)), c(3)), "i * 4 + j < 24"),
        (E.And(E.LT(row, c(127)), E.LT(column, c(127))), "i < 16255 and i % 128 < 127"),
        (E.And(E.LT(i, c(16256)), E.LT(column, c(100))), "i < 16228 and i % 128 < 100"),
        (E.And(E.LT(i, c(16200)), E.LT(column, c(100))), "i < 16200 and i % 128 < 100"),
        (
            E.And(E.And(E.LT(i, c(16256)), E.LT(j, c(3))), E.LT(column, c(127))),
            "i < 16256 and j < 3 and i % 128 < 127",
        ),
    ]
    for expr, want in cases:
        assert script(bounded.simplify(expr)) == want, script(expr)
