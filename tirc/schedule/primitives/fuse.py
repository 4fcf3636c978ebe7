"""fuse: a perfect nest of loops, each the only child of the one before, becomes one loop.

The fused loop runs over the product of the extents; each old loop variable is recovered
from it by division and remainder (mixed radix, innermost fastest).

    for i, j in T.grid(16, 16):       for i_j_fused in range(256):
        vi, vj = remap(i, j)       →      vi = T.axis.spatial(16, i_j_fused // 16)
                                          vj = T.axis.spatial(16, i_j_fused % 16)
"""

from __future__ import annotations

from tirc.analysis.arith import Analyzer
from tirc.analysis.block_var_domain import fold
from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.dtype import DataType
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import uses_var
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.primitives.split import check_plain_loop
from tirc.schedule.rebind import outer_domains, rebind, serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef


@primitive(
    Signature(
        "fuse",
        "Fuse",
        inputs=(Param("loops", Kind.LOOPS, variadic=True),),
        attrs=(optional("preserve_unit_iters", Kind.BOOL, True),),
        outputs="one",
        doc="Fuse perfectly nested loops, outermost first, into one loop.",
    )
)
def fuse(sch: Schedule, loops: list[SRef], preserve_unit_iters: bool = True) -> SRef:
    if not loops:
        raise ScheduleError("fuse needs at least one loop")
    state = sch.state_owning(loops[0])
    _check_nest(loops)
    nodes = [sref.loop for sref in loops]
    dtype = max((node.loop_var.dtype for node in nodes), key=lambda t: t.bits)
    extents = [_as_dtype(node.extent, dtype) for node in nodes]
    analyzer = Analyzer()
    total: PrimExpr = extents[0]
    for extent in extents[1:]:
        total = analyzer.simplify(E.Mul(total, extent))
    fused = Var("_".join(node.loop_var.name for node in nodes) + "_fused", dtype)
    analyzer.bind(fused, Range(IntImm(0, dtype), total))
    # Each old variable is `fused // lower % extent`, built with constant folding only and
    # not simplified: a binding the iterator map cannot normalize keeps this form (so
    # `x % 48 // 16` stays even where `x < 48`), as TVM leaves it. A unit loop is 0.
    # The products of inner extents multiply outer to inner (`q * r * s`), as TVM's do.
    mapping: dict[Var, PrimExpr] = {}
    for index, (node, extent) in enumerate(zip(nodes, extents, strict=True)):
        lower = _product(extents[index + 1 :], dtype)
        if isinstance(extent, IntImm) and extent.value == 1:
            value: PrimExpr = IntImm(0, dtype)
        elif index == 0:
            value = fold("floordiv", fused, lower)
        else:
            value = fold(
                "floordiv", fold("floormod", fused, _product(extents[index:], dtype)), lower
            )
        mapping[node.loop_var] = _as_dtype(value, node.loop_var.dtype)
    domains = outer_domains(loops[0])
    domains[fused] = Range(IntImm(0, dtype), total)
    body, reuse = rebind(nodes[-1].body, mapping, domains, bool(preserve_unit_iters))
    new = serial_loop(fused, total, body)
    state.replace(loops[0], new, reuse)
    return state.get_sref(new)


def _product(extents: list[PrimExpr], dtype: DataType) -> PrimExpr:
    """The extents multiplied outer to inner, simplified (`n * 128`, `q * r * s`)."""
    result: PrimExpr = IntImm(1, dtype)
    for extent in extents:
        result = fold("*", result, extent)
    return Analyzer().simplify(result)


def _check_nest(loops: list[SRef]) -> None:
    """Each loop plain, the parent of the next, whose only child is the next."""
    outer: SRef | None = None
    outer_vars: set[Var] = set()
    for sref in loops:
        if not sref.is_loop:
            raise ScheduleError(f"cannot fuse {describe(sref)}: it is not a loop", sref)
        node = sref.loop
        if node.annotations or node.thread_binding is not None:
            check_plain_loop(sref, "fuse")
        if outer is not None:
            if sref.parent is not outer:
                raise ScheduleError(
                    f"cannot fuse: {describe(outer)} is not the parent of {describe(sref)} "
                    "(fuse takes adjacent loops, outermost first)",
                    outer,
                    sref,
                )
            if outer.loop.body is not node:
                raise ScheduleError(
                    f"cannot fuse: {describe(sref)} is not the only child of {describe(outer)}",
                    outer,
                    sref,
                )
        check_plain_loop(sref, "fuse")
        if uses_var(node.extent, outer_vars):
            raise ScheduleError(
                f"cannot fuse: the extent of {describe(sref)} depends on an outer loop", sref
            )
        outer_vars.add(node.loop_var)
        outer = sref


def _as_dtype(expr: PrimExpr, dtype: DataType) -> PrimExpr:
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, IntImm):
        return IntImm(expr.value, dtype)
    return E.Cast(dtype, expr)
