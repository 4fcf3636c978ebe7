"""s-tir blocks: `with T.sblock("name"):`, then iteration variables (grouped into
`T.axis.remap` where bound to enclosing loops), `T.where`, regions, attributes, buffers, init."""

from __future__ import annotations

from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import IterType, IterVar, SBlock, SBlockRealize
from tirc.text.printing.buffers import buffer_call, define_buffer, end_of, region_text
from tirc.text.printing.emitter import Emitter
from tirc.text.printing.literals import quote
from tirc.text.printing.sameness import same_expr
from tirc.text.printing.values import format_attrs

_AXIS = {
    IterType.SPATIAL: "spatial",
    IterType.REDUCE: "reduce",
    IterType.SCAN: "scan",
    IterType.OPAQUE: "opaque",
}
_REMAP_LETTER = {IterType.SPATIAL: "S", IterType.REDUCE: "R"}


def is_true(expr: PrimExpr) -> bool:
    return type(expr) is IntImm and expr.value == 1


def print_realize(printer: Emitter, realize: SBlockRealize) -> None:
    block = realize.block
    printer.open(f"with T.sblock({quote(block.name)}):")
    _print_iter_vars(printer, block.iter_vars, realize.iter_values)
    if not is_true(realize.predicate):
        printer.line(f"T.where({printer.exprs.expr(realize.predicate)})")
    print_block_contents(printer, block)
    printer.close()


def print_block_contents(printer: Emitter, block: SBlock) -> None:
    """Everything after the iteration variables: regions, attributes, buffers, init, body."""
    printer.line(f"T.reads({', '.join(region_text(printer, r) for r in block.reads)})")
    printer.line(f"T.writes({', '.join(region_text(printer, r) for r in block.writes)})")
    if block.annotations.items:
        printer.line(f"T.sblock_attr({format_attrs(block.annotations, printer.exprs)})")
    print_alloc_buffers(printer, block)
    for match in block.match_buffers:
        source = region_text(printer, match.source)
        name = define_buffer(printer, match.buffer)
        printer.line(
            f"{name} = {buffer_call(printer, 'T.match_buffer', match.buffer, name, lead=(source,))}"
        )
    if block.init is not None:
        printer.open("with T.init():")
        printer.body(block.init)
        printer.close()
    printer.body(block.body)


def print_alloc_buffers(printer: Emitter, block: SBlock) -> None:
    for buffer in block.alloc_buffers:
        name = define_buffer(printer, buffer)
        printer.line(f"{name} = {buffer_call(printer, 'T.sblock_alloc_buffer', buffer, name)}")


def _print_iter_vars(
    printer: Emitter, iter_vars: tuple[IterVar, ...], values: tuple[PrimExpr, ...]
) -> None:
    group: list[int] = []
    for index, iter_var in enumerate(iter_vars):
        if _is_remappable(printer, iter_var, values[index]):
            group.append(index)
            continue
        _flush_remap(printer, group, iter_vars, values)
        _print_axis(printer, iter_var, values[index])
    _flush_remap(printer, group, iter_vars, values)


def _is_remappable(printer: Emitter, iter_var: IterVar, value: PrimExpr) -> bool:
    if iter_var.iter_type not in _REMAP_LETTER or type(value) is not Var:
        return False
    loop = printer.loops.get(value)
    dom = iter_var.dom
    if loop is None or dom is None:
        return False
    return same_expr(loop.min, dom.min) and same_expr(loop.extent, dom.extent)


def _flush_remap(
    printer: Emitter,
    group: list[int],
    iter_vars: tuple[IterVar, ...],
    values: tuple[PrimExpr, ...],
) -> None:
    if not group:
        return
    if len(group) == 1:
        _print_axis(printer, iter_vars[group[0]], values[group[0]])
    else:
        letters = "".join(_REMAP_LETTER[iter_vars[i].iter_type] for i in group)
        bindings = ", ".join(printer.exprs.expr(values[i]) for i in group)
        names = ", ".join(
            printer.names.define(iter_vars[i].var, iter_vars[i].var.name) for i in group
        )
        printer.line(f'{names} = T.axis.remap("{letters}", [{bindings}])')
    group.clear()


def _print_axis(printer: Emitter, iter_var: IterVar, value: PrimExpr) -> None:
    expr = printer.exprs.expr
    dom = iter_var.dom
    if dom is None:
        domain = "None"
    elif type(dom.min) is IntImm and dom.min.value == 0:
        domain = expr(dom.extent)
    else:
        domain = f"({expr(dom.min)}, {expr(end_of(dom.min, dom.extent))})"
    binding = expr(value)
    name = printer.names.define(iter_var.var, iter_var.var.name)
    kind = _AXIS.get(iter_var.iter_type, "opaque")
    printer.line(f"{name} = T.axis.{kind}({domain}, {binding})")
