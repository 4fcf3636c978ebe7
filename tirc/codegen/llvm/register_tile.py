"""Accumulator tiles larger than the target's vector registers, emitted one register-sized
part at a time.

A plan fits its register tile to one CPU: 8 rows of 32 float32 lanes are 16 of AVX-512's 32
registers, but 32 of AVX2's 16. Emitted as written, the tile's accumulators stay live across
the whole reduction loop and LLVM spills and reloads most of them in every iteration. When a
serial loop nest only updates accumulators, each statement of the form

    acc[c:c+n] = f(acc[c:c+n], loads of buffers the nest does not write)

on a local buffer at constant lanes, the lanes are independent of each other: the nest can
run once per part of the tile, each part small enough for the registers, and every lane
still sees its updates in the original order (the same results, bit for bit):

    for k:                          for k:  acc[0:16]  = acc[0:16]  + a[k] * b[k, 0:16]
      acc[0:32] = acc[0:32]   -->   for k:  acc[16:32] = acc[16:32] + a[k] * b[k, 16:32]
                  + a[k] * b[k, 0:32]

The parts are blocks of the statements (read as a grid, as two unrolled loops leave them)
times blocks of register-wide lane chunks, chosen to load the fewest operands per iteration
among those whose estimated register need fits.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.dtype import DataType
from tirc.ir.intrinsics import Effect, lookup
from tirc.ir.structural import expr_key

LOCAL_SCOPES = ("local",)
SPLITTABLE_LOOPS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)
OPERAND_REGISTERS = 2
"""Registers an accumulator tile leaves at least, for an operand and a broadcast; a tile that
leaves them is emitted whole. A spilled operand costs one reload, as does reading it again in
each part; a spilled accumulator costs a store and a load every iteration. (Splitting a tile
that fitted its accumulators, conv2d 4x7x8 on AVX-512, ran 7-10% slower than its spills.)"""
SPARE_REGISTERS = 1
"""Left out of a part's budget: LLVM unrolls small reduction loops and schedules the loads of
the next iteration early, which a part that fills every register then spills."""


@dataclass(frozen=True)
class RegisterFile:
    """The vector registers an accumulator tile can live in: how many, of how many bytes."""

    count: int
    width_bytes: int


@dataclass(frozen=True)
class Piece:
    """Lanes [start, start + width) of the `statement`-th accumulator update of a nest, the
    registers they take, and the keys of the register operands they read."""

    statement: int
    start: int
    width: int
    registers: int
    operands: dict[int, int]  # operand (numbered by `cut`) -> the registers it takes


def split_nest(loop: S.For, registers: RegisterFile) -> list[S.For] | None:
    """`loop` as consecutive loops over parts of its accumulator tile, when it only updates
    accumulators and they leave fewer than OPERAND_REGISTERS of the target's registers free;
    None otherwise (emit it as it is)."""
    if loop.kind not in SPLITTABLE_LOOPS:
        return None
    stores = accumulator_updates(loop)
    if not stores:
        return None
    accumulators = sum(register_count(store.value.dtype, registers) for store in stores)
    if accumulators + OPERAND_REGISTERS <= registers.count:
        return None  # LLVM may spill operands, which cost a reload, not accumulators
    pieces = []
    numbers: dict[Hashable, int] = {}
    for index, store in enumerate(stores):
        cuts = cut(index, store, registers, numbers)
        if not cuts:
            return None  # an update that is not lanewise: the nest stays whole
        pieces += cuts
    groups = best_partition(pieces, registers.count - SPARE_REGISTERS)
    if groups is None or len(groups) < 2:
        return None
    parts = []
    for group in groups:
        lanes: dict[int, list[tuple[int, int]]] = {}
        for piece in group:
            lanes.setdefault(piece.statement, []).append((piece.start, piece.width))
        body = rebuild(loop.body, lanes, [0])
        if body is not None:
            parts.append(dataclasses.replace(loop, body=body))
    return parts


# -- which nests qualify --------------------------------------------------------------------


def accumulator_updates(loop: S.For) -> list[S.BufferStore] | None:
    """The nest's stores in program order when it is made only of loops, bindings and
    accumulator updates at distinct constant lanes of local buffers, reading nothing else
    it writes and calling only pure functions; else None."""
    stores: list[S.BufferStore] = []
    bindings: list[S.Bind] = []
    if not collect(loop.body, stores, bindings):
        return None
    written = {id(store.buffer.data) for store in stores}
    regions: dict[int, list[tuple[int, int]]] = {}
    for store in stores:
        region = constant_lanes(store)
        if region is None or store.buffer.scope not in LOCAL_SCOPES:
            return None
        if any(overlap(region, other) for other in regions.get(id(store.buffer.data), [])):
            return None
        regions.setdefault(id(store.buffer.data), []).append(region)
        if not reads_only(store.value, store, written) or calls_impure(store.value):
            return None
    for binding in bindings:
        if not reads_only(binding.value, None, written) or calls_impure(binding.value):
            return None
    return stores


def collect(stmt: S.Stmt, stores: list[S.BufferStore], bindings: list[S.Bind]) -> bool:
    if isinstance(stmt, S.SeqStmt):
        return all(collect(child, stores, bindings) for child in stmt.stmts)
    if isinstance(stmt, S.For):
        return stmt.kind in SPLITTABLE_LOOPS and collect(stmt.body, stores, bindings)
    if isinstance(stmt, S.Bind):
        bindings.append(stmt)
        return not stmt.value.dtype.is_vector
    if isinstance(stmt, S.BufferStore):
        stores.append(stmt)
        return stmt.predicate is None
    return False


def constant_lanes(store: S.BufferStore) -> tuple[int, int] | None:
    """(first element, lanes) of a store to `buffer[c]` or `buffer[c:c+n]` (stride 1)."""
    if len(store.indices) != 1 or store.buffer.dtype.is_vector:
        return None
    index = store.indices[0]
    if isinstance(index, E.IntImm):
        return index.value, 1
    if (
        isinstance(index, E.Ramp)
        and isinstance(index.base, E.IntImm)
        and isinstance(index.stride, E.IntImm)
        and index.stride.value == 1
    ):
        return index.base.value, index.lanes
    return None


def overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


def reads_only(expr: E.PrimExpr, store: S.BufferStore | None, written: set[int]) -> bool:
    """Whether `expr` reads a buffer the nest writes only as `store`'s own lanes."""
    for load in loads(expr):
        if id(load.buffer.data) not in written:
            continue
        if store is None or load.buffer is not store.buffer or load.predicate is not None:
            return False
        if expr_key(load.indices) != expr_key(store.indices):
            return False
    return True


