"""inject-permuted-layout: the shared buffers that blocks annotated `permuted_layout` access are
stored with the 16-byte chunks of each row XOR-permuted by the row index, so that the eight
row addresses of an ldmatrix phase (and the 16-byte stores that fill the tile) fall in
different banks.

Expects opaque blocks (after lower-match-buffer, before inject-software-pipeline); leaves the
same, the annotation removed. In an annotated block, every access of a shared buffer of two or
more dimensions is rewritten on its last two indices (row r, column c in elements of 16 bits,
8 to a chunk), and each `T.ptx_ldmatrix` lane address, its offset read as r * R + c:

    rows of 64 elements (128 bytes) or more:  c -> ((c // 8) ^ (r % 8)) * 8 + c % 8
    rows of 32 elements (64 bytes):           c -> ((c // 8) ^ (r % 8 // 2)) * 8 + c % 8

    S[r, c] = A[i, j]                   ->   S[r, ((c // 8) ^ (r % 8)) * 8 + c % 8] = A[i, j]
    T.ptx_ldmatrix(..., T.tvm_access_ptr(.., S.data, base, ..), lane_off)
        -> T.ptx_ldmatrix(..., T.tvm_access_ptr(.., S.data, <base + lane_off permuted>, ..), 0)

A `T.ptx_wgmma` operand (wherever it is) reads the permuted layout as it stands when its
descriptor's swizzle is the permutation's: 128 bytes for rows of 64 elements, 64 for rows of 32
(the XOR is then the hardware's, on the address; codegen aligns such a buffer to 1024 bytes).

The permutation is a bijection within each row, so the program computes what it did as long as
every access of the buffer is permuted alike; the pass refuses, with a located error, what it
cannot permute alike: an access outside the annotated blocks, another use of the buffer's
pointer (mma_store, cp.async, address_of, a wgmma of another swizzle), a row of other than 32 or
a multiple of 64 elements, elements other than 16 bits where an ldmatrix or wgmma reads them
(a buffer only loaded and stored may hold any scalar), padded strides, an ldmatrix lane
address not 16-byte aligned; and a swizzled wgmma reading a stored, unpermuted tile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.analysis.storage_scope import SHARED, scope_rank
from tirc.diagnostics import DiagnosticError, Note
from tirc.diagnostics.span import Span
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.ir.wgmma import A_POINTER, B_POINTER, operand_handles
from tirc.text import script
from tirc.transform.pass_base import Dialect, FunctionPass

KEY = "permuted_layout"
CHUNK = 8  # elements of 16 bits in one 16-byte chunk: one ldmatrix row, one vector store
LDMATRIX_POINTER, LDMATRIX_OFFSET = 5, 6  # argument positions in T.ptx_ldmatrix (dtype apart)
AccessT = TypeVar("AccessT", S.BufferStore, E.BufferLoad)
PERMUTABLE = ("a store", "a load", "an ldmatrix")  # the uses the pass rewrites
WGMMA = "a wgmma operand"  # a use that reads the permuted layout through its own swizzle


def is_permuting(block: S.SBlock) -> bool:
    """Whether `block` asks for the permuted layout (a non-empty string or a non-zero integer,
    as TVM reads the annotation); another value is a located error."""
    if KEY not in block.annotations:
        return False
    value = block.annotations.get(KEY)
    if isinstance(value, E.IntImm):
        value = value.value
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (bool, int)):
        return value != 0
    raise DiagnosticError.at(
        block.span,
        f"block '{block.name}' has {KEY} = {value!r}; it takes a string or an integer "
        "(a non-empty string or a non-zero integer permutes)",
    )


@dataclass
class _Use:
    """Where a buffer is used, and whether an annotated block permutes that use."""

    span: Span | None
    permuted: bool
    what: str
    swizzle: int = 0  # a wgmma operand's descriptor swizzle (bytes)


@dataclass
class _Uses(Visitor):
    """Every buffer's accesses and pointer uses, and the annotated block around each."""

    declared: dict[E.Var, Buffer] = field(default_factory=dict)
    matched: set[E.Var] = field(default_factory=set)
    uses: dict[E.Var, list[_Use]] = field(default_factory=dict)
    blocks: list[S.SBlock] = field(default_factory=list)  # the annotated blocks entered
    calls: list[E.Call] = field(default_factory=list)

    def add(self, buffer: Buffer | E.Var, span: Span | None, what: str, swizzle: int = 0) -> None:
        data = buffer.data if isinstance(buffer, Buffer) else buffer
        self.uses.setdefault(data, []).append(_Use(span, bool(self.blocks), what, swizzle))

    def visit_SBlock(self, node: S.SBlock) -> None:
        for buffer in node.alloc_buffers:
            self.declared[buffer.data] = buffer
        for match in node.match_buffers:
            self.declared[match.buffer.data] = match.buffer
            self.matched.add(match.buffer.data)
        permuting = is_permuting(node)
        if permuting:
            self.blocks.append(node)
        self.generic_visit(node)
        if permuting:
            self.blocks.pop()

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        self.declared[node.buffer.data] = node.buffer
        self.generic_visit(node)

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        self.declared.setdefault(node.buffer.data, node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.add(node.buffer, node.span, "a store")
        self.generic_visit(node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.add(node.buffer, node.span, "a load")
        self.generic_visit(node)

    def visit_Call(self, node: E.Call) -> None:
        operand = _ldmatrix_operand(node)
        if operand is not None:
            pointer, data = operand
            self.add(data, node.span, "an ldmatrix")
            rest = node.args[:LDMATRIX_POINTER] + pointer.args[2:] + node.args[LDMATRIX_OFFSET:]
            self.visit(rest)
            return
        operands = operand_handles(node)
        if operands:
            for data, swizzle in operands:
                self.add(data, node.span, WGMMA, swizzle)
            skipped = {index for first in (A_POINTER, B_POINTER) for index in (first, first + 4)}
            self.visit([arg for i, arg in enumerate(node.args) if i not in skipped])
            return
        self.calls.append(node)
        self.generic_visit(node)
        self.calls.pop()

    def visit_Var(self, node: E.Var) -> None:
        if node.dtype.is_handle:
            span = self.calls[-1].span if self.calls else node.span
            name = self.calls[-1].op if self.calls else "an expression"
            self.add(node, span, f"its pointer in T.{name}")  # not in PERMUTABLE


def _ldmatrix_operand(call: E.Call) -> tuple[E.Call, E.Var] | None:
    """The `T.tvm_access_ptr` of a `T.ptx_ldmatrix`'s shared operand and the buffer handle it
    points into, if the call is one."""
    if call.op != "ptx_ldmatrix":
        return None
    pointer = call.args[LDMATRIX_POINTER]
    if isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr":
        data = pointer.args[1]
        if isinstance(data, E.Var):
            return pointer, data
    return None


def _check_layout(buffer: Buffer, span: Span | None, plain: bool) -> int:
    """The row length (elements) of a buffer the pass may permute; a located error otherwise.
    A buffer only loaded and stored (`plain`) may have elements of any width, as in TVM: the
    permutation of its columns in chunks of 8 is still a bijection within each row."""

    def refuse(reason: str) -> DiagnosticError:
        return DiagnosticError.at(
            span,
            f"cannot permute the layout of shared buffer {buffer.name} "
            f"({', '.join(map(script, buffer.shape))}) {buffer.dtype}: {reason}",
        )

    if buffer.dtype.lanes != 1 or (buffer.dtype.bits != 16 and not plain):
        raise refuse(
            "the permuted layout moves 16-byte chunks of 8 elements of 16 bits, which an "
            "ldmatrix or a wgmma reads"
        )
    if not all(isinstance(extent, E.IntImm) for extent in buffer.shape[-2:]):
        raise refuse("its last two extents are not constants")
    rows, row = (E.int_value(extent) for extent in buffer.shape[-2:])
    if buffer.strides:
        compact, step = [], 1
        for extent in reversed(buffer.shape):
            compact.append(step)
            step = step * E.int_value(extent) if isinstance(extent, E.IntImm) else -1
        if [E.int_value(s) if isinstance(s, E.IntImm) else None for s in buffer.strides] != list(
            reversed(compact)
        ):
            raise refuse("its strides are not those of a compact row-major buffer")
    if row % 64 != 0 and (row % 32 != 0 or rows % 2 != 0):
        raise refuse(
            "a row must hold a multiple of 64 elements (128 bytes), or 32 elements "
            "(64 bytes) in an even number of rows"
        )
    if buffer.ndim > 2 and rows % 8 != 0:
        raise refuse("a tile of more than two dimensions needs a multiple of 8 rows")
    return row


def _permuted_buffers(func: PrimFunc) -> dict[E.Var, int]:
    """The shared buffers to permute, by data handle, with their row lengths; checks that
    every use of each is one the pass permutes alike."""
    uses = _Uses()
    for _, parameter in func.buffer_map:
        uses.declared[parameter.data] = parameter
    uses.visit(func.body)
    rows: dict[E.Var, int] = {}
    for data, found in uses.uses.items():
        buffer = uses.declared.get(data)
        if buffer is None or scope_rank(buffer.scope) != SHARED or buffer.ndim < 2:
            continue
        permuted = [use for use in found if use.permuted and use.what in PERMUTABLE]
        if not permuted:
            _check_unpermuted_wgmma(buffer, found)
            continue
        first = permuted[0]
        if data in uses.matched:
            raise DiagnosticError.at(
                first.span,
                f"cannot permute the layout of {buffer.name}: it is a match_buffer view "
                "(run inject-permuted-layout after lower-match-buffer)",
            )
        plain = all(use.what in ("a store", "a load") for use in found)
        rows[data] = _check_layout(buffer, first.span, plain)
        for use in found:
            if use.what == WGMMA:
                if use.swizzle == rows[data] * 2:
                    continue
                said = f"{use.swizzle} bytes" if use.swizzle else "no swizzle"
                reads = (
                    f"which a wgmma reads with the {rows[data] * 2}-byte swizzle"
                    if rows[data] in (32, 64)
                    else "which no wgmma swizzle reads (rows of 32 or 64 elements do)"
                )
                message = (
                    f"shared buffer {buffer.name} is permuted for rows of {rows[data]} "
                    f"elements, {reads}, but this wgmma's descriptor says {said}"
                )
            elif use.what not in PERMUTABLE:
                message = (
                    f"shared buffer {buffer.name} is permuted, but {use.what} would not see "
                    "the permuted layout (only stores, loads and T.ptx_ldmatrix are permuted)"
                )
            elif not use.permuted:
                message = (
                    f"{use.what} of shared buffer {buffer.name} outside the blocks annotated "
                    f"{KEY} would not see the permuted layout"
                )
            else:
                continue
            raise DiagnosticError.at(
                use.span, message, Note(f"{buffer.name} is permuted here", first.span)
            )
    return rows


def _check_unpermuted_wgmma(buffer: Buffer, uses: list[_Use]) -> None:
    """A located error where a wgmma reads, through a swizzled descriptor, a tile the program
    stores without the permutation: its XOR would scramble what the stores wrote."""
    if not any(use.what == "a store" for use in uses):
        return  # written through its pointer (TMA, by hand): the writer owns the layout
    for use in uses:
        if use.what == WGMMA and use.swizzle:
            raise DiagnosticError.at(
                use.span,
                f"a wgmma reads shared buffer {buffer.name} with the {use.swizzle}-byte "
                "swizzle, but its stores are not permuted",
                Note(
                    f"annotate the blocks that store {buffer.name} {KEY} (rows of "
                    f"{use.swizzle // 2} elements)"
                ),
            )


class _Permuter(Mutator):
    """Rewrites the accesses of permuted buffers in annotated blocks, with loop and block
    variables bounded so that `c // 8` and `c % 8` simplify."""

    def __init__(self, rows: dict[E.Var, int]) -> None:
        self.rows = rows
        self.analyzer = Analyzer()
        self.depth = 0  # annotated blocks entered

    @contextmanager
    def bound(self, var: E.Var, domain: Range) -> Iterator[None]:
        previous: Bound | None = self.analyzer.ranges.get(var)
        previous_domain = self.analyzer.domains.get(var)
        self.analyzer.bind(var, domain)
        yield
        self.analyzer.ranges.pop(var, None)
        self.analyzer.domains.pop(var, None)
        if previous is not None:
            self.analyzer.ranges[var] = previous
        if previous_domain is not None:
            self.analyzer.domains[var] = previous_domain

    def permute(self, row: E.PrimExpr, column: E.PrimExpr, length: int) -> E.PrimExpr:
        chunk = E.FloorDiv(column, E.IntImm(CHUNK, column.dtype))
        within = E.FloorMod(column, E.IntImm(CHUNK, column.dtype))
        key: E.PrimExpr = E.FloorMod(row, E.IntImm(8, row.dtype))
        if length % 64 != 0:
            key = E.FloorDiv(key, E.IntImm(2, row.dtype))
        xor = E.Call(chunk.dtype, "bitwise_xor", (chunk, key))
        return self.analyzer.simplify(E.Add(E.Mul(xor, E.IntImm(CHUNK, column.dtype)), within))

    def indices(self, buffer: Buffer, indices: tuple[E.PrimExpr, ...]) -> tuple[E.PrimExpr, ...]:
        row, column = indices[-2:]
        return (*indices[:-1], self.permute(row, column, self.rows[buffer.data]))

    def visit_For(self, node: S.For) -> S.Stmt:
        with self.bound(node.loop_var, Range(node.min, node.extent)):
            return self.generic_visit(node)

    def visit_SBlock(self, node: S.SBlock) -> S.SBlock:
        permuting = is_permuting(node)
        self.depth += permuting
        with ExitStack() as stack:
            for iter_var in node.iter_vars:
                if iter_var.dom is not None:
                    stack.enter_context(self.bound(iter_var.var, iter_var.dom))
            result: S.SBlock = self.generic_visit(node)
        self.depth -= permuting
        if permuting:
            result = dataclasses.replace(result, annotations=result.annotations.remove(KEY))
        return result

    def visit_access(self, node: AccessT) -> AccessT:
        result: AccessT = self.generic_visit(node)
        if self.depth and result.buffer.data in self.rows:
            indices = self.indices(result.buffer, result.indices)
            result = dataclasses.replace(result, indices=indices)
        return result

    visit_BufferStore = visit_BufferLoad = visit_access

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        result: E.Call = self.generic_visit(node)
        operand = _ldmatrix_operand(result)
        if not self.depth or operand is None or operand[1] not in self.rows:
            return result
        pointer, data = operand
        length = self.rows[data]
        offset = result.args[LDMATRIX_OFFSET]
        assert isinstance(offset, E.PrimExpr) and isinstance(pointer.args[2], E.PrimExpr)
        address = E.Add(pointer.args[2], offset)
        aligned = E.EQ(E.FloorMod(address, E.IntImm(CHUNK, address.dtype)), E.IntImm(0))
        if not self.analyzer.can_prove(aligned):
            raise DiagnosticError.at(
                node.span,
                "cannot permute this ldmatrix: its lane address "
                f"{script(self.analyzer.simplify(address))} is not provably a multiple of {CHUNK} "
                "elements (16 bytes), so a lane's row could straddle two permuted chunks",
            )
        size = E.IntImm(length, address.dtype)
        row = E.FloorDiv(address, size)
        column = self.permute(row, E.FloorMod(address, size), length)
        permuted = self.analyzer.simplify(E.Add(E.Mul(row, size), column))
        new_pointer = dataclasses.replace(
            pointer, args=(*pointer.args[:2], permuted, *pointer.args[3:])
        )
        args = list(result.args)
        args[LDMATRIX_POINTER] = new_pointer
        args[LDMATRIX_OFFSET] = E.IntImm(0, offset.dtype)
        return dataclasses.replace(result, args=tuple(args))


@dataclass(frozen=True)
class InjectPermutedLayout(FunctionPass):
    name = "inject-permuted-layout"
    expects = Dialect.S_TIR
    leaves = Dialect.S_TIR

    def run_function(self, func: PrimFunc) -> PrimFunc:
        rows = _permuted_buffers(func)
        permuter = _Permuter(rows)
        body = permuter.visit(func.body)
        return func if body is func.body else dataclasses.replace(func, body=body)
