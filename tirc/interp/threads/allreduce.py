"""`tvm_thread_allreduce` inside a `reduce_scope` attribute: a block-wide collective.

`tvm_thread_allreduce(n, v_1..v_n, cond, out_1..out_n, t_1..t_k)`: the threads that agree on
every thread index except the reduced ones t_1..t_k combine their values (those whose `cond`
holds, in thread order, from the reducer's identity) with the scope's CommReducer, and each of
them finds the results in element 0 of its out_i buffers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads.compilers import Calls, Stmts
from tirc.interp.threads.context import Code
from tirc.ir.expr import Call, CommReducer, Var
from tirc.ir.stmt import AttrStmt


@contextmanager
def enter_reduce_scope(compiler: Stmts, stmt: AttrStmt) -> Iterator[None]:
    """Defines the scope's reducer as a Python function for the all-reduces inside."""
    reducer = stmt.node
    ctx = compiler.ctx
    if not isinstance(reducer, CommReducer) or ctx.kernel is None:
        yield
        return
    combine = ctx.fresh("_combine")
    lhs = [ctx.bind(var) for var in reducer.lhs]
    rhs = [ctx.bind(var) for var in reducer.rhs]
    ctx.emit(f"def {combine}({', '.join(lhs + rhs)}):")
    with ctx.indented():
        results = [compiler.expr(result).text for result in reducer.result]
        ctx.emit(f"return ({', '.join(results)},)")
    identity = ctx.fresh("_identity")
    values = [compiler.expr(value).text for value in reducer.identity]
    ctx.emit(f"{identity} = ({', '.join(values)},)")
    ctx.kernel.reducers.append((combine, identity))
    try:
        yield
    finally:
        ctx.kernel.reducers.pop()


def compile_allreduce(compiler: Calls, call: Call) -> Code:
    ctx = compiler.ctx
    if ctx.kernel is None or not ctx.kernel.reducers:
        raise DiagnosticError.at(
            call.span, "T.tvm_thread_allreduce outside a kernel's reduce_scope"
        )
    count = call.args[0]
    size = int(getattr(count, "value", 1))
    values = [compiler.argument(arg).text for arg in call.args[1 : 1 + size]]
    condition = compiler.argument(call.args[1 + size]).text
    outputs = call.args[2 + size : 2 + 2 * size]
    reduced = call.args[2 + 2 * size :]
    tags = []
    for var in reduced:
        tag = ctx.kernel.thread_vars.get(var) if isinstance(var, Var) else None
        if tag is None:
            raise DiagnosticError.at(
                call.span,
                "T.tvm_thread_allreduce reduces over a variable that is not a thread index",
            )
        tags.append(tag)
    handles = []
    for output in outputs:
        data = output if isinstance(output, Var) else None
        if data is None or data not in ctx.names:
            raise DiagnosticError.at(
                call.span, "T.tvm_thread_allreduce writes to an unknown buffer"
            )
        types = sorted(ctx.data_types.get(data, set()), key=str)
        element = ctx.constant(types[0], str(types[0])) if types else "None"
        handles.append(f"({ctx.names[data]}, {element})")
    combine, identity = ctx.kernel.reducers[-1]
    site = ctx.site(call, "all-reduce")
    request = (
        f"(3, {site}, ({', '.join(values)},), {condition}, {tuple(tags)!r}, {combine}, {identity})"
    )
    return Code(f"_write_results((yield {request}), ({', '.join(handles)},))")