def calls_impure(expr: object) -> bool:
    """Whether `expr` calls something that reads memory or has an effect: each part would
    call it again, and a read could see an accumulator through a pointer."""
    if isinstance(expr, E.Call):
        intrinsic = lookup(expr.op)
        if intrinsic is None or intrinsic.effect is not Effect.PURE:
            return True
        return any(calls_impure(arg) for arg in expr.args)
    if isinstance(expr, E.PrimExpr):
        return any(calls_impure(getattr(expr, name)) for name in child_names(expr))
    if isinstance(expr, tuple):
        return any(calls_impure(item) for item in expr)
    return False


def loads(expr: object) -> Iterator[E.BufferLoad]:
    if isinstance(expr, E.BufferLoad):
        yield expr
        for index in expr.indices:
            yield from loads(index)
        return
    if isinstance(expr, E.PrimExpr):
        for name in child_names(expr):
            yield from loads(getattr(expr, name))
    elif isinstance(expr, tuple):
        for item in expr:
            yield from loads(item)


def child_names(expr: E.PrimExpr) -> tuple[str, ...]:
    return tuple(
        f.name
        for f in dataclasses.fields(expr)
        if f.name not in ("dtype", "span")
        and isinstance(getattr(expr, f.name), (E.PrimExpr, tuple))
    )


# -- lanes of an expression -----------------------------------------------------------------


