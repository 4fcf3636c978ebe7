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


def test_overlap_is_surjective_not_bijective() -> None:
    # `i + j` covers [0, 7) (TVM's surjective maps accept it, as in `h * 2 + rh`)
    v, domains = loops(i=4, j=4)
    result = detect_iter_map([E.Add(v["i"], v["j"])], domains, level=Level.BIJECTIVE)
    assert not result.ok and "fuse" in result.errors[0]
    result = detect_iter_map([E.Add(v["i"], v["j"])], domains, level=Level.SURJECTIVE)
    assert result.ok and result.sums[0].extent == 7


def test_overlap_extent_and_order() -> None:
    # i * 6 + j * 2 + k: k first, then the largest smaller scale each time, the extent
    # growing by each shortfall (TVM gives 53); i * 5 + k + j lists k, i, j (TVM's order)
    v, domains = loops(i=8, j=5, k=3)
    index = E.Add(E.Add(E.Mul(v["i"], c(6)), E.Mul(v["j"], c(2))), v["k"])
    result = detect_iter_map([index], domains)
    assert result.ok and result.sums[0].extent == 53
    index = E.Add(E.Add(E.Mul(v["i"], c(5)), v["k"]), v["j"])
    result = detect_iter_map([index], domains)
    assert result.ok and [s.mark.source for s in result.sums[0].splits] == [v["k"], v["i"], v["j"]]


def test_gap_is_rejected() -> None:
    # i * 4 + k with k in [0, 3): the value 3 is never taken
    v, domains = loops(i=8, k=3)
    result = detect_iter_map([E.Add(E.Mul(v["i"], c(4)), v["k"])], domains)
    assert not result.ok and "fuse" in result.errors[0]


def test_overlapping_indices_are_not_independent() -> None:
    v, domains = loops(i=8, k=3)
    result = detect_iter_map([E.Add(v["i"], v["k"]), v["k"]], domains)
    assert not result.ok and "twice" in result.errors[0]


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


# -- normal form (how TVM writes bindings after split and fuse) ------------------------------


def _normal(indices, domains, predicate=None, keep_unit_iters=True):  # type: ignore[no-untyped-def]
    from tirc.analysis.arith.iter_map import normalize_iter_map
    from tirc.text import script

    result = normalize_iter_map(indices, domains, predicate, keep_unit_iters)
    return None if result is None else [script(index) for index in result]


def test_normal_form_keeps_a_fused_source_whole() -> None:
    v, domains = loops(a=256, b=1024)
    fused = E.Add(E.Mul(v["a"], c(1024)), v["b"])
    got = _normal([E.FloorDiv(fused, c(512)), E.FloorMod(fused, c(512))], domains)
    assert got == ["(a * 1024 + b) // 512", "(a * 1024 + b) % 512"]


def test_normal_form_of_a_middle_digit() -> None:
    v, domains = loops(x=262144)
    got = _normal([E.FloorMod(E.FloorDiv(v["x"], c(16)), c(128))], domains)
    assert got == ["x % 2048 // 16"]


def test_normal_form_joins_consecutive_digits() -> None:
    v, domains = loops(x=49152)
    whole = E.Add(E.Mul(E.FloorDiv(v["x"], c(32)), c(32)), E.FloorMod(v["x"], c(32)))
    assert _normal([E.FloorDiv(whole, c(768))], domains) == ["x // 768"]


def test_normal_form_of_nested_splits_expands_scales() -> None:
    v, domains = loops(i00=2, i01=13, i1=5)
    inner = E.Add(E.Mul(v["i00"], c(13)), v["i01"])
    got = _normal([E.Add(E.Mul(inner, c(5)), v["i1"])], domains)
    assert got == ["i00 * 65 + i01 * 5 + i1"]


def test_normal_form_unit_iterators_kept_or_dropped() -> None:
    v, domains = loops(i0=2, i1=1, i2=64)
    index = E.Add(E.Add(E.Mul(v["i0"], c(64)), E.Mul(v["i1"], c(64))), v["i2"])
    assert _normal([index], domains) == ["i0 * 64 + i1 * 64 + i2"]
    assert _normal([index], domains, keep_unit_iters=False) == ["i0 * 64 + i2"]


def test_normal_form_refuses_non_affine() -> None:
    v, domains = loops(i=16)
    assert _normal([E.Mul(v["i"], v["i"])], domains) is None


def test_normal_form_of_a_loop_of_symbolic_extent_read_whole() -> None:
    # a loop of symbolic extent may be the highest digit, never divided or below another
    m = Var("m")
    v, domains = loops(i1=32)
    i0 = Var("i0")
    domains[i0] = Range(c(0), E.FloorDiv(E.Add(m, c(31)), c(32)))
    assert _normal([E.Add(E.Mul(i0, c(32)), v["i1"])], domains) == ["i0 * 32 + i1"]
    assert _normal([E.Add(E.Mul(v["i1"], m), i0)], domains) is None
    assert _normal([E.FloorDiv(i0, c(4))], domains) is None
    assert not detect_iter_map([i0], domains).ok  # detection proper keeps constant extents


