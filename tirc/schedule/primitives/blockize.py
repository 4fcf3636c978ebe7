"""blockize: the loops below a loop, with the block they run, become an inner block inside a new
outer block whose iterators count the tiles (TVM's naming: `vi_o` outside, `vi_i` inside).
Given a list of consecutive sibling blocks instead, the loops between each and their common
parent become the inside of one outer block `outer_B_C_` (build_blockized_blocks).

Each binding is divided into `outer * E + inner` over the loops outside and inside the given
loop; a reduction's init moves to the outer block, over the loops its bindings need. Loops
of symbolic extent take part where an index reads them whole or reads the loops of one side
only (that index goes whole to that side); predicates are written again simplified.

Refused where TVM accepts, on purpose: a reduction whose predicate reads a loop its moved
init does not run under (TVM's init then reads a free variable), a loop that does not
start at 0 (a partition's: TVM binds the inner iterator outside its domain), and an inner
binding offset by an outer iterator that is not a multiple of the inner extent
(`ko * 8 + i2_1` blockized at i2_1: TVM binds `k_i` to it over a domain of 8). A predicate
that bounds a fused iterator stays on the outer block, where TVM drops it and lets the
block run past its domain.

    for i_0, i_1 in T.grid(8, 16):                 for i_0 in range(8):
        with T.sblock("B"):                            with T.sblock("B_o"):
            vi = T.axis.spatial(128,                       vi_o = T.axis.spatial(8, i_0)
                     i_0 * 16 + i_1)          →            for i_1 in range(16):
            B[vi] = A[vi]                                      with T.sblock("B"):
                                                                   vi_i = T.axis.spatial(16, i_1)
                                                                   B[vi_o * 16 + vi_i] = ...
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.subspace import Division, DivisionError, divide_subspace
from tirc.analysis.region_bound import relax_regions
from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.functor import uses_var
from tirc.ir.stmt import For, IterType, IterVar, SBlock, SBlockRealize, SeqStmt, Stmt, seq
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute
from tirc.schedule.access_simplify import simplify_accesses, substitute_simplified
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.rebind import outer_domains
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState


@primitive(
    Signature(
        "blockize",
        "Blockize",
        inputs=(Param("target", Kind.BLOCK_OR_LOOP),),
        attrs=(optional("preserve_unit_iters", Kind.BOOL, True),),
        outputs="one",
        doc="Make the subtree of a loop (or a list of sibling blocks) the body of a new block.",
    )
)
def blockize(sch: Schedule, target: SRef | list[SRef], preserve_unit_iters: bool = True) -> SRef:
    if isinstance(target, list):
        state = sch.state_owning(target[0]) if target else None
        if state is None:
            raise ScheduleError("blockize needs at least one block in its list")
        parent, new_parent, reuse, outer_block = build_blockized_blocks(
            state, target, bool(preserve_unit_iters)
        )
        state.replace(parent, new_parent, reuse)
        return state.get_sref(outer_block)
    if not target.is_loop:
        raise ScheduleError(
            f"blockize takes a loop or a list of blocks, not {describe(target)}", target
        )
    state = sch.state_owning(target)
    outer, reuse = build_blockized(state, target, bool(preserve_unit_iters))
    state.replace(target, outer, reuse)
    return state.get_sref(outer.block)


@dataclass(frozen=True)
class _Nest:
    loops: tuple[For, ...]  # from the given loop down, outermost first
    realize: SBlockRealize


def _single_block_nest(loop: SRef) -> _Nest:
    """The chain of loops below `loop` (itself included) down to the one block they run."""
    loops: list[For] = []
    stmt: Stmt = loop.loop
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not isinstance(stmt, SBlockRealize):
        raise ScheduleError(
            f"cannot blockize {describe(loop)}: the loops below it must be a chain that runs "
            f"exactly one block, but {describe_stmt(stmt)} is there",
            loop,
        )
    return _Nest(tuple(loops), stmt)


_STMT_WORDS = {"SeqStmt": "a sequence of statements", "IfThenElse": "an if statement"}


def describe_stmt(stmt: Stmt) -> str:
    kind = type(stmt).__name__
    return _STMT_WORDS.get(kind, f"a {kind} statement")


def build_blockized(
    state: ScheduleState, loop: SRef, preserve_unit_iters: bool
) -> tuple[SBlockRealize, dict[SBlock, SBlock]]:
    """The outer block realize that replaces `loop`, and the old block → inner block reuse."""
    nest = _single_block_nest(loop)
    realize, block = nest.realize, nest.realize.block
    block_sref = state.get_sref(block)
    inner_loops = {node.loop_var for node in nest.loops}
    try:
        division = divide_subspace(
            realize.iter_values,
            outer_domains(block_sref),
            inner_loops,
            realize.predicate,
            preserve_unit_iters,
            _extents(block),
        )
    except DivisionError as error:
        raise ScheduleError(
            f'the bindings of block "{block.name}" cannot be blockized at {describe(loop)}: '
            f"{error}",
            loop,
            block_sref,
        ) from None

    outer_vars: list[IterVar] = []
    outer_values: list[PrimExpr] = []
    inner_vars: list[IterVar] = []
    inner_values: list[PrimExpr] = []
    mapping: dict[Var, PrimExpr] = {}
    for iter_var, outer, inner in zip(block.iter_vars, division.outer, division.inner, strict=True):
        var = iter_var.var
        dtype = var.dtype
        outer_var = Var(f"{var.name}_o", dtype)
        outer_vars.append(_iter_var(outer_var, outer.extent, iter_var.iter_type))
        outer_values.append(outer.binding)
        if inner.extent == 1:  # all of it is outside: the outer iterator stands for it
            mapping[var] = _whole_outside(outer_var, outer.extent, preserve_unit_iters)
            continue
        inner_var = Var(f"{var.name}_i", dtype)
        inner_vars.append(_iter_var(inner_var, inner.extent, iter_var.iter_type))
        inner_values.append(inner.binding)
        if outer.extent == 1:
            mapping[var] = inner_var
        else:
            assert isinstance(inner.extent, int)  # a symbolic loop is wholly one side
            mapping[var] = E.Add(E.Mul(outer_var, IntImm(inner.extent, dtype)), inner_var)

    reads = tuple(substitute(region, mapping) for region in block.reads)
    writes = tuple(substitute(region, mapping) for region in block.writes)
    init = None if block.init is None else substitute(block.init, mapping)
    # the body's expressions simplified over the inner iterators, as TVM's substitution does
    within = Analyzer()
    for inner_iter in inner_vars:
        if inner_iter.dom is not None:
            within.bind(inner_iter.var, inner_iter.dom)
    inner_block = dataclasses.replace(
        block,
        iter_vars=tuple(inner_vars),
        # A reduction's inner block reads what it accumulates into: its init has moved out.
        reads=writes + reads if init is not None else reads,
        writes=writes,
        body=substitute_simplified(block.body, mapping, within),
        init=None,
        match_buffers=substitute(block.match_buffers, mapping),
    )
    # the accesses simplified over the inner iterators' domains (`v_co_i // 128` is 0 for
    # v_co_i in [0, 128)), as TVM writes them
    inner_block = simplify_accesses(inner_block, Analyzer(), bind_unit_iterators=False)
    true = IntImm(1, realize.predicate.dtype)
    inner_realize = SBlockRealize(
        tuple(inner_values), division.inner_predicate or true, inner_block
    )
    body: Stmt = inner_realize
    for node in reversed(nest.loops):
        body = dataclasses.replace(node, body=body)

    if init is not None:
        _check_init_predicate(inner_realize, init, nest.loops, loop, block_sref)
    domains = {iv.var: iv.dom for iv in inner_vars if iv.dom is not None}
    outer_block = SBlock(
        f"{block.name}_o",
        tuple(outer_vars),
        relax_regions(reads, domains),
        relax_regions(writes, domains),
        body,
        init=None if init is None else _outer_init(init, inner_realize, nest.loops, block.name),
    )
    outer_realize = SBlockRealize(
        tuple(outer_values), division.outer_predicate or true, outer_block
    )
    return outer_realize, {block: inner_block}


def _extents(block: SBlock) -> list[PrimExpr]:
    """The extents of a block's iterators (what their bindings range over)."""
    return [
        iv.dom.extent if iv.dom is not None else IntImm(1, iv.var.dtype) for iv in block.iter_vars
    ]