def slice_lanes(expr: E.PrimExpr, start: int, width: int) -> E.PrimExpr | None:
    """Lanes [start, start + width) of a lanewise vector expression, None when it is not one
    (a shuffle, a call, a vector variable); a scalar is itself."""
    if not expr.dtype.is_vector:
        return expr
    if start == 0 and width == expr.dtype.lanes:
        return expr
    if isinstance(expr, E.Ramp):
        return E.Ramp(offset(expr.base, expr.stride, start), expr.stride, width)
    if isinstance(expr, E.Broadcast):
        return E.Broadcast(expr.value, width)
    if isinstance(expr, (E.BinaryOp, E.CompareOp, E.LogicalOp)):
        a, b = slice_lanes(expr.a, start, width), slice_lanes(expr.b, start, width)
        return None if a is None or b is None else dataclasses.replace(expr, a=a, b=b)
    if isinstance(expr, E.Cast):
        value = slice_lanes(expr.value, start, width)
        return None if value is None else E.Cast(expr.dtype.with_lanes(width), value)
    if isinstance(expr, E.Select):
        condition = slice_lanes(expr.condition, start, width)
        true_value = slice_lanes(expr.true_value, start, width)
        false_value = slice_lanes(expr.false_value, start, width)
        if condition is None or true_value is None or false_value is None:
            return None
        return E.Select(condition, true_value, false_value)
    if isinstance(expr, E.BufferLoad):
        if expr.predicate is not None or expr.buffer.dtype.is_vector:
            return None
        *outer, last = expr.indices
        if any(index.dtype.is_vector for index in outer):
            return None
        index = slice_lanes(last, start, width)
        return None if index is None else E.BufferLoad(expr.buffer, (*outer, index))
    return None


def offset(base: E.PrimExpr, stride: E.PrimExpr, lanes: int) -> E.PrimExpr:
    """`base + lanes * stride`, folded when both are constants."""
    if lanes == 0:
        return base
    if isinstance(base, E.IntImm) and isinstance(stride, E.IntImm):
        return E.IntImm(base.value + lanes * stride.value, base.dtype)
    step = E.IntImm(lanes, stride.dtype)
    return E.Add(base, E.Mul(step, stride))


# -- pieces, their registers and the partition ----------------------------------------------


