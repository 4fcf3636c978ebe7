"""s-tir blocks: what `SBlockRealize` means.

When the predicate (`T.where`) holds: bind each iteration variable to its value (an error if
the value leaves the variable's domain), allocate the block's buffers, make its match_buffer
views, run `init` if every reduction variable is at its domain's minimum (TVM's rule; a block
with `init` and no reduction variable runs it every time), then the body. Reads and writes
regions are declarations for the scheduler; they do not change what the block computes.
"""

from __future__ import annotations

from tirc.interp.semantics import interval
from tirc.interp.semantics.affine import affine_form
from tirc.interp.threads.access import add_terms, multiply
from tirc.interp.threads.compilers import Stmts
from tirc.interp.threads.context import Code, Layout
from tirc.ir.buffer import MatchBufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import IterType, SBlock, SBlockRealize


def compile_block_realize(compiler: Stmts, realize: SBlockRealize) -> None:
    predicate = realize.predicate
    if isinstance(predicate, IntImm) and predicate.value:
        _block_body(compiler, realize)
        return
    condition = compiler.ctx.hoist(compiler.expr(predicate))
    compiler.ctx.emit(f"if {condition.text}:")
    with compiler.ctx.indented():
        _block_body(compiler, realize)


def _block_body(compiler: Stmts, realize: SBlockRealize) -> None:
    block = realize.block
    ctx = compiler.ctx
    for iter_var, value in zip(block.iter_vars, realize.iter_values, strict=True):
        code = ctx.hoist(compiler.expr(value))
        if code.is_atom:
            ctx.alias(iter_var.var, code)
        else:
            name = ctx.bind(iter_var.var, code.low, code.high)
            ctx.emit(f"{name} = {code.text}")
            ctx.define(iter_var.var)
            if code.pure:
                ctx.removable.add(name)
        affine = affine_form(ctx, value)
        if affine is not None and "_wrap" not in code.text:
            ctx.affine[iter_var.var] = affine
        else:
            ctx.affine.pop(iter_var.var, None)
        _check_domain(compiler, realize, iter_var.var, iter_var.dom)
    for buffer in block.alloc_buffers:
        compiler.allocate(buffer, block)
    for match in block.match_buffers:
        _match_buffer(compiler, match)
    if block.init is not None:
        _init(compiler, block)
    compiler.compile(block.body)


def _check_domain(compiler: Stmts, realize: SBlockRealize, var: Var, dom: object) -> None:
    if not isinstance(dom, Range):
        return
    value = compiler.expr(var)
    low = compiler.expr(dom.min)
    extent = compiler.expr(dom.extent)
    if low.constant is not None and extent.constant is not None:
        if interval.within(
            (value.low, value.high), low.constant, low.constant + extent.constant - 1
        ):
            return
    end = add_terms([low, extent])
    block = realize.block
    site = compiler.ctx.site(realize, f"binding of {var.name} in block {block.name}")
    compiler.ctx.emit(f"if not {low.text} <= {value.text} < {end.text}:")
    with compiler.ctx.indented():
        message = f"block '{block.name}': {var.name} = %d is outside its domain [%d, %d)"
        compiler.ctx.emit(f"_fault({site}, {message!r} % ({value.text}, {low.text}, {end.text}))")


def _init(compiler: Stmts, block: SBlock) -> None:
    assert block.init is not None
    conditions = []
    for iter_var in block.iter_vars:
        if iter_var.iter_type is IterType.REDUCE and iter_var.dom is not None:
            value = compiler.expr(iter_var.var)
            low = compiler.expr(iter_var.dom.min)
            conditions.append(
                Code(
                    f"({value.text} == {low.text})",
                    0,
                    1,
                    pure=value.pure and low.pure,
                    slot=value.slot,
                )
            )
    if not conditions:
        compiler.compile(block.init)
        return
    # reduction variables are usually inner loops: test the outer ones once, outside them
    conditions.sort(key=lambda code: code.slot.order if code.slot is not None else 0)
    test = conditions[0]
    for condition in conditions[1:]:
        operands = [test, condition]
        slot = compiler.exprs.combine(operands)
        test = Code(
            f"({operands[0].text} and {operands[1].text})",
            0,
            1,
            pure=test.pure and condition.pure,
            slot=slot,
        )
    compiler.ctx.emit(f"if {compiler.ctx.hoist(test).text}:")
    with compiler.ctx.indented():
        compiler.compile(block.init)


def _match_buffer(compiler: Stmts, match: MatchBufferRegion) -> None:
    """buffer = match_buffer(source[region]): a view of the region, sharing its memory.

    The view's dimensions are the region's trailing ones (leading region extents are 1); its
    strides are the source's, its offset the source element at the region's minimum. Variables
    in the view's shape, strides and elem_offset are bound to those values.
    """
    ctx = compiler.ctx
    buffer, source = match.buffer, match.source
    access = compiler.exprs.access
    source_layout = access.layout(source.buffer)
    handle = ctx.names[source_layout.data]
    scope = ctx.scopes.get(source_layout.data, source.buffer.scope)
    compiler.bind_handle(buffer.data, handle, scope, is_storage=source_layout.data in ctx.storages)

    terms = [source_layout.offset]
    for region, stride in zip(source.region, source_layout.strides, strict=True):
        terms.append(multiply(compiler.expr(region.min), stride))
    offset = add_terms(terms)
    if not offset.is_atom:
        name = ctx.fresh(f"{buffer.name}_offset")
        ctx.emit(f"{name} = {offset.text}")
        offset = Code(name, offset.low, offset.high, pure=True, slot=ctx.mark())

    skipped = len(source.region) - buffer.ndim
    strides = source_layout.strides[skipped:]
    extents = [compiler.expr(r.extent) for r in source.region[skipped:]]
    shape = []
    for declared, extent in zip(buffer.shape, extents, strict=False):
        shape.append(_bind_or_use(compiler, declared, extent))
    for declared, stride in zip(buffer.strides, strides, strict=False):
        _bind_or_use(compiler, declared, stride)
    if buffer.elem_offset is not None:
        _bind_or_use(compiler, buffer.elem_offset, offset)
    ctx.layouts[buffer] = Layout(buffer.data, offset, tuple(strides), tuple(shape))


def _bind_or_use(compiler: Stmts, declared: PrimExpr, actual: Code) -> Code:
    """A variable not yet bound takes the actual value; anything else is used as written."""
    if isinstance(declared, Var) and declared not in compiler.ctx.names:
        if actual.is_atom:
            compiler.ctx.alias(declared, actual)
        else:
            name = compiler.ctx.bind(declared, actual.low, actual.high)
            compiler.ctx.emit(f"{name} = {actual.text}")
            compiler.ctx.define(declared)
        return compiler.expr(declared)
    return compiler.expr(declared)
