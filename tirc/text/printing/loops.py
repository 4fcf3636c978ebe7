"""For loops: `T.grid` over perfectly nested plain loops (serial, from 0, step 1, no
annotations, extents free of the grid's own variables), `range` for one, `T.<kind>` else."""

from __future__ import annotations

from tirc.ir.canonical import difference
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import For, ForKind
from tirc.ir.structural import structural_equal
from tirc.text.printing.buffers import end_of, vars_in
from tirc.text.printing.emitter import Emitter
from tirc.text.printing.literals import quote
from tirc.text.printing.values import format_attrs

_KIND_FUNCTION = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}


def is_zero(expr: PrimExpr) -> bool:
    return type(expr) is IntImm and expr.value == 0


def has_unit_step(loop: For) -> bool:
    step = loop.step
    return step is None or (type(step) is IntImm and step.value == 1)


def is_plain(loop: For) -> bool:
    return (
        loop.kind is ForKind.SERIAL
        and is_zero(loop.min)
        and not loop.annotations.items
        and has_unit_step(loop)
    )


def is_collected(extent: PrimExpr) -> bool:
    """Whether the parser's `range(extent)` keeps `extent` as it is."""
    dtype = extent.dtype
    if type(extent) is IntImm or type(extent) is Var or not (dtype.is_integer and dtype.is_scalar):
        return True
    return structural_equal(difference(extent, IntImm(0, dtype), order="written"), extent)


def grid_of(loop: For) -> list[For]:
    """The loops `for a, b, ... in T.grid(...)` covers, starting at `loop`."""
    grid: list[For] = []
    grid_vars: set[Var] = set()
    node: object = loop
    while type(node) is For and is_plain(node):
        extent = node.extent
        if (
            grid_vars
            and type(extent) is not IntImm
            and any(v in grid_vars for v in vars_in(extent))
        ):
            break
        grid.append(node)
        grid_vars.add(node.loop_var)
        node = node.body
    return grid


def print_for(printer: Emitter, loop: For) -> None:
    grid = grid_of(loop)
    if len(grid) > 1 or (grid and not is_collected(loop.extent)):
        # `range(e)` reads back with e's like terms collected (`n - -4` as `n + 4`, as TVM
        # reads it), `T.grid(e)` as written: an extent that is not collected keeps T.grid.
        _print_grid(printer, grid[:1] if len(grid) == 1 else grid)
        return
    head = _loop_head(printer, loop)
    printer.names.push()
    printer.loops[loop.loop_var] = loop
    name = printer.names.define(loop.loop_var, loop.loop_var.name)
    printer.begin(f"for {name} in {head}:")
    printer.body(loop.body)
    del printer.loops[loop.loop_var]
    printer.close()


def _print_grid(printer: Emitter, grid: list[For]) -> None:
    extents = ", ".join(printer.exprs.expr(loop.extent) for loop in grid)
    printer.names.push()
    names = []
    for loop in grid:
        printer.loops[loop.loop_var] = loop
        names.append(printer.names.define(loop.loop_var, loop.loop_var.name))
    printer.begin(f"for {', '.join(names)} in T.grid({extents}):")
    printer.body(grid[-1].body)
    for loop in grid:
        del printer.loops[loop.loop_var]
    printer.close()


def _loop_head(printer: Emitter, loop: For) -> str:
    """The iterable of a single loop, evaluated before its variable is defined."""
    expr = printer.exprs.expr
    if is_zero(loop.min) and has_unit_step(loop):
        bounds = [expr(loop.extent)]
    else:
        bounds = [expr(loop.min), expr(end_of(loop.min, loop.extent))]
    step = None if has_unit_step(loop) or loop.step is None else expr(loop.step)
    if loop.kind is ForKind.SERIAL and not loop.annotations.items:
        if step is not None:
            bounds.append(step)
        return f"range({', '.join(bounds)})"
    options = bounds
    if loop.thread_binding is not None:
        options.append(f"thread={quote(loop.thread_binding.thread_tag)}")
    if loop.annotations.items:
        options.append(f"annotations={format_attrs(loop.annotations, printer.exprs)}")
    if step is not None:
        options.append(f"step={step}")
    return f"{_KIND_FUNCTION[loop.kind]}({', '.join(options)})"