def register_count(dtype: DataType, registers: RegisterFile) -> int:
    """Vector registers a value of `dtype` takes."""
    size = dtype.lanes * max(dtype.bits // 8, 1)
    return max(math.ceil(size / registers.width_bytes), 1)


def cut(
    index: int, store: S.BufferStore, registers: RegisterFile, numbers: dict[Hashable, int]
) -> list[Piece]:
    """The store's lanes in register-wide chunks (one piece of several registers when its
    lanes do not divide into whole registers); none when its value is not lanewise. Operands
    are numbered in `numbers`, so that the partition search compares integers."""
    lanes = store.value.dtype.lanes
    element = max(store.buffer.dtype.bits // 8, 1)
    per_register = max(registers.width_bytes // element, 1)
    if lanes <= per_register or lanes % per_register:
        spans = [(0, lanes)]
    else:
        spans = [(start, per_register) for start in range(0, lanes, per_register)]
    pieces = []
    for start, width in spans:
        value = slice_lanes(store.value, start, width)
        if value is None:
            return []
        taken = register_count(value.dtype, registers)
        found = operands(value, store, registers)
        numbered = {numbers.setdefault(key, len(numbers)): size for key, size in found.items()}
        pieces.append(Piece(index, start, width, taken, numbered))
    return pieces


def operands(
    expr: E.PrimExpr, store: S.BufferStore, registers: RegisterFile
) -> dict[Hashable, int]:
    """The values an update reads into registers: its loads of other buffers and its
    broadcasts, each with the registers it takes."""
    found: dict[Hashable, int] = {}

    def visit(node: object) -> None:
        if isinstance(node, E.BufferLoad) and node.buffer is not store.buffer:
            found[expr_key(node)] = register_count(node.dtype, registers)
            return
        if isinstance(node, E.Broadcast):
            found[expr_key(node)] = register_count(node.dtype, registers)
            return
        if isinstance(node, E.PrimExpr):
            for name in child_names(node):
                visit(getattr(node, name))
        elif isinstance(node, tuple):
            for item in node:
                visit(item)

    visit(expr)
    return found


def estimate(pieces: list[Piece]) -> tuple[int, int]:
    """The registers a group of pieces is estimated to need, and the operand registers it
    loads per iteration. It needs its accumulators, the operands that several of its
    statements share (live across the group), and the most that one statement reads alone
    (live only while it is computed)."""
    reader: dict[int, int] = {}  # operand -> the statement that reads it first
    shared: set[int] = set()
    sizes: dict[int, int] = {}
    for piece in pieces:
        for key, size in piece.operands.items():
            if reader.setdefault(key, piece.statement) != piece.statement:
                shared.add(key)
            sizes[key] = size
    alone: dict[int, int] = {}
    for key, statement in reader.items():
        if key not in shared:
            alone[statement] = alone.get(statement, 0) + sizes[key]
    accumulators = sum(piece.registers for piece in pieces)
    need = accumulators + sum(sizes[key] for key in shared) + max(alone.values(), default=0)
    return need, sum(sizes.values())


def best_partition(pieces: list[Piece], budget: int) -> list[list[Piece]] | None:
    """One partition whose groups each fit `budget` and that loads the fewest operands in all
    (then has the fewest groups), or None when none fits. The statements are read as an
    `outer` x `inner` grid in program order (every factorization: two unrolled loops make
    one, `f` x `y` say), and a partition takes blocks of consecutive rows, of consecutive
    columns and of consecutive register-wide chunks of each statement."""
    statements = sorted({piece.statement for piece in pieces})
    chunks: dict[int, list[Piece]] = {}
    for piece in pieces:
        chunks.setdefault(piece.statement, []).append(piece)
    most_chunks = max(len(row) for row in chunks.values())
    count = len(statements)
    best: tuple[tuple[int, int], list[list[Piece]]] | None = None
    for outer in (n for n in range(1, count + 1) if count % n == 0):
        inner = count // outer
        for rows, columns, lanes in itertools.product(
            range(1, outer + 1), range(1, inner + 1), range(1, most_chunks + 1)
        ):
            if rows * columns * lanes > budget:
                continue  # a piece takes a register at least: the first group cannot fit
            groups: list[list[Piece]] = []
            loads = 0
            for group in grid_groups(statements, chunks, (outer, inner), (rows, columns, lanes)):
                need, load = estimate(group)
                loads += load
                if need > budget or (best is not None and loads > best[0][0]):
                    break
                groups.append(group)
            else:
                cost = (loads, len(groups))
                if best is None or cost < best[0]:
                    best = (cost, groups)
    return None if best is None else best[1]


def grid_groups(
    statements: list[int],
    chunks: dict[int, list[Piece]],
    grid: tuple[int, int],
    blocks: tuple[int, int, int],
) -> Iterator[list[Piece]]:
    """The groups of one partition: statement `i * inner + j` of the grid, blocks of `rows`
    values of i, `columns` values of j and `lanes` chunks."""
    (outer, inner), (rows, columns, lanes) = grid, blocks
    most_chunks = max(len(row) for row in chunks.values())
    for first_row in range(0, outer, rows):
        for first_column in range(0, inner, columns):
            block = [
                statements[i * inner + j]
                for i in range(first_row, min(first_row + rows, outer))
                for j in range(first_column, min(first_column + columns, inner))
            ]
            for first_chunk in range(0, most_chunks, lanes):
                group = [p for s in block for p in chunks[s][first_chunk : first_chunk + lanes]]
                if group:
                    yield group


# -- the parts ------------------------------------------------------------------------------


def rebuild(
    stmt: S.Stmt, keep: dict[int, list[tuple[int, int]]], counter: list[int]
) -> S.Stmt | None:
    """The nest with only the kept lanes of each update (numbered in program order as
    `accumulator_updates` found them), one register-wide store each (wider ones of a
    non-power-of-two lane count, 24 float32 say, legalize badly); None where nothing is
    left."""
    if isinstance(stmt, S.SeqStmt):
        children = [rebuild(child, keep, counter) for child in stmt.stmts]
        kept = [child for child in children if child is not None]
        if not any(not isinstance(child, S.Bind) for child in kept):
            return None
        return kept[0] if len(kept) == 1 else dataclasses.replace(stmt, stmts=tuple(kept))
    if isinstance(stmt, S.For):
        body = rebuild(stmt.body, keep, counter)
        return None if body is None else dataclasses.replace(stmt, body=body)
    if isinstance(stmt, S.BufferStore):
        index = counter[0]
        counter[0] += 1
        stores = [sliced_store(stmt, start, width) for start, width in keep.get(index, [])]
        if not stores:
            return None
        return stores[0] if len(stores) == 1 else S.SeqStmt(tuple(stores))
    return stmt  # a binding: every part computes it


def sliced_store(store: S.BufferStore, start: int, width: int) -> S.BufferStore:
    value = slice_lanes(store.value, start, width)
    (index,) = store.indices
    lanes = slice_lanes(index, start, width) if index.dtype.is_vector else index
    assert value is not None and lanes is not None  # cut() sliced this value already
    return dataclasses.replace(store, value=value, indices=(lanes,))
