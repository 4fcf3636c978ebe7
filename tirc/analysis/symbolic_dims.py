"""Index dimensions read by one iteration variable of non-constant domain.

The iterator map (tirc.analysis.arith.iter_map) needs constant extents. A variable of
symbolic extent that an index reads whole and alone (`v` or `v + base`, the base free of
iteration variables) still maps onto its dimension bijectively, whatever its extent, with
the inverse `v = value - base`. compute_at / reverse_compute_at (solving block variable
domains) and reverse_compute_inline (inverting the consumer's indices) set such dimensions
aside and give the rest to the iterator map:

    indices (0, v_ax0, v_ax1), v_ax0 in [0, n), v_ax1 in [0, 2048)
      -> {1: (v_ax0, 0)}; the map proper sees (0, v_ax1) over v_ax1 alone
"""

from __future__ import annotations

from collections.abc import Mapping

from tirc.ir import expr as E
from tirc.ir.buffer import Range
from tirc.ir.expr import IntImm, PrimExpr, Var, is_const_int
from tirc.ir.functor import vars_in


def is_constant(dom: Range) -> bool:
    return isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm)


def lone_symbolic_dims(
    indices: list[PrimExpr], var_ranges: Mapping[Var, Range]
) -> dict[int, tuple[Var, PrimExpr]] | None:
    """The dimensions indexed by an iteration variable of non-constant domain, as
    `(var, base)` for the index `var + base`, each variable in one dimension only; None when
    a symbolic-domain variable is used any other way (or its domain does not start at 0)."""
    symbolic = {var for var, dom in var_ranges.items() if not is_constant(dom)}
    if not symbolic:
        return {}
    found: dict[int, tuple[Var, PrimExpr]] = {}
    used: set[Var] = set()
    for dim, index in enumerate(indices):
        mentioned = vars_in(index) & set(var_ranges)
        if not mentioned & symbolic:
            continue
        var, base = _var_plus_base(index)
        if var is None or var not in symbolic or mentioned != {var} or var in used:
            return None
        if not is_const_int(var_ranges[var].min, 0):
            return None
        used.add(var)
        found[dim] = (var, base)
    return found


def _var_plus_base(index: PrimExpr) -> tuple[Var | None, PrimExpr]:
    dtype = index.dtype
    if isinstance(index, Var):
        return index, IntImm(0, dtype)
    if isinstance(index, E.Add):
        if isinstance(index.a, Var):
            return index.a, index.b
        if isinstance(index.b, Var):
            return index.b, index.a
    return None, IntImm(0, dtype)
