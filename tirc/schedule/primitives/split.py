"""split: one loop becomes a nest of loops whose extents are the factors, outermost first.

One factor may be left out (`None`) and is inferred; when the factors cover more than the
extent, the blocks below get a predicate so no iteration runs twice or out of range.

    for i in range(128):              for i_0, i_1 in T.grid(26, 5):
        vi = T.axis.spatial(128, i) →     vi = T.axis.spatial(128, i_0 * 5 + i_1)
                                          T.where(i_0 * 5 + i_1 < 128)
"""

from __future__ import annotations

from tirc.analysis.arith import Analyzer
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import For, Stmt
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import const_value, outer_domains, rebind, serial_loop
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState
from tirc.text import script


@primitive(
    Signature(
        "split",
        "Split",
        inputs=(Param("loop", Kind.LOOP), Param("factors", Kind.INTS, variadic=True)),
        attrs=(
            optional("preserve_unit_iters", Kind.BOOL, True),
            optional("disable_predication", Kind.BOOL, False),
        ),
        outputs="many",
        doc="Split a loop into a nest of loops with the given extents (one may be null).",
    )
)
def split(
    sch: Schedule,
    loop: SRef,
    factors: list[int | None],
    preserve_unit_iters: bool = True,
    disable_predication: bool = False,
) -> list[SRef]:
    state = sch.state_owning(loop)
    node = loop.loop
    values = check_factors(factors, loop)
    check_plain_loop(loop, "split")
    extents = _extents(node, values, loop)
    return _rewrite(state, loop, extents, bool(preserve_unit_iters), bool(disable_predication))


def check_factors(
    factors: list[int | None], loop: SRef, primitive_name: str = "split"
) -> list[int | None]:
    """The factors as integers, None for the one to infer (null or -1); refuses non-integers,
    a second factor to infer and non-positive ones."""
    if not factors:
        raise ScheduleError(f"{primitive_name} needs at least one factor", loop)
    values: list[int | None] = []
    for position, factor in enumerate(factors):
        value = None if factor is None else const_value(factor)
        if factor is not None and value is None:
            raise ScheduleError(f"factor {position} is not an integer: {factor!r}", loop)
        values.append(None if value == -1 else value)
    if values.count(None) > 1:
        raise ScheduleError("only one factor may be inferred (null or -1)", loop)
    for position, value in enumerate(values):
        if value is not None and value <= 0:
            raise ScheduleError(
                f"the factors must be positive, but factor {position} is {value}", loop
            )
    return values


def check_plain_loop(loop: SRef, primitive_name: str) -> None:
    """Split, fuse and merge rebuild loops as plain serial loops from 0: refuse the others."""
    node = loop.loop
    if node.annotations or node.thread_binding is not None:
        raise ScheduleError(
            f"cannot {primitive_name} {describe(loop)}: it has annotations or a thread binding",
            loop,
        )
    if not (isinstance(node.min, IntImm) and node.min.value == 0):
        raise ScheduleError(
            f"cannot {primitive_name} {describe(loop)}: it does not start at 0", loop
        )


def _extents(node: For, values: list[int | None], loop: SRef) -> list[PrimExpr]:
    dtype = node.loop_var.dtype
    known = 1
    for value in values:
        known *= value or 1
    extent = node.extent
    analyzer = Analyzer()
    given = [value for value in values if value is not None]
    if len(given) == len(values):
        if not analyzer.can_prove(E.GE(IntImm(known, dtype), extent)):
            raise ScheduleError(
                f"the product of the factors ({known}) does not cover the loop's extent "
                f"{_text(extent)}",
                loop,
            )
        return [IntImm(value, dtype) for value in given]
    inferred = analyzer.simplify(
        E.FloorDiv(E.Add(extent, IntImm(known - 1, dtype)), IntImm(known, dtype))
    )
    return [inferred if value is None else IntImm(value, dtype) for value in values]


def _rewrite(
    state: ScheduleState,
    loop: SRef,
    extents: list[PrimExpr],
    preserve_unit_iters: bool,
    disable_predication: bool,
) -> list[SRef]:
    node = loop.loop
    old_var = node.loop_var
    dtype = old_var.dtype
    analyzer, prover = Analyzer(), Analyzer()
    new_vars = [Var(f"{old_var.name}_{index}", dtype) for index in range(len(extents))]
    combined: PrimExpr = IntImm(0, dtype)
    written: PrimExpr = IntImm(0, dtype)  # the same sum, unsimplified, for the predicate
    for var, extent in zip(new_vars, extents, strict=False):
        unit = isinstance(extent, IntImm) and extent.value == 1
        prover.bind(var, Range(IntImm(0, dtype), extent))
        if not unit:  # a preserved unit iterator stays in the binding, as a variable
            analyzer.bind(var, Range(IntImm(0, dtype), extent))
        part: PrimExpr = IntImm(0, dtype) if unit and not preserve_unit_iters else var
        combined = E.Add(E.Mul(combined, extent), part)
        written = arithmetic("+", arithmetic("*", written, extent), part)
    combined = analyzer.simplify(combined)
    guard = None
    if not disable_predication and not _covers_exactly(prover, combined, extents, node.extent):
        guard = E.LT(written, node.extent)  # as TVM writes it: `(i_0 * 4 + i_1) * 16 + i_2`
    domains = outer_domains(loop)
    for var, extent in zip(new_vars, extents, strict=False):
        domains[var] = Range(IntImm(0, dtype), extent)
    body, reuse = rebind(
        node.body, {old_var: combined}, domains, preserve_unit_iters, guard, {old_var: written}
    )
    nest: Stmt = body
    for var, extent in reversed(list(zip(new_vars, extents, strict=False))):
        nest = serial_loop(var, extent, nest)
    state.replace(loop, nest, reuse)
    outputs = []
    current: Stmt = nest
    for _ in new_vars:
        assert isinstance(current, For)
        outputs.append(state.get_sref(current))
        current = current.body
    return outputs


def _covers_exactly(
    prover: Analyzer, combined: PrimExpr, extents: list[PrimExpr], extent: PrimExpr
) -> bool:
    """Whether the new loops stay inside the old one, so that no predicate is needed.

    The combined value of loops of extents e1, ..., en runs over [0, e1 * ... * en), so
    `e1 * ... * en <= extent` suffices; this settles symbolic extents that bounds of the
    combined value cannot (`ceildiv(n, 4) * 4` split by 4: `i_0 * 4 + i_1 < (n + 3) // 4 * 4`).
    """
    if prover.can_prove(E.LT(combined, extent)):
        return True
    product = extents[0]
    for factor in extents[1:]:
        product = E.Mul(product, factor)
    return prover.can_prove(E.LE(product, extent))


def _text(expr: PrimExpr) -> str:
    return script(expr)
