"""Region bounds: the loops a cache's region is relaxed over, and what of it lies in the buffer."""

from __future__ import annotations

from tirc.analysis.region_bound import clamp_to_buffer, estimate_region, loop_domains
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import BufferRegion, Range, make_buffer
from tirc.ir.expr import IntImm, PrimExpr, Var


def c(value: int) -> IntImm:
    return IntImm(value)


def loop(var: Var, extent: int, tag: str | None = None) -> S.For:
    body = S.Evaluate(c(0))
    if tag is None:
        return S.For(var, c(0), c(extent), S.ForKind.SERIAL, body)
    binding = S.IterVar(Var(tag), None, S.IterType.THREAD, tag)
    return S.For(var, c(0), c(extent), S.ForKind.THREAD_BINDING, body, thread_binding=binding)


def ends(region: BufferRegion) -> list[tuple[object, object]]:
    def value(expr: PrimExpr) -> object:
        return expr.value if isinstance(expr, IntImm) else expr

    return [(value(item.min), value(item.extent)) for item in region.region]


def test_a_cache_is_relaxed_over_the_thread_loops_that_share_its_memory() -> None:
    i, bx, tx, ty = Var("i"), Var("bx"), Var("tx"), Var("ty")
    inner = [loop(i, 4)]
    outer = [loop(tx, 32, "threadIdx.x"), loop(ty, 4, "threadIdx.y"), loop(bx, 8, "blockIdx.x")]
    assert list(loop_domains(inner, outer, "shared")) == [i, tx, ty]  # not across blocks
    assert list(loop_domains(inner, outer, "warp")) == [i, tx]  # along threadIdx.x only
    assert list(loop_domains(inner, outer, "local")) == [i]  # one per thread
    assert list(loop_domains(inner, outer, "global")) == [i]  # one per kernel: no sharing
    extent = loop_domains(inner, outer, "shared")[tx].extent
    assert isinstance(extent, IntImm) and extent.value == 32


def test_a_split_of_a_split_is_cut_to_the_buffer() -> None:
    # i_0 * 5 + (i_1_0 * 3 + i_1_1) relaxes to [0, 1026); the buffer holds 1024
    i_0, i_1_0, i_1_1 = Var("i_0"), Var("i_1_0"), Var("i_1_1")
    index = E.Add(E.Mul(i_0, c(5)), E.Add(E.Mul(i_1_0, c(3)), i_1_1))
    buffer = make_buffer("A", (c(1024),), dt.FLOAT32)
    domains = {i_0: Range(c(0), c(205)), i_1_0: Range(c(0), c(2)), i_1_1: Range(c(0), c(3))}
    region = BufferRegion(buffer, (Range(index, c(1)),))
    relaxed = estimate_region(region, domains, IntImm(1, dt.BOOL))
    assert ends(relaxed) == [(0, 1026)]
    assert ends(clamp_to_buffer(relaxed)) == [(0, 1024)]


def test_a_region_inside_the_buffer_is_left_as_it_is() -> None:
    buffer = make_buffer("A", (c(64),), dt.FLOAT32)
    region = BufferRegion(buffer, (Range(c(8), c(16)),))
    assert clamp_to_buffer(region) is region


def test_the_predicate_bounds_a_fused_iterator() -> None:
    # an imperfect split of 10 by 4: the predicate keeps io * 4 + ii below 10
    io, ii = Var("io"), Var("ii")
    index = E.Add(E.Mul(io, c(4)), ii)
    buffer = make_buffer("A", (c(16),), dt.FLOAT32)
    domains = {io: Range(c(0), c(3)), ii: Range(c(0), c(4))}
    region = BufferRegion(buffer, (Range(index, c(1)),))
    unbounded = estimate_region(region, domains, IntImm(1, dt.BOOL))
    bounded = estimate_region(region, domains, E.LT(index, c(10)))
    assert ends(unbounded) == [(0, 12)]
    assert ends(bounded) == [(0, 10)]


def test_a_scaled_start_under_a_predicate_spans_its_steps() -> None:
    # A[h * 2 : h * 2 + 2] for h < 3 of [0, 4): starts 0, 2, 4, so [0, 6); every element
    # of that range is read, and none past it
    h = Var("h")
    buffer = make_buffer("A", (c(16),), dt.FLOAT32)
    region = BufferRegion(buffer, (Range(E.Mul(h, c(2)), c(2)),))
    bounded = estimate_region(region, {h: Range(c(0), c(4))}, E.LT(h, c(3)))
    assert ends(bounded) == [(0, 6)]
    read = {2 * value + offset for value in range(3) for offset in range(2)}
    assert read == set(range(6))
