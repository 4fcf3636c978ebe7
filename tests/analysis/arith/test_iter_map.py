"""Iterator-map detection on the patterns split, fuse and reorder produce, and on non-maps."""

from __future__ import annotations

from tirc.analysis.arith.iter_map import Level, detect_iter_map
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, Var


def c(value: int) -> IntImm:
    return IntImm(value)


def loops(**extents: int) -> tuple[dict[str, Var], dict[Var, Range]]:
    variables = {name: Var(name) for name in extents}
    return variables, {variables[n]: Range(c(0), c(e)) for n, e in extents.items()}


def test_identity_is_bijective() -> None:
    v, domains = loops(i=16, j=8)
    result = detect_iter_map([v["i"], v["j"]], domains, level=Level.BIJECTIVE)
    assert result.ok and [s.extent for s in result.sums] == [16, 8]


def test_split_binding() -> None:
    v, domains = loops(i0=4, i1=32)
    result = detect_iter_map(
        [E.Add(E.Mul(v["i0"], c(32)), v["i1"])], domains, level=Level.BIJECTIVE
    )
    assert result.ok and result.sums[0].extent == 128


def test_fused_binding() -> None:
    v, domains = loops(f=128)
    bindings = [E.FloorDiv(v["f"], c(8)), E.FloorMod(v["f"], c(8))]
    result = detect_iter_map(bindings, domains, level=Level.BIJECTIVE)
    assert result.ok and [s.extent for s in result.sums] == [16, 8]


def test_split_of_fused_loops() -> None:
    v, domains = loops(i=4, j=8)
    fused = E.Add(E.Mul(v["i"], c(8)), v["j"])
    bindings = [E.FloorDiv(fused, c(2)), E.FloorMod(fused, c(2))]
    result = detect_iter_map(bindings, domains, level=Level.BIJECTIVE)
    assert result.ok, result.errors


def test_reordered_split() -> None:
    v, domains = loops(a=2, b=3, c=5)
    index = E.Add(E.Add(E.Mul(v["b"], c(10)), E.Mul(v["a"], c(5))), v["c"])
    result = detect_iter_map([index], domains, level=Level.BIJECTIVE)
    assert result.ok and result.sums[0].extent == 30


def test_overlap_is_rejected() -> None:
    v, domains = loops(i=4, j=4)
    result = detect_iter_map([E.Add(v["i"], v["j"])], domains)
    assert not result.ok and "fuse" in result.errors[0]


def test_product_of_iterators_is_not_affine() -> None:
    v, domains = loops(i=4, j=4)
    result = detect_iter_map([E.Mul(v["i"], v["j"])], domains)
    assert not result.ok


def test_same_loop_twice_is_rejected() -> None:
    v, domains = loops(i=4)
    result = detect_iter_map([v["i"], v["i"]], domains)
    assert not result.ok and "twice" in result.errors[0]


def test_unused_loop_is_not_bijective_but_is_surjective() -> None:
    v, domains = loops(i=4, k=3)
    assert detect_iter_map([v["i"]], domains, level=Level.SURJECTIVE).ok
    result = detect_iter_map([v["i"]], domains, level=Level.BIJECTIVE)
    assert not result.ok and "k" in result.errors[0]


def test_imperfect_split_with_predicate() -> None:
    v, domains = loops(i0=4, i1=32)
    fused = E.Add(E.Mul(v["i0"], c(32)), v["i1"])
    result = detect_iter_map([fused], domains, predicate=E.LT(fused, c(100)), level=Level.BIJECTIVE)
    assert result.ok and result.sums[0].extent == 100


def test_offset_outside_loops_is_the_base() -> None:
    v, domains = loops(ax0=8)
    outer = Var("v0")
    result = detect_iter_map([E.Add(E.Mul(outer, c(8)), v["ax0"])], domains, level=Level.BIJECTIVE)
    assert result.ok and result.sums[0].extent == 8
