"""What the Analyzer knows in a scope: conditions assumed, values bound, buffer shapes."""

from __future__ import annotations

from tirc.analysis.arith import Analyzer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Range, make_buffer
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.structural import structural_equal

VI, N, M = Var("i"), Var("n"), Var("m")


def c(value: int) -> IntImm:
    return IntImm(value, dt.INT32)


def over_i() -> Analyzer:
    analyzer = Analyzer()
    analyzer.bind(VI, Range(c(0), c(16)))
    return analyzer


def truth(analyzer: Analyzer, condition: PrimExpr) -> int | None:
    result = analyzer.simplify(condition)
    return result.value if isinstance(result, IntImm) else None


def test_an_assumed_condition_is_true_in_every_spelling_and_its_negation_false() -> None:
    analyzer = over_i()
    forget = analyzer.assume(E.LT(VI, N))
    assert truth(analyzer, E.LT(VI, N)) == 1
    assert truth(analyzer, E.GT(N, VI)) == 1
    assert truth(analyzer, E.GE(VI, N)) == 0
    assert truth(analyzer, E.Not(E.LT(VI, N))) == 0
    forget()
    assert truth(analyzer, E.LT(VI, N)) is None


def test_a_comparison_bounds_its_difference_up_to_a_constant() -> None:
    """`i < n - 1` decides `i + 1 < n` and `i < n`, not `i + 2 < n`."""
    analyzer = over_i()
    analyzer.assume(E.LT(VI, E.Sub(N, c(1))))
    assert truth(analyzer, E.LT(E.Add(VI, c(1)), N)) == 1
    assert truth(analyzer, E.LT(VI, N)) == 1
    assert truth(analyzer, E.LT(E.Add(VI, c(2)), N)) is None


def test_a_variable_compared_with_a_constant_is_bounded_but_keeps_its_name() -> None:
    analyzer = over_i()
    forget = analyzer.assume(E.EQ(VI, c(5)))
    assert truth(analyzer, E.LT(VI, c(8))) == 1
    assert analyzer.simplify(E.Add(VI, c(0))) is VI  # not folded to 5, as TVM keeps `A[i]`
    forget()
    assert truth(analyzer, E.LT(VI, c(8))) is None


def test_a_negated_disjunction_gives_each_negated_literal() -> None:
    analyzer = over_i()
    analyzer.assume(E.Not(E.Or(E.LT(VI, c(3)), E.EQ(N, c(2)))))
    assert truth(analyzer, E.LT(VI, c(3))) == 0
    assert truth(analyzer, E.LE(c(3), VI)) == 1
    assert truth(analyzer, E.NE(N, c(2))) == 1


def test_a_condition_that_reads_memory_is_no_fact() -> None:
    """A store may change what the load reads (TVM's test_altered_buffer_contents)."""
    buffer = make_buffer("A", (c(1),), dt.INT32)
    load = E.BufferLoad(buffer, (c(0),))
    analyzer = over_i()
    analyzer.assume(E.EQ(load, N))
    assert truth(analyzer, E.EQ(load, N)) is None


def test_a_bound_value_stands_for_its_variable() -> None:
    analyzer = over_i()
    x = Var("x")
    analyzer.bind_value(x, E.Add(VI, c(1)))
    assert truth(analyzer, E.LE(x, c(16))) == 1
    assert structural_equal(analyzer.simplify(E.Mul(x, c(2))), E.Add(E.Mul(VI, c(2)), c(2)))


def test_a_buffer_shape_bounds_its_variable() -> None:
    """`n * 32 - 1 >= 0` gives n >= 1, as TVM's MarkGlobalNonNegValue."""
    analyzer = Analyzer()
    analyzer.mark_global_non_negative(E.Sub(E.Mul(N, c(32)), c(1)))
    assert truth(analyzer, E.LE(c(1), N)) == 1
    assert truth(analyzer, E.EQ(E.Min(c(1), N), c(1))) == 1
    analyzer.mark_global_non_negative(E.Add(E.Mul(M, c(4)), c(3)))
    assert truth(analyzer, E.LE(c(0), M)) == 1


def test_shifts_of_bounded_operands_are_bounded() -> None:
    analyzer = over_i()  # i in [0, 16)
    shift = E.Call(dt.INT32, "shift_left", (c(31), VI))
    assert truth(analyzer, E.LE(shift, c(31 << 15))) == 1
    assert truth(analyzer, E.LE(shift, c(31 << 14))) is None
    right = E.Call(dt.INT32, "shift_right", (c(1 << 20), VI))
    assert truth(analyzer, E.GE(right, c(1 << 5))) == 1
