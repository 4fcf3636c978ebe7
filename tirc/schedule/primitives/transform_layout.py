"""transform_layout: store a buffer in a new layout given by an index map; every access to it
in the scope where it is defined (the function, for a parameter) goes through the map.

The buffer is the `buffer_index`-th read (type 0) or write (type 1) of the block. The map must
be invertible over the buffer's shape, unless `assume_injective_transform` (a dimension of
symbolic extent may only be the highest digit of an output: `lambda i, j: (i * 16 + j,)` over
`(n, 16)` is, `(16, n)` is not, as TVM's iterator map decides); a map whose image
is larger than the buffer (padding: `i % c` spans c, so `i // 8, i % 8` over 2 elements
gives shape (1, 8)) needs a `pad_value`: the buffer's producer nest then iterates over the
new shape and stores it on the padding where its loops or block iterators are the buffer's
indices, else a block after the producer stores it there (`buffer_A_padding`, predicated on
the padded elements).

A parameter accessed by a block inside another block is transformed as any other, where
TVM 0.27 looks for the function at the inner scope and fails; so is a buffer whose shape
mixes int64 and int32 extents, where TVM's legalized map mixes the two types in one index
and fails an internal check.

    A = T.alloc_buffer((64,))                 A = T.alloc_buffer((16, 4))
    A[vi] = ...                        →      A[vi // 4, vi % 4] = ...
    (index map: lambda i: (i // 4, i % 4))
"""

from __future__ import annotations

import dataclasses
import math

from tirc.analysis.arith import Analyzer
from tirc.analysis.arith.iter_map import normalize_iter_map
from tirc.analysis.regions import infer_access_regions
from tirc.ir import expr as E
from tirc.ir.arith import arithmetic, match_types
from tirc.ir.buffer import Buffer, BufferRegion, Range
from tirc.ir.dtype import INT32
from tirc.ir.expr import BufferLoad, IntImm, PrimExpr, Var
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, walk
from tirc.ir.stmt import BufferStore, For, SBlock, SeqStmt, Stmt
from tirc.ir.structural import expr_key
from tirc.ir.substitute import substitute
from tirc.schedule.errors import ScheduleError
from tirc.schedule.index_map import IndexMap, IndexMapError, parse_index_map
from tirc.schedule.layout_padding import (
    pad_in_producer,
    padded_shape,
    padding_fill,
    split_inverse,
)
from tirc.schedule.primitives import primitive
from tirc.schedule.schedule import Schedule, describe
from tirc.schedule.signature import Kind, Param, Signature, optional
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState
from tirc.text import script

_KINDS = {0: ("read", "reads"), 1: ("write", "writes")}


@primitive(
    Signature(
        "transform_layout",
        "TransformLayout",
        inputs=(Param("block", Kind.BLOCK), Param("index_map", Kind.INDEX_MAP)),
        attrs=(
            Param("buffer_index", Kind.INT),
            Param("buffer_index_type", Kind.VALUE),  # 0 or "read", 1 or "write"
            optional("pad_value", Kind.INDEX_MAP, None),
            optional("assume_injective_transform", Kind.BOOL, False),
        ),
        doc="Store a buffer of the block in the layout an index map gives.",
    )
)
def transform_layout(
    sch: Schedule,
    block: SRef,
    index_map: str | IndexMap,
    buffer_index: int,
    buffer_index_type: int | str,
    pad_value: str | IndexMap | None = None,
    assume_injective_transform: bool = False,
) -> None:
    state = sch.state_owning(block)
    buffer = access_buffer(block, int(buffer_index), _index_type(buffer_index_type, block))
    mapping = _as_map(index_map, buffer)
    if len(mapping.initial) != buffer.ndim:
        raise ScheduleError(
            f"the index map takes {len(mapping.initial)} indices but buffer {buffer.name} has "
            f"{buffer.ndim} dimensions",
            block,
        )
    padding = None if pad_value is None else _as_map(pad_value, buffer)
    _check_pad_value(padding, buffer, block)
    scope = _defining_scope(state, block, buffer)
    new_shape = _new_shape(mapping, buffer, block)
    pads = False
    if not assume_injective_transform:
        pads = _check_invertible(mapping, buffer, new_shape, padding, block)
    new_buffer = dataclasses.replace(buffer, shape=new_shape)
    source = scope.block
    reuse: dict[SBlock, SBlock] = {}
    if pads:
        assert padding is not None
        source = _padded(source, buffer, new_buffer, mapping, padding, reuse, scope, block)
    rewriter = _Rewriter(buffer, new_buffer, mapping)
    new_scope = rewriter.visit(source)
    reuse = {old: rewriter.reuse.get(new, new) for old, new in reuse.items()} | rewriter.reuse
    state.replace(scope, new_scope, reuse)
    _rebind_parameter(state, buffer, new_buffer)