def test_normal_form_of_overlapping_terms_above_a_loop_of_symbolic_extent() -> None:
    # `h * 2 + rh` with `rh` in [0, 3) overlaps: the fused extent is n * 2 + 1, an expression
    # (adding the overlap to it raised TypeError: unsupported operand type(s) for +: 'Mul')
    n, h = Var("n"), Var("h")
    v, domains = loops(rh=3)
    domains[h] = Range(c(0), n)
    index = E.Add(E.Mul(h, c(2)), v["rh"])
    assert _normal([index], domains) == ["h * 2 + rh"]
    assert _normal([E.FloorDiv(index, c(4))], domains) is None


def test_normal_form_of_a_symbolic_modulus_of_its_own_extent() -> None:
    # fuse of a unit loop with one of extent n leaves `fused % n` and `fused // n`
    n, fused = Var("n"), Var("fused")
    domains = {fused: Range(c(0), n)}
    assert _normal([E.FloorMod(fused, n), E.FloorDiv(fused, n)], domains) == ["fused", "0"]
    assert _normal([E.FloorMod(fused, Var("k"))], domains) is None


def test_a_bounded_fused_iterator_as_the_top_digits_of_an_index() -> None:
    v, domains = loops(i0=11, i1=128, u=1, j=8)
    bounded = E.Add(E.Mul(v["i0"], c(128)), v["i1"])
    guard = E.LT(bounded, c(1376))
    index = E.Add(E.Mul(bounded, c(8)), E.Add(E.Mul(v["u"], c(8)), v["j"]))
    result = detect_iter_map([index], domains, guard)
    assert result.ok and result.sums[0].extent == 1376 * 8
    assert _normal([index], domains, guard) == ["(i0 * 128 + i1) * 8 + u * 8 + j"]
    # below another digit the bound would leave holes: not read as one iterator
    low = E.Add(E.Mul(v["j"], c(1408)), bounded)
    assert _normal([low], domains, guard) is None


def test_predicate_over_iterators_no_index_fuses_is_not_affine() -> None:
    v, domains = loops(i=128, j=128)
    guard = E.LT(E.Add(E.Mul(v["i"], c(128)), v["j"]), c(100))
    assert not detect_iter_map([v["i"], v["j"]], domains, guard).ok
    split_guard = E.LT(E.Add(E.Mul(v["i"], c(128)), v["j"]), c(16000))
    fused = E.Add(E.Mul(v["i"], c(128)), v["j"])
    assert detect_iter_map([fused], domains, split_guard).ok


def test_a_scaled_index_is_surjective_not_bijective() -> None:
    # TVM 0.27 reads `h * 2` and `h * 2 + c * 8` as one iterator times 2 (surjective maps)
    v, domains = loops(h=4, c=2)
    lone = E.Mul(v["h"], c(2))
    both = E.Add(lone, E.Mul(v["c"], c(8)))
    result = detect_iter_map([lone], domains, level=Level.SURJECTIVE)
    assert result.ok and [s.scale for s in result.sums[0].splits] == [2]
    assert result.sums[0].extent == 4
    result = detect_iter_map([both], domains, level=Level.SURJECTIVE)
    assert result.ok and [s.scale for s in result.sums[0].splits] == [8, 2]
    assert result.sums[0].extent == 8
    assert not detect_iter_map([lone, v["c"]], domains, level=Level.BIJECTIVE).ok
    assert not detect_iter_map([lone], domains, level=Level.NO_CHECK).ok  # nor inverted
    odd = E.Add(lone, E.Mul(v["c"], c(3)))  # 3 is no multiple of 2: no common scale
    assert not detect_iter_map([odd], domains, level=Level.SURJECTIVE).ok
    overlapping = E.Add(lone, E.Mul(v["c"], c(4)))  # h * 2 spans 8: c * 4 overlaps it
    assert not detect_iter_map([overlapping], domains, level=Level.SURJECTIVE).ok


def test_normal_form_of_a_scaled_index_beside_a_fused_loop() -> None:
    # fuse's bindings after compute_at (a meta-schedule max-pool case): TVM drops the `+ 0`
    # of unit loops and the modulus of the whole fused extent once every index is read
    v, domains = loops(c_o=2, h_o=4, f=896)
    values = [
        E.Add(v["c_o"], c(0)),
        E.Add(E.Mul(v["h_o"], c(2)), c(0)),
        E.FloorDiv(E.FloorMod(v["f"], c(896)), c(128)),
        E.FloorMod(v["f"], c(128)),
    ]
    assert _normal(values, domains) == ["c_o", "h_o * 2", "f // 128", "f % 128"]