def _iter_var(var: Var, extent: int | PrimExpr, iter_type: IterType) -> IterVar:
    size = IntImm(extent, var.dtype) if isinstance(extent, int) else extent
    return IterVar(var, Range(IntImm(0, var.dtype), size), iter_type)


def _check_init_predicate(
    inner: SBlockRealize, init: Stmt, loops: tuple[For, ...], loop: SRef, block: SRef
) -> None:
    """The init, moved to the outer block, runs over the inner loops its data-parallel
    iterators read: refused where the predicate reads others (TVM leaves them free there)."""
    kept = [
        value
        for iter_var, value in zip(inner.block.iter_vars, inner.iter_values, strict=True)
        if iter_var.iter_type is IterType.SPATIAL and uses_var(init, iter_var.var)
    ]
    dropped = [
        node.loop_var.name
        for node in loops
        if uses_var(inner.predicate, node.loop_var)
        and not any(uses_var(value, node.loop_var) for value in kept)
    ]
    if dropped:
        raise ScheduleError(
            f"cannot blockize {describe(loop)}: the predicate of {describe(block)} reads "
            f"{'loops' if len(dropped) > 1 else 'loop'} {', '.join(dropped)}, which its init, "
            "moved to the outer block, does not run under (TVM leaves them free there)",
            loop,
            block,
        )