def _padded(
    scope: SBlock,
    old: Buffer,
    new: Buffer,
    mapping: IndexMap,
    padding: IndexMap,
    reuse: dict[SBlock, SBlock],
    scope_ref: SRef,
    block: SRef,
) -> SBlock:
    """The scope with the padding filled: the statement that writes the buffer (a loop nest
    at the scope's top level) iterates over the new shape when it can (TVM's first choice),
    else a padding block follows it."""
    body = scope.body
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    writers = [index for index, stmt in enumerate(stmts) if _writes(stmt, old)]
    if len(writers) != 1:
        raise ScheduleError(
            f"padding buffer {old.name} with a pad_value needs one statement of "
            f"{describe(scope_ref)} that writes it, found {len(writers)}",
            block,
        )
    position = writers[0]
    producer = stmts[position]
    rewritten = None
    if isinstance(producer, For):
        rewritten = pad_in_producer(producer, old, new, mapping, old.shape, padding)
    if rewritten is not None:
        stmts[position], replaced = rewritten
        reuse.update(replaced)
    else:
        stmts.insert(position + 1, padding_fill(new, mapping, old.shape, padding))
    return dataclasses.replace(scope, body=SeqStmt(tuple(stmts)))


def _writes(stmt: Stmt, buffer: Buffer) -> bool:
    found: list[BufferStore] = []
    walk(
        stmt,
        lambda n: found.append(n) if isinstance(n, BufferStore) and n.buffer is buffer else None,
    )
    return bool(found)


def access_buffer(block: SRef, index: int, kind: int) -> Buffer:
    """The `index`-th buffer the block reads (kind 0) or writes (kind 1)."""
    word, field = _KINDS[kind]
    regions = getattr(block.block, field)
    if not 0 <= index < len(regions):
        raise ScheduleError(
            f"{describe(block)} has {len(regions)} {word} regions, so buffer index {index} "
            "is out of range",
            block,
        )
    return regions[index].buffer


def _index_type(value: int | str, block: SRef) -> int:
    named = {"read": 0, "write": 1}
    kind = named.get(value, value) if isinstance(value, str) else value
    if kind not in _KINDS:
        raise ScheduleError(
            f"buffer_index_type must be 0 (read) or 1 (write), not {value!r}", block
        )
    return int(kind)


def _as_map(text: str | IndexMap, buffer: Buffer) -> IndexMap:
    mapping = (
        text if isinstance(text, IndexMap) else parse_index_map(text, dtype_hint=buffer.index_dtype)
    )
    return mapping.legalized([extent.dtype for extent in buffer.shape])


def _check_pad_value(padding: IndexMap | None, buffer: Buffer, block: SRef) -> None:
    if padding is None:
        return
    if len(padding.final) != 1:
        raise ScheduleError(
            f"the pad value must give one value, it gives {len(padding.final)}", block
        )
    dtype = padding.final[0].dtype
    if dtype != buffer.dtype:
        raise ScheduleError(
            f"buffer {buffer.name} has elements of type {buffer.dtype}, but the pad value "
            f"{padding} is of type {dtype}",
            block,
        )


def _defining_scope(state: ScheduleState, block: SRef, buffer: Buffer) -> SRef:
    """The block that allocates the buffer, or the root block for a function parameter."""
    node: SRef | None = block
    root = block
    while node is not None:
        if node.is_block:
            root = node
            if any(item is buffer for item in node.block.alloc_buffers):
                return node
            if any(match.buffer is buffer for match in node.block.match_buffers):
                raise ScheduleError(
                    f"buffer {buffer.name} is a region of another buffer (T.match_buffer) "
                    f"in {describe(node)}: transform the buffer it views instead",
                    node,
                )
        node = node.parent
    return root


