"""Any single IR node as text, for messages (`script`): free variables print by their names,
undeclared, and each node class has its spelling in one dispatch table."""

from __future__ import annotations

from tirc.ir.buffer import Buffer, BufferRegion, MatchBufferRegion, Range
from tirc.ir.expr import PrimExpr
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Dispatch
from tirc.ir.stmt import IterVar, Stmt
from tirc.text.printing.buffers import buffer_call, define_buffer, region_text
from tirc.text.printing.func import print_function
from tirc.text.printing.stmt import StmtPrinter
from tirc.text.printing.values import format_value

FRAGMENTS: Dispatch[StmtPrinter, [], str] = Dispatch("fragment")


def print_fragment(node: object) -> str:
    printer = StmtPrinter(declare_free_vars=False)
    rule = FRAGMENTS.get(type(node))
    return rule(printer, node) if rule is not None else _value(printer, node)


@FRAGMENTS.register(PrimExpr)
def _expr(printer: StmtPrinter, node: PrimExpr) -> str:
    return printer.exprs.expr(node)


@FRAGMENTS.register(Stmt)
def _stmt(printer: StmtPrinter, node: Stmt) -> str:
    printer.body(node)
    return "\n".join(printer.lines)


@FRAGMENTS.register(PrimFunc)
def _function(printer: StmtPrinter, node: PrimFunc) -> str:
    print_function(printer, node, "main")
    return "\n".join(printer.lines)


@FRAGMENTS.register(Buffer)
def _buffer(printer: StmtPrinter, node: Buffer) -> str:
    name = define_buffer(printer, node)
    return f"{name} = {buffer_call(printer, 'T.Buffer', node, name, always_dtype=True)}"


@FRAGMENTS.register(BufferRegion)
def _region(printer: StmtPrinter, node: BufferRegion) -> str:
    return region_text(printer, node)


@FRAGMENTS.register(Range)
def _range(printer: StmtPrinter, node: Range) -> str:
    return f"T.Range({printer.exprs.expr(node.min)}, {printer.exprs.expr(node.extent)})"


@FRAGMENTS.register(MatchBufferRegion)
def _match(printer: StmtPrinter, node: MatchBufferRegion) -> str:
    source = region_text(printer, node.source)
    name = define_buffer(printer, node.buffer)
    call = buffer_call(printer, "T.match_buffer", node.buffer, name, lead=(source,))
    return f"{name} = {call}"


@FRAGMENTS.register(IterVar)
def _iter_var(printer: StmtPrinter, node: IterVar) -> str:
    dom = "None" if node.dom is None else _range(printer, node.dom)
    kind = node.iter_type.name
    return f"T.iter_var({printer.exprs.expr(node.var)}, {dom}, {kind!r}, {node.thread_tag!r})"


def _value(printer: StmtPrinter, node: object) -> str:
    """Attrs, dtypes, Python values: as they print inside attributes."""
    return format_value(node, printer.exprs)