def _outer_init(init: Stmt, inner: SBlockRealize, loops: tuple[For, ...], name: str) -> Stmt:
    """The init as a block of its own, over the data-parallel inner iterators it uses and
    fresh copies of the loops their bindings read."""
    mapping: dict[Var, PrimExpr] = {}
    iter_vars: list[IterVar] = []
    values: list[PrimExpr] = []
    for iter_var, value in zip(inner.block.iter_vars, inner.iter_values, strict=True):
        if iter_var.iter_type is IterType.SPATIAL and uses_var(init, iter_var.var):
            fresh = Var(f"{iter_var.var.name}_init", iter_var.var.dtype)
            mapping[iter_var.var] = fresh
            iter_vars.append(dataclasses.replace(iter_var, var=fresh))
            values.append(value)
    block = SBlock(
        f"{name}_init",
        tuple(iter_vars),
        (),
        inner.block.writes,
        init,
    )
    stmt: Stmt = SBlockRealize(tuple(values), inner.predicate, block)
    for loop in reversed(loops):
        if any(uses_var(value, loop.loop_var) for value in values):
            fresh_loop = Var(loop.loop_var.name, loop.loop_var.dtype)
            mapping[loop.loop_var] = fresh_loop
            stmt = dataclasses.replace(loop, loop_var=fresh_loop, body=stmt)
    # The fresh variables' definitions already hold them: only their uses change.
    return substitute(stmt, mapping)