def _new_shape(mapping: IndexMap, buffer: Buffer, block: SRef) -> tuple:
    try:
        return mapping.map_shape(buffer.shape)
    except IndexMapError as error:
        raise ScheduleError(
            f"the index map does not apply to buffer {buffer.name}: {error}", block
        ) from None


def _check_invertible(
    mapping: IndexMap,
    buffer: Buffer,
    new_shape: tuple,
    padding: IndexMap | None,
    block: SRef,
) -> bool:
    """True when the map pads the buffer (and a pad value was given to fill the padding).
    A map pads whenever its image holds more elements than the buffer, even where it is
    invertible on the buffer (`i // 8, i % 8` over 2 elements gives shape (1, 8)), as TVM
    decides."""
    reason: str | None = None
    try:
        mapping.inverse(buffer.shape)
    except IndexMapError as error:
        reason = str(error)
    if _grows(buffer.shape, new_shape):
        shapes = f"{_shape_text(buffer.shape)} to {_shape_text(new_shape)}"
        if padding is None:
            raise ScheduleError(
                f"the index map {mapping} takes buffer {buffer.name} from shape {shapes}, which "
                "would introduce padding; give a pad_value (or assume_injective_transform)",
                block,
            )
        padded = padded_shape(mapping, buffer.shape)
        try:
            if padded is not None and not _grows(padded, new_shape):
                if split_inverse(mapping, buffer.shape) is not None:
                    return True
        except IndexMapError:
            pass
        raise ScheduleError(
            f"padding buffer {buffer.name} (shape {shapes}) with a pad_value is supported for "
            "maps made of its indices and pairs `(i + o) // c, (i + o) % c` only",
            block,
        )
    if reason is None:
        return False
    raise ScheduleError(
        f"the index map {mapping} is not invertible over buffer {buffer.name}: {reason}", block
    )


def _grows(old: tuple, new: tuple) -> bool:
    """Whether a buffer of shape `new` has more elements than one of shape `old`: compared
    as numbers once the symbolic dimensions both have cancel, else where the two products
    are not provably equal (a dimension of 2 split by 4 beside one of extent n: `n * 1 * 4`
    is not `n * 2`)."""
    old_rest: list[PrimExpr] = []
    new_rest = list(new)
    for extent in old:  # the dimensions both shapes have cancel (`(m, n)` to `(n, m)`)
        keys = [expr_key(other) for other in new_rest]
        if not isinstance(extent, IntImm) and expr_key(extent) in keys:
            new_rest.pop(keys.index(expr_key(extent)))
        else:
            old_rest.append(extent)
    old_numbers = [e.value for e in old_rest if isinstance(e, IntImm)]
    new_numbers = [e.value for e in new_rest if isinstance(e, IntImm)]
    if len(old_numbers) == len(old_rest) and len(new_numbers) == len(new_rest):
        return math.prod(new_numbers) > math.prod(old_numbers)
    old_size, new_size = match_types(_product(tuple(old_rest)), _product(tuple(new_rest)))
    return not Analyzer().can_prove_equal(new_size, old_size)


def _narrowed(domains: dict[Var, Range], conditions: list[PrimExpr]) -> dict[Var, Range]:
    """The domains cut by the if_then_else conditions an access is under, where each is a
    conjunction of constant bounds on those iterators (`1 <= vh and vh < 15`): TVM's
    iterator maps read such a predicate as the iterator's range, so `vh - 1` runs from 0.
    Any other condition leaves the domains as they are, as TVM retries without it."""
    bounds: dict[Var, tuple[int, int]] = {}
    for var, domain in domains.items():
        if not (isinstance(domain.min, IntImm) and isinstance(domain.extent, IntImm)):
            continue
        bounds[var] = (domain.min.value, domain.min.value + domain.extent.value)
    pending = list(conditions)
    while pending:
        condition = pending.pop()
        if isinstance(condition, E.And):
            pending += [condition.a, condition.b]
            continue
        bound = _constant_bound(condition)
        if bound is None or bound[0] not in bounds:
            return domains
        var, low, high = bound
        old_low, old_high = bounds[var]
        bounds[var] = (max(old_low, low), min(old_high, high))
    result = dict(domains)
    for var, (low, high) in bounds.items():
        if high <= low:
            return domains
        dtype = var.dtype
        result[var] = Range(IntImm(low, dtype), IntImm(high - low, dtype))
    return result


