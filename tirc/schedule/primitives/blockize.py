"""blockize: the loops below a loop, with the block they run, become an inner block inside a new
outer block whose iterators count the tiles (TVM's naming: `vi_o` outside, `vi_i` inside).

Each binding is divided into `outer * E + inner` over the loops outside and inside the given
loop; a reduction's init moves to the outer block, over the loops its bindings need.

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
from tirc.analysis.arith.int_set import relax_range
from tirc.analysis.arith.subspace import DivisionError, divide_subspace
from tirc.ir import expr as E
from tirc.ir.buffer import BufferRegion, Range
from tirc.ir.expr import IntImm, PrimExpr, Var
from tirc.ir.stmt import For, IterType, IterVar, SBlock, SBlockRealize, Stmt
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.primitives import primitive
from tirc.schedule.properties import uses_var
from tirc.schedule.rebind import outer_domains
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef


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
        raise ScheduleError(
            "blockize of a list of blocks is not supported yet: give the loop above them",
            *target,
        )
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
    state: object, loop: SRef, preserve_unit_iters: bool
) -> tuple[SBlockRealize, dict[SBlock, SBlock]]:
    """The outer block realize that replaces `loop`, and the old block → inner block reuse."""
    nest = _single_block_nest(loop)
    realize, block = nest.realize, nest.realize.block
    block_sref = state.get_sref(block)  # type: ignore[attr-defined]
    inner_loops = {node.loop_var for node in nest.loops}
    try:
        division = divide_subspace(
            realize.iter_values,
            outer_domains(block_sref),
            inner_loops,
            realize.predicate,
            preserve_unit_iters,
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
            mapping[var] = outer_var
            continue
        inner_var = Var(f"{var.name}_i", dtype)
        inner_vars.append(_iter_var(inner_var, inner.extent, iter_var.iter_type))
        inner_values.append(inner.binding)
        if outer.extent == 1:
            mapping[var] = inner_var
        else:
            mapping[var] = E.Add(E.Mul(outer_var, IntImm(inner.extent, dtype)), inner_var)

    reads = tuple(substitute(region, mapping) for region in block.reads)
    writes = tuple(substitute(region, mapping) for region in block.writes)
    init = None if block.init is None else substitute(block.init, mapping)
    inner_block = dataclasses.replace(
        block,
        iter_vars=tuple(inner_vars),
        # A reduction's inner block reads what it accumulates into: its init has moved out.
        reads=writes + reads if init is not None else reads,
        writes=writes,
        body=substitute(block.body, mapping),
        init=None,
        match_buffers=substitute(block.match_buffers, mapping),
    )
    true = IntImm(1, realize.predicate.dtype)  # type: ignore[attr-defined]
    inner_realize = SBlockRealize(
        tuple(inner_values), division.inner_predicate or true, inner_block
    )
    body: Stmt = inner_realize
    for node in reversed(nest.loops):
        body = dataclasses.replace(node, body=body)

    domains = {iv.var: iv.dom for iv in inner_vars if iv.dom is not None}
    outer_block = SBlock(
        f"{block.name}_o",
        tuple(outer_vars),
        _relax_regions(reads, domains),
        _relax_regions(writes, domains),
        body,
        init=None if init is None else _outer_init(init, inner_realize, nest.loops, block.name),
    )
    outer_realize = SBlockRealize(
        tuple(outer_values), division.outer_predicate or true, outer_block
    )
    return outer_realize, {block: inner_block}


def _iter_var(var: Var, extent: int, iter_type: IterType) -> IterVar:
    return IterVar(var, Range(IntImm(0, var.dtype), IntImm(extent, var.dtype)), iter_type)


def _relax_regions(
    regions: tuple[BufferRegion, ...], domains: dict[Var, Range]
) -> tuple[BufferRegion, ...]:
    """The regions as the inner iterators range over their domains."""
    analyzer = Analyzer()
    for var, domain in domains.items():
        analyzer.bind(var, domain)
    result = []
    for region in regions:
        ranges = []
        for dim, item in enumerate(region.region):
            relaxed = relax_range(item, domains, analyzer)
            if relaxed is None:
                extent = region.buffer.shape[dim]
                relaxed = Range(IntImm(0, extent.dtype), extent)  # type: ignore[attr-defined]
            ranges.append(relaxed)
        result.append(BufferRegion(region.buffer, tuple(ranges)))
    return tuple(result)


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