# -- a list of sibling blocks ----------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    """One of the blocks: the statement of the common parent's body that holds it, and the
    loops from there down to it."""

    block: SRef
    top: Stmt
    loops: tuple[For, ...]
    realize: SBlockRealize


def build_blockized_blocks(
    state: ScheduleState, blocks: list[SRef], preserve_unit_iters: bool
) -> tuple[SRef, For | SBlock, dict[SBlock, SBlock], SBlock]:
    """(the common parent, its rewrite, the old block → inner block reuse, the outer block)
    for blockizing `blocks`: consecutive statements of one parent, each a chain of loops
    down to one of them, all dividing into the same outer iteration space."""
    parent, members = _members(blocks)
    divided = [_divide(state, member, preserve_unit_iters) for member in members]
    first_block, first = members[0].realize.block, divided[0]
    outer_vars: list[IterVar] = []
    for iter_var, part in zip(first_block.iter_vars, first.outer, strict=True):
        if iter_var.iter_type is IterType.REDUCE:
            raise ScheduleError(
                f"cannot blockize several blocks together: reduction iterator "
                f'{iter_var.var.name} of block "{first_block.name}" would be outside',
                members[0].block,
            )
        outer_vars.append(_iter_var(Var(f"{iter_var.var.name}_o", iter_var.var.dtype),
                                    part.extent, iter_var.iter_type))  # fmt: skip
    reuse: dict[SBlock, SBlock] = {}
    stmts: list[Stmt] = []
    reads: list[BufferRegion] = []
    writes: list[BufferRegion] = []
    for member, division in zip(members, divided, strict=True):
        _check_same_outer(member, division, members[0], first)
        inner, inner_reads, inner_writes = _inner_block(
            member, division, outer_vars, preserve_unit_iters
        )
        reuse[member.realize.block] = inner.block
        body: Stmt = inner
        for node in reversed(member.loops):
            body = dataclasses.replace(node, body=body)
        stmts.append(body)
        reads.extend(inner_reads)
        writes.extend(inner_writes)
    names = "_".join(member.realize.block.name for member in members)
    outer_block = SBlock(
        f"outer_{names}_", tuple(outer_vars), _union(reads), _union(writes), seq(*stmts)
    )
    true = IntImm(1, members[0].realize.predicate.dtype)
    outer = SBlockRealize(
        tuple(part.binding for part in first.outer), first.outer_predicate or true, outer_block
    )
    return parent, _spliced(parent, members, outer), reuse, outer_block


def _members(blocks: list[SRef]) -> tuple[SRef, list[_Member]]:
    for block in blocks:
        if not block.is_block:
            raise ScheduleError(f"blockize takes a loop or a list of blocks, not {describe(block)}",
                                block)  # fmt: skip
    if len({id(block) for block in blocks}) != len(blocks):
        raise ScheduleError("the blocks to blockize are not distinct", *blocks)
    scope = blocks[0].enclosing_block()
    if any(block.enclosing_block() is not scope for block in blocks):
        raise ScheduleError("the blocks to blockize must be in the same scope", *blocks)
    parent = _common_parent(blocks)
    body = parent.node.body
    items = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    members: dict[int, _Member] = {}
    for block in blocks:
        top, loops, realize = _chain_to(block, parent)
        position = next((i for i, item in enumerate(items) if item is top), None)
        if position is None or position in members:
            raise ScheduleError(
                f"{describe(block)} is not alone in a statement of {describe(parent)}'s body: "
                "each block to blockize must be the only thing of the loops that hold it",
                block,
                parent,
            )
        members[position] = _Member(block, top, loops, realize)
    positions = sorted(members)
    if positions != list(range(positions[0], positions[0] + len(positions))):
        raise ScheduleError(
            f"the blocks to blockize must be consecutive statements of {describe(parent)}",
            *blocks,
        )
    return parent, [members[position] for position in positions]


def _common_parent(blocks: list[SRef]) -> SRef:
    chain = blocks[0].ancestors()
    for block in blocks[1:]:
        above = {id(node) for node in block.ancestors()}
        chain = [node for node in chain if id(node) in above]
    return chain[0]


def _chain_to(block: SRef, parent: SRef) -> tuple[Stmt, tuple[For, ...], SBlockRealize]:
    """The statement of `parent`'s body holding `block`, when it is a chain of loops (or
    nothing) down to it, and those loops."""
    node = block
    while node.parent is not parent:
        assert node.parent is not None  # `parent` is above `block`
        node = node.parent
    loops: list[For] = []
    stmt: Stmt = node.loop if node.is_loop else _realize_in(parent, block.block)
    top = stmt
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    if not (isinstance(stmt, SBlockRealize) and stmt.block is block.block):
        raise ScheduleError(
            f"the loops above {describe(block)} hold more than it ({describe_stmt(stmt)}): "
            "blockize would take the rest in too",
            block,
        )
    return top, tuple(loops), stmt


def _realize_in(parent: SRef, block: SBlock) -> Stmt:
    body = parent.node.body
    items = body.stmts if isinstance(body, SeqStmt) else (body,)
    for item in items:
        if isinstance(item, SBlockRealize) and item.block is block:
            return item
    raise AssertionError("a block directly under its parent has a realize there")


def _divide(state: ScheduleState, member: _Member, preserve_unit_iters: bool) -> Division:
    realize = member.realize
    try:
        return divide_subspace(
            realize.iter_values,
            outer_domains(member.block),
            {node.loop_var for node in member.loops},
            realize.predicate,
            preserve_unit_iters,
            _extents(realize.block),
        )
    except DivisionError as error:
        raise ScheduleError(
            f"the bindings of {describe(member.block)} cannot be blockized: {error}",
            member.block,
        ) from None


def _check_same_outer(
    member: _Member, division: Division, first_member: _Member, first: Division
) -> None:
    same = len(division.outer) == len(first.outer) and all(
        a.extent == b.extent and expr_key(a.binding) == expr_key(b.binding)
        for a, b in zip(division.outer, first.outer, strict=True)
    )
    if not same:
        raise ScheduleError(
            f"{describe(member.block)} and {describe(first_member.block)} do not share their "
            "iteration outside the blockized loops, so one outer block cannot run both",
            member.block,
            first_member.block,
        )


def _whole_outside(
    outer_var: Var, outer_extent: PrimExpr | int, preserve_unit_iters: bool
) -> PrimExpr:
    """What stands for an iterator that lies wholly outside: its outer iterator, or 0 where
    that iterator has one value and unit iterators are not preserved (TVM's rule)."""
    if outer_extent == 1 and not preserve_unit_iters:
        return IntImm(0, outer_var.dtype)
    return outer_var


def _inner_block(
    member: _Member, division: Division, outer_vars: list[IterVar], preserve_unit_iters: bool
) -> tuple[SBlockRealize, tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """The block over its inner iterators (the outer ones substituted), and its regions
    relaxed over them."""
    block = member.realize.block
    inner_vars: list[IterVar] = []
    inner_values: list[PrimExpr] = []
    mapping: dict[Var, PrimExpr] = {}
    for iter_var, outer_var, outer, inner in zip(
        block.iter_vars, outer_vars, division.outer, division.inner, strict=True
    ):
        var, dtype = iter_var.var, iter_var.var.dtype
        if inner.extent == 1:
            mapping[var] = _whole_outside(outer_var.var, outer.extent, preserve_unit_iters)
            continue
        inner_var = Var(f"{var.name}_i", dtype)
        inner_vars.append(_iter_var(inner_var, inner.extent, iter_var.iter_type))
        inner_values.append(inner.binding)
        if outer.extent == 1:
            mapping[var] = inner_var
        else:
            assert isinstance(inner.extent, int)  # a symbolic loop is wholly one side
            mapping[var] = E.Add(E.Mul(outer_var.var, IntImm(inner.extent, dtype)), inner_var)
    new_block = dataclasses.replace(substitute(block, mapping), iter_vars=tuple(inner_vars))
    true = IntImm(1, member.realize.predicate.dtype)
    realize = SBlockRealize(tuple(inner_values), division.inner_predicate or true, new_block)
    domains = {iv.var: iv.dom for iv in inner_vars if iv.dom is not None}
    return (
        realize,
        relax_regions(new_block.reads, domains),
        relax_regions(new_block.writes, domains),
    )


def _union(regions: list[BufferRegion]) -> tuple[BufferRegion, ...]:
    """One bounding region per buffer; the last block's buffers first (TVM's order)."""
    analyzer = Analyzer()
    merged: dict[int, BufferRegion] = {}
    for region in regions:
        known = merged.get(id(region.buffer))
        if known is None:
            merged[id(region.buffer)] = region
            continue
        ranges = []
        for a, b in zip(known.region, region.region, strict=True):
            low = analyzer.simplify(E.Min(a.min, b.min))
            high = analyzer.simplify(E.Max(E.Add(a.min, a.extent), E.Add(b.min, b.extent)))
            ranges.append(Range(low, analyzer.simplify(E.Sub(high, low))))
        merged[id(region.buffer)] = BufferRegion(region.buffer, tuple(ranges))
    return tuple(reversed(merged.values()))


def _spliced(parent: SRef, members: list[_Member], outer: SBlockRealize) -> For | SBlock:
    holder = parent.node
    body = holder.body
    tops = {id(member.top) for member in members}
    items: list[Stmt] = []
    for item in body.stmts if isinstance(body, SeqStmt) else (body,):
        if id(item) in tops:
            if not items or items[-1] is not outer:
                items.append(outer)
        else:
            items.append(item)
    return dataclasses.replace(holder, body=seq(*items))