def _constant_bound(condition: PrimExpr) -> tuple[Var, int, int] | None:
    """(v, low, high) for `c <= v`, `v < c` and their mirrors: v in [low, high)."""
    big = 1 << 62
    if not isinstance(condition, (E.LT, E.LE, E.GT, E.GE)):
        return None
    kind = {E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}[type(condition)]
    a, b = condition.a, condition.b
    if isinstance(b, Var) and isinstance(a, IntImm):
        a, b = b, a
        kind = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[kind]
    if not (isinstance(a, Var) and isinstance(b, IntImm)):
        return None
    value = b.value
    if kind == "<":
        return a, -big, value
    if kind == "<=":
        return a, -big, value + 1
    if kind == ">":
        return a, value + 1, big
    return a, value, big


def _simplify_keeping_base(analyzer: Analyzer, index: PrimExpr) -> PrimExpr:
    """`index` of an iterator map's normal form simplified under the iterators' ranges, its
    constant base kept as the normal form adds it (`v2 * 14 + v3 + -15`, as TVM's iterator-map
    simplification leaves it, not `v2 * 14 + v3 - 15`)."""
    if isinstance(index, E.Add) and isinstance(index.b, IntImm):
        rest = analyzer.simplify(index.a)
        if not isinstance(rest, IntImm):
            return E.Add(rest, index.b)
    return analyzer.simplify(index)


def _product(shape: tuple) -> PrimExpr:
    size: PrimExpr = IntImm(1, INT32)
    for extent in shape:
        size = arithmetic("*", size, extent)
    return size


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(script(extent) for extent in shape) + ")"


