"""Values of the types tirc reads, prints and verifies but does not compute with (int4,
uint4, float4/float6, the float8 variants other than e4m3fn and e5m2, scalable vectors:
`DataType.is_computed`):
where a program makes or holds one, running or compiling it is refused there, located."""

from __future__ import annotations

from tirc.diagnostics import Diagnostic, DiagnosticError, Span
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.expr import Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import child_fields
from tirc.ir.node import Node


def stored_only_uses(func: PrimFunc) -> list[Diagnostic]:
    """One error per type the function uses but tirc cannot compute with, at its first use
    (a buffer parameter's, else the first node of that type in the body)."""
    found: dict[DataType | str, Diagnostic] = {}

    def note(dtype: object, node: Node, span: Span | None) -> None:
        if not isinstance(dtype, DataType) or dtype.is_computed:
            return
        key: DataType | str = "scalable" if dtype.scalable else dtype.element
        if key in found:
            return
        what = f"buffer '{node.name}'" if isinstance(node, Buffer) else "a value"
        read = "scalable vectors (lanes `T.vscale() * k`)" if dtype.scalable else dtype.element
        message = (
            f"{what} of type {dtype}: tirc reads and prints {read} but neither "
            "the interpreter nor a backend computes with " + ("them" if dtype.scalable else "it")
        )
        found[key] = Diagnostic.error(message, node.span or span)

    def visit(item: object, span: Span | None) -> None:
        if isinstance(item, tuple):
            for child in item:
                visit(child, span)
        elif isinstance(item, Node):
            span = item.span or span  # a constant the parser made has its expression's
            note(getattr(item, "dtype", None), item, span)
            if not isinstance(item, (Buffer, Var)):
                for name in child_fields(type(item)):
                    visit(getattr(item, name), span)

    for _, buffer in func.buffer_map:
        note(buffer.dtype, buffer, buffer.span)
    visit(func.body, func.span)
    return list(found.values())


def refuse_stored_only(module: IRModule | PrimFunc) -> None:
    """Raise the errors of `stored_only_uses` for every function, if there are any."""
    functions = [module] if isinstance(module, PrimFunc) else [f for _, f in module.functions]
    problems = [problem for func in functions for problem in stored_only_uses(func)]
    if problems:
        raise DiagnosticError(problems)
