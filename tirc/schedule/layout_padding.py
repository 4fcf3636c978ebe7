"""Padding of a layout transformation: where an index map's image is larger than the buffer
(`lambda i: (i // 4, i % 4)` over 14 elements covers 16), which new elements are padding,
and the block that fills them with the pad value.

The maps handled are those of splits: each final index is an initial variable, a constant, or
one of a pair `(i + o) // c`, `(i + o) % c` with o in [0, c); dimension i then pads from N to
ceil((N + o) / c) * c elements, o of them before its first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.functor import walk
from tirc.ir.stmt import BufferStore, For, IterType, IterVar, SBlock, SBlockRealize, Stmt
from tirc.ir.structural import expr_key
from tirc.ir.substitute import Substituter
from tirc.schedule.index_map import IndexMap
from tirc.schedule.rebind import serial_loop


def _splits(mapping: IndexMap) -> dict[Var, tuple[int, int, int, int]] | None:
    """For each initial variable split by the map: (factor, position of (i + o) // c, of
    (i + o) % c, offset o in [0, c)). None when the map is not made of variables, constants
    and such pairs."""
    parts: dict[Var, dict[str, tuple[int, int, int]]] = {}
    plain: set[Var] = set()
    for position, index in enumerate(mapping.final):
        variable = _variable(index, mapping)
        if variable is not None:
            plain.add(variable)
        elif isinstance(index, (E.FloorDiv, E.FloorMod)):
            shifted, divisor = _shifted(index.a, mapping), index.b
            if shifted is None or not (isinstance(divisor, IntImm) and divisor.value > 0):
                return None
            kind = "div" if isinstance(index, E.FloorDiv) else "mod"
            parts.setdefault(shifted[0], {})[kind] = (divisor.value, position, shifted[1])
        elif not isinstance(index, IntImm):
            return None
    result: dict[Var, tuple[int, int, int, int]] = {}
    for var, found in parts.items():
        if var in plain or set(found) != {"div", "mod"}:
            return None
        (factor, outer, offset), (other, inner, other_offset) = found["div"], found["mod"]
        if factor != other or offset != other_offset or not 0 <= offset < factor:
            return None
        result[var] = (factor, outer, inner, offset)
    return result


def _variable(expr: PrimExpr, mapping: IndexMap) -> Var | None:
    """The initial variable `expr` is, through the cast a legalized map may add."""
    if isinstance(expr, E.Cast):
        expr = expr.value
    return expr if isinstance(expr, Var) and expr in mapping.initial else None


def _shifted(expr: PrimExpr, mapping: IndexMap) -> tuple[Var, int] | None:
    """`expr` as an initial variable plus a constant (`i + 1`), or None."""
    variable = _variable(expr, mapping)
    if variable is not None:
        return variable, 0
    if isinstance(expr, E.Add) and isinstance(expr.b, IntImm):
        variable = _variable(expr.a, mapping)
        if variable is not None:
            return variable, expr.b.value
    return None


def padded_shape(mapping: IndexMap, shape: Sequence[PrimExpr]) -> tuple[PrimExpr, ...] | None:
    """The buffer's shape rounded up so that the map is a bijection onto its image (a
    dimension split with an offset o counts its o leading places), or None when the map is
    not a split map over constant extents."""
    splits = _splits(mapping)
    if splits is None:
        return None
    result: list[PrimExpr] = []
    for var, extent in zip(mapping.initial, shape, strict=True):
        if var not in splits:
            result.append(extent)
            continue
        if not isinstance(extent, IntImm):
            return None
        factor, _, _, offset = splits[var]
        result.append(IntImm(-(-(extent.value + offset) // factor) * factor, extent.dtype))
    return tuple(result)


def split_inverse(mapping: IndexMap, shape: Sequence[PrimExpr]) -> IndexMap | None:
    """The map back from the padded layout to the buffer's indices: the map's inverse over
    the padded shape, or for splits with offsets `(i + o) // c, (i + o) % c` the index
    `outer * c + inner - o` (which runs past the buffer's ends on the padding). None when
    the map is not a split map; raises IndexMapError when the inverse fails."""
    splits = _splits(mapping)
    padded = padded_shape(mapping, shape)
    if splits is None or padded is None:
        return None
    if not any(offset for _, _, _, offset in splits.values()):
        return mapping.inverse(padded)
    outputs = tuple(mapping.output_var(position) for position in range(len(mapping.final)))
    results: list[PrimExpr] = []
    for var in mapping.initial:
        if var in splits:
            factor, outer, inner, offset = splits[var]
            dtype = outputs[outer].dtype
            joined = E.Add(E.Mul(outputs[outer], IntImm(factor, dtype)), outputs[inner])
            results.append(E.Sub(joined, IntImm(offset, dtype)))
            continue
        positions = [p for p, index in enumerate(mapping.final) if _variable(index, mapping) is var]
        if len(positions) != 1:
            return None
        results.append(outputs[positions[0]])
    return IndexMap(outputs, tuple(results))


def padding_condition(
    mapping: IndexMap, shape: Sequence[PrimExpr], outputs: Sequence[PrimExpr]
) -> PrimExpr | None:
    """Where the new indices `outputs` address padding: for a dimension of N elements split
    by c with offset o into Q = ceil((N + o) / c) rows, the first row's o first places and
    the last row past its K = N + o - (Q - 1) * c first elements (`inner == K` where that is
    one place). None when nothing is padding."""
    splits = _splits(mapping) or {}
    condition: PrimExpr | None = None

    def add(part: PrimExpr) -> None:
        nonlocal condition
        condition = part if condition is None else E.Or(condition, part)

    for var, extent in zip(mapping.initial, shape, strict=True):
        if var not in splits or not isinstance(extent, IntImm):
            continue
        factor, outer, inner, offset = splits[var]
        dtype = outputs[outer].dtype
        if offset:
            first = E.EQ(outputs[outer], IntImm(0, dtype))
            add(E.And(first, E.LT(outputs[inner], IntImm(offset, dtype))))
        rows = -(-(extent.value + offset) // factor)
        if rows * factor == extent.value + offset:
            continue
        last = E.EQ(outputs[outer], IntImm(rows - 1, dtype))
        kept = extent.value + offset - (rows - 1) * factor
        if kept == factor - 1:  # one padded place: TVM's simplifier writes it `inner == c`
            add(E.And(last, E.EQ(outputs[inner], IntImm(kept, dtype))))
        else:
            add(E.And(last, E.LE(IntImm(kept, dtype), outputs[inner])))
    return condition


def padding_fill(
    buffer: Buffer, mapping: IndexMap, shape: Sequence[PrimExpr], pad_value: IndexMap
) -> Stmt:
    """`buffer_<name>_padding`: loops over the new shape, the block predicated on the
    padding condition, storing the pad value (a map of the new indices)."""
    loop_vars = tuple(
        Var(mapping.output_var(position).name, extent.dtype)
        for position, extent in enumerate(buffer.shape)
    )
    block_vars = tuple(Var(f"v_{var.name}", var.dtype) for var in loop_vars)
    condition = padding_condition(mapping, shape, loop_vars)
    assert condition is not None, "a padding fill for a map that pads nothing"
    value = pad_value.map(block_vars)
    store = BufferStore(buffer, value[0], block_vars)
    region = BufferRegion(buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in block_vars))
    iter_vars = tuple(
        IterVar(var, Range(IntImm(0, var.dtype), extent), IterType.SPATIAL)
        for var, extent in zip(block_vars, buffer.shape, strict=True)
    )
    block = SBlock(f"buffer_{buffer.name}_padding", iter_vars, (), (region,), store)
    nest: Stmt = SBlockRealize(loop_vars, condition, block)
    for var, extent in reversed(list(zip(loop_vars, buffer.shape, strict=True))):
        nest = serial_loop(var, extent, nest)
    return nest


def pad_in_producer(
    loop: For,
    old: Buffer,
    buffer: Buffer,
    mapping: IndexMap,
    shape: Sequence[PrimExpr],
    pad_value: IndexMap,
) -> tuple[For, dict[SBlock, SBlock]] | None:
    """TVM's first choice: the nest that `loop` heads iterates over the new shape instead and
    stores the pad value on the padding, where it has one of two forms (`_pad_block_nest`,
    `_pad_loop_nest`). Returns (new loop, the blocks it replaced mapped to their new
    versions), or None when the nest has neither form."""
    return _pad_block_nest(loop, old, buffer, mapping, shape, pad_value) or _pad_loop_nest(
        loop, old, buffer, mapping, shape, pad_value
    )


def _pad_block_nest(
    loop: For,
    old: Buffer,
    buffer: Buffer,
    mapping: IndexMap,
    shape: Sequence[PrimExpr],
    pad_value: IndexMap,
) -> tuple[For, dict[SBlock, SBlock]] | None:
    """When `loop` heads a perfect nest whose loops bind, in order, the
    iterators of the one block under it, and that block's leading iterators are the (new)
    buffer's pre-map indices over its old shape, the block iterates over the new shape
    instead and stores the pad value on the padding (accesses to `old`, the buffer before
    the map, become accesses to `buffer` after it):

        for i in range(14): B[vi // 4, vi % 4] = f(vi)     →
        for axis0, axis1 in T.grid(4, 4):
            B[v_axis0, v_axis1] = T.if_then_else(pad(v_axis0, v_axis1), 0, f(v_axis0 * 4 + v_axis1))

    None when the nest has another form."""
    loops: list[For] = [loop]
    while isinstance(loops[-1].body, For):
        loops.append(loops[-1].body)
    realize = loops[-1].body
    if not isinstance(realize, SBlockRealize) or not E.is_const_int(realize.predicate, 1):
        return None
    block = realize.block
    if len(realize.iter_values) != len(loops) or any(
        value is not node.loop_var or not E.is_const_int(node.min, 0)
        for value, node in zip(realize.iter_values, loops, strict=True)
    ):
        return None
    ndim = len(shape)
    leading = block.iter_vars[:ndim]
    if len(leading) != ndim or any(
        iv.iter_type is not IterType.SPATIAL
        or iv.dom is None
        or not E.is_const_int(iv.dom.min, 0)
        or not _same(iv.dom.extent, extent)
        or not _same(node.extent, extent)
        for iv, extent, node in zip(leading, shape, loops[:ndim], strict=True)
    ):
        return None
    old_vars = tuple(iv.var for iv in leading)
    accesses: list[BufferStore | BufferLoad] = []
    walk(
        block,
        lambda n: (
            accesses.append(n)
            if isinstance(n, (BufferStore, BufferLoad)) and n.buffer is old
            else None
        ),
    )
    inverse = split_inverse(mapping, shape)
    if inverse is None:  # not a split map: there is no padding to store
        return None
    if not accesses or any(expr_key(n.indices) != expr_key(old_vars) for n in accesses):
        return None
    loop_vars = tuple(
        Var(mapping.output_var(position).name, extent.dtype)
        for position, extent in enumerate(buffer.shape)
    )
    new_vars = tuple(Var(f"v_{var.name}", var.dtype) for var in loop_vars)
    old_values = inverse.map(new_vars)
    condition = padding_condition(mapping, shape, new_vars)
    pad = pad_value.map(new_vars)[0]
    rewrite = _ProducerRewrite(
        dict(zip(old_vars, old_values, strict=True)), old, buffer, new_vars, condition, pad
    )
    rest = block.iter_vars[ndim:]
    iter_vars = tuple(
        IterVar(var, Range(IntImm(0, var.dtype), extent), IterType.SPATIAL)
        for var, extent in zip(new_vars, buffer.shape, strict=True)
    ) + tuple(rewrite.visit(iv) for iv in rest)
    writes = tuple(
        BufferRegion(buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in new_vars))
        if region.buffer is old
        else rewrite.visit(region)
        for region in block.writes
    )
    reads = tuple(
        BufferRegion(buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in new_vars))
        if region.buffer is old
        else rewrite.visit(region)
        for region in block.reads
    )
    new_block = dataclasses.replace(
        block,
        iter_vars=iter_vars,
        reads=reads,
        writes=writes,
        body=rewrite.visit(block.body),
        init=None if block.init is None else rewrite.visit(block.init),
    )
    outer = loops[ndim:]
    new_realize = SBlockRealize(
        loop_vars + tuple(node.loop_var for node in outer), IntImm(1, dt.BOOL), new_block
    )
    nest: Stmt = new_realize
    for node in reversed(outer):
        nest = dataclasses.replace(node, body=nest)
    for var, extent in reversed(list(zip(loop_vars, buffer.shape, strict=True))):
        nest = serial_loop(var, extent, nest)
    assert isinstance(nest, For)
    return nest, {block: new_block}


def _pad_loop_nest(
    loop: For,
    old: Buffer,
    buffer: Buffer,
    mapping: IndexMap,
    shape: Sequence[PrimExpr],
    pad_value: IndexMap,
) -> tuple[For, dict[SBlock, SBlock]] | None:
    """When the nest's first loops, perfectly nested and in the buffer's dimension order, run
    over the old shape and every access to `old` in it (stores, loads, the regions of opaque
    blocks) is at those loop variables, the loops run over the new shape instead; what is
    under them is kept, each store to the buffer keeping the pad value on the padding:

        for i in range(14):                  for axis0, axis1 in T.grid(4, 4):
            B[i] = 0                     →       B[axis0, axis1] = T.if_then_else(pad, 0, 0)
            for k in range(32):                  for k in range(32):
                B[i] = B[i] + A[i, k]                B[axis0, axis1] = T.if_then_else(pad, 0,
                                                         B[axis0, axis1] + A[axis0 * 4 + axis1, k])

    An access through block iterators, or loops in another order, is not this form (TVM then
    fills the padding in a block of its own)."""
    ndim = len(shape)
    loops: list[For] = [loop]
    while len(loops) < ndim and isinstance(loops[-1].body, For):
        loops.append(loops[-1].body)
    if len(loops) != ndim or any(
        not E.is_const_int(node.min, 0) or not _same(node.extent, extent)
        for node, extent in zip(loops, shape, strict=True)
    ):
        return None
    old_vars = tuple(node.loop_var for node in loops)
    body = loops[-1].body
    indices: list[tuple[PrimExpr, ...]] = []

    def collect(node: object) -> None:
        if isinstance(node, (BufferStore, BufferLoad)) and node.buffer is old:
            indices.append(node.indices)
        elif isinstance(node, BufferRegion) and node.buffer is old:
            is_point = all(E.is_const_int(part.extent, 1) for part in node.region)
            indices.append(tuple(part.min for part in node.region) if is_point else ())

    walk(body, collect)
    if not indices or any(
        len(found) != ndim or any(a is not b for a, b in zip(found, old_vars, strict=True))
        for found in indices
    ):
        return None
    inverse = split_inverse(mapping, shape)
    if inverse is None:
        return None
    loop_vars = tuple(
        Var(mapping.output_var(position).name, extent.dtype)
        for position, extent in enumerate(buffer.shape)
    )
    values = inverse.map(loop_vars)
    condition = padding_condition(mapping, shape, loop_vars)
    pad = pad_value.map(loop_vars)[0]
    rewrite = _ProducerRewrite(
        dict(zip(old_vars, values, strict=True)), old, buffer, loop_vars, condition, pad
    )
    nest: Stmt = rewrite.visit(body)
    for var, extent in reversed(list(zip(loop_vars, buffer.shape, strict=True))):
        nest = serial_loop(var, extent, nest)
    assert isinstance(nest, For)
    return nest, rewrite.blocks


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    return expr_key(a) == expr_key(b) or (
        isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value
    )


class _ProducerRewrite(Substituter):
    """Old iterators become their values over the new ones; the buffer's element (in
    accesses and in the point regions opaque blocks declare) is addressed by the new
    iterators, its stores keep the pad value on the padding, and each block rewritten is
    remembered in `blocks`."""

    def __init__(
        self,
        mapping: dict[Var, PrimExpr],
        old: Buffer,
        buffer: Buffer,
        new_vars: tuple[Var, ...],
        condition: PrimExpr | None,
        pad: PrimExpr,
    ):
        super().__init__(mapping)
        self.old, self.buffer, self.new_vars = old, buffer, new_vars
        self.condition, self.pad = condition, pad
        self.blocks: dict[SBlock, SBlock] = {}  # the blocks rewritten, to their new versions

    def visit_BufferLoad(self, node: BufferLoad) -> PrimExpr:
        if node.buffer is self.old:
            return dataclasses.replace(node, buffer=self.buffer, indices=self.new_vars)
        return self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        value = self.visit(node.value)
        if self.condition is not None:
            value = E.Call(value.dtype, "if_then_else", (self.condition, self.pad, value))
        return dataclasses.replace(node, buffer=self.buffer, value=value, indices=self.new_vars)

    def visit_BufferRegion(self, node: BufferRegion) -> BufferRegion:
        if node.buffer is not self.old:
            return self.generic_visit(node)
        return BufferRegion(
            self.buffer, tuple(Range(var, IntImm(1, var.dtype)) for var in self.new_vars)
        )

    def visit_SBlock(self, node: SBlock) -> SBlock:
        new: SBlock = self.generic_visit(node)
        if new is not node:
            self.blocks[node] = new
        return new