class _Rewriter(Mutator):
    """Every access to `old` becomes an access to `new` at the mapped indices; the regions
    blocks declare for it are inferred again from their bodies (as TVM does)."""

    def __init__(self, old: Buffer, new: Buffer, mapping: IndexMap):
        self.old, self.new, self.mapping = old, new, mapping
        self.analyzer = Analyzer()  # knows no ranges: the map is simplified as written
        self.domains: dict[Var, Range] = {}  # loops and block iterators around the access
        self.conditions: list[PrimExpr] = []  # the if_then_else branches the access is under
        self.reuse: dict[SBlock, SBlock] = {}

    def visit_Call(self, node: E.Call) -> E.Call:
        if node.op != "if_then_else" or len(node.args) != 3:
            new: E.Call = self.generic_visit(node)
            return new
        condition = self.visit(node.args[0])
        branches = []
        for guard, arg in ((condition, node.args[1]), (E.Not(condition), node.args[2])):
            self.conditions.append(guard)
            branches.append(self.visit(arg))
            self.conditions.pop()
        args = (condition, *branches)
        if all(a is b for a, b in zip(args, node.args, strict=True)):
            return node
        return dataclasses.replace(node, args=args)

    def visit_For(self, node: For) -> For:
        self.domains[node.loop_var] = Range(node.min, node.extent)
        return self.generic_visit(node)

    def indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        """The mapped indices, then in iterator-map normal form over the ranges around them
        where they form an iterator map (TVM's rule: `(vo * 16 + vi) // 16` is `vo` when
        vi < 16, but `vi // 64` stays when the indices overlap). An index that was a variable
        stays one rather than become a constant."""
        mapped = self.mapping.map(indices, self.analyzer)
        used: set[Var] = set()
        for index in mapped:
            walk(index, lambda item: used.add(item) if isinstance(item, Var) else None)
        domains = {var: self.domains[var] for var in used if var in self.domains}
        domains = _narrowed(domains, self.conditions)
        # an iterator over [m, m + e) reads as (v - m) over [0, e), as TVM's iterator maps
        # shift it: `vi` over [21, 32) is `vi - 21 + 21`
        starts = {
            var: domain.min
            for var, domain in domains.items()
            if isinstance(domain.min, IntImm) and domain.min.value != 0
        }
        shifted = {var: Var(var.name, var.dtype) for var in starts}
        if shifted:
            mapped_from_zero = [
                substitute(index, {v: E.Add(shifted[v], starts[v]) for v in shifted})
                for index in mapped
            ]
            domains = {
                shifted.get(var, var): Range(IntImm(0, domain.min.dtype), domain.extent)
                if var in shifted
                else domain
                for var, domain in domains.items()
            }
        else:
            mapped_from_zero = list(mapped)
        normal = normalize_iter_map(mapped_from_zero, domains, None, keep_unit_iters=False)
        if normal is None:
            return mapped
        bounded = Analyzer()  # drops digits of extent 1 (`vi // 16` where vi < 16)
        for var, domain in domains.items():
            bounded.bind(var, domain)
        normal = [_simplify_keeping_base(bounded, index) for index in normal]
        if shifted:
            back = {shifted[v]: E.Sub(v, starts[v]) for v in shifted}
            normal = [substitute(index, back) for index in normal]
        return tuple(
            old if isinstance(new, IntImm) and isinstance(old, Var) else new
            for old, new in zip(mapped, normal, strict=True)
        )

    def visit_BufferLoad(self, node: BufferLoad) -> BufferLoad:
        new: BufferLoad = self.generic_visit(node)
        if new.buffer is not self.old:
            return new
        return dataclasses.replace(new, buffer=self.new, indices=self.indices(new.indices))

    def visit_BufferStore(self, node: BufferStore) -> BufferStore:
        new: BufferStore = self.generic_visit(node)
        if new.buffer is not self.old:
            return new
        return dataclasses.replace(new, buffer=self.new, indices=self.indices(new.indices))

    def visit_SBlock(self, node: SBlock) -> SBlock:
        for iter_var in node.iter_vars:
            if iter_var.dom is not None:
                self.domains[iter_var.var] = iter_var.dom
        new: SBlock = self.generic_visit(node)
        if self._mentions(new.reads) or self._mentions(new.writes):
            reads, writes = infer_access_regions(new)
            new = dataclasses.replace(
                new,
                reads=self._regions(new.reads, reads, writes),
                writes=self._regions(new.writes, writes, reads),
            )
        if any(buffer is self.old for buffer in new.alloc_buffers):
            allocated = tuple(
                self.new if buffer is self.old else buffer for buffer in new.alloc_buffers
            )
            new = dataclasses.replace(new, alloc_buffers=allocated)
        if new is not node:
            self.reuse[node] = new
        return new

    def _mentions(self, regions: tuple[BufferRegion, ...]) -> bool:
        return any(region.buffer is self.old for region in regions)

    def _regions(
        self,
        declared: tuple[BufferRegion, ...],
        inferred: tuple[BufferRegion, ...],
        other: tuple[BufferRegion, ...],
    ) -> tuple[BufferRegion, ...]:
        """Declared regions of the old buffer replaced by the inferred region of the new one
        (looked up among the other kind when inference lists it there only: a buffer both
        read and written is listed as written)."""
        found = [region for region in inferred if region.buffer is self.new]
        found = found or [region for region in other if region.buffer is self.new]
        result = []
        for region in declared:
            if region.buffer is not self.old:
                result.append(region)
            elif found:
                result.append(found[0])
        return tuple(result)


def _rebind_parameter(state: ScheduleState, old: Buffer, new: Buffer) -> None:
    """A parameter's buffer changes in the function's buffer map too."""
    func: PrimFunc = state.func
    if not any(buffer is old for _, buffer in func.buffer_map):
        return
    buffer_map = tuple((var, new if buffer is old else buffer) for var, buffer in func.buffer_map)
    new_func = dataclasses.replace(func, buffer_map=buffer_map)
    state.module = state.module.with_function(state.func_name, new_func)
