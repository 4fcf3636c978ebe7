"""lower-warp-memory: "warp"-scope memory becomes per-lane registers, and a lane's read of
another lane's element a warp shuffle, as TVM 0.27 lowers warp memory for CUDA (warp size 32).

Expects flat tir inside kernels (every access has one index); leaves flat tir with no "warp"
allocation. A "warp" allocation of W elements is one copy per group of `width` lanes, where
`width` is the extent of threadIdx.x (a constant dividing 32); it becomes a "local" allocation
of L = W / width elements per lane. The stores say how the W elements are spread over the
lanes: an index `c * tx + r` (r free of threadIdx.x `tx`, c dividing L), the same c for every
store, puts runs of c elements on the lanes in turn: lane `(i // c) % width` holds element `i`
at local index `(i // (c * width)) * c + i % c`. So

- c == L: lane `i // L` holds `i` at `i % L` (a lane's registers are contiguous);
- c == 1: lanes innermost, lane `i % width` holds `i` at `i // width`;
- c == 8 in a (tiles, 32, 8) buffer: the mma fragments of several 16x16 tiles, each lane's
  8 registers of tile t at local index 8 * t.

Indices are read through the kernel's bindings (`x = tx * 8`, common-subexpression-elim's).

A load whose lane is provably the reading lane reads its own register; any other becomes
`T.tvm_warp_shuffle(T.tvm_warp_activemask(), local[q], lane, width, 32)`. The warp-register
intrinsics (ptx_mma, ptx_ldmatrix, mma_fill, mma_store) name a lane's own registers by the
offset of its first element: the offset becomes its local part.

    W = T.alloc_buffer((128,), scope="warp")          W = T.alloc_local((4,))
    (threadIdx.x tx: 32 lanes)                  ->
    W[tx * 4 + j] = A[tx * 4 + j]                     W[j] = A[tx * 4 + j]
    B[tx * 4 + j] = W[(tx + 1) % 32 * 4 + j]          B[tx * 4 + j] = T.tvm_warp_shuffle(
                                                          T.tvm_warp_activemask(), W[j],
                                                          (tx + 1) % 32, 32, 32)
    T.ptx_mma(..., C.data, tx * 8 + 4, ...)           T.ptx_mma(..., C.data, 4, ...)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import cast

from tirc.analysis.arith.analyzer import Analyzer
from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range, make_buffer
from tirc.ir.function import PrimFunc
from tirc.ir.functor import Mutator, Visitor
from tirc.ir.substitute import substitute
from tirc.text import script
from tirc.transform.pass_base import Dialect, FunctionPass

WARP_SIZE = 32
WARPGROUP_SIZE = 128  # wgmma's accumulators: a "warp" buffer over a warpgroup's threads

# the warp-register intrinsics: the positions of their (data, element offset) operand pairs
REGISTER_OPERANDS: dict[str, tuple[int, ...]] = {
    "ptx_mma": (6, 8, 10),
    "ptx_ldmatrix": (3,),
    "mma_fill": (1,),
    "mma_store": (3,),
    "ptx_wgmma": (16,),
}


@dataclass(frozen=True)
class _Warp:
    """One warp allocation: who its lanes are and how its elements are spread over them."""

    old: Buffer
    new: Buffer
    lane_var: E.Var  # the threadIdx.x around the allocation, or the first one in its scope
    width: int  # lanes sharing one copy
    local_size: int  # elements per lane
    run: int  # c: consecutive elements a lane holds before the next lane's

    def split(self, index: E.PrimExpr, analyzer: Analyzer) -> tuple[E.PrimExpr, E.PrimExpr]:
        """(lane, local index) of element `index`."""
        dtype = _dtype(index)
        run = E.IntImm(self.run, dtype)
        span = E.IntImm(self.run * self.width, dtype)
        lane = E.FloorMod(E.FloorDiv(index, run), E.IntImm(self.width, dtype))
        local = E.Add(E.Mul(E.FloorDiv(index, span), run), E.FloorMod(index, run))
        return analyzer.simplify(lane), analyzer.simplify(local)


def _dtype(expr: E.PrimExpr) -> dt.DataType:
    return expr.dtype


def _uses(node: object, var: E.Var) -> bool:
    found = False

    class _Finder(Visitor):
        def visit_Var(self, seen: E.Var) -> None:
            nonlocal found
            found = found or seen is var

        def visit_Buffer(self, buffer: Buffer) -> None:
            nonlocal found
            found = found or buffer.data is var

    _Finder().visit(node)
    return found


def _launched_lane(stmt: S.AttrStmt, current: E.Var) -> E.Var:
    """The threadIdx.x `stmt` launches, or `current` when it launches none."""
    node = stmt.node
    if (
        stmt.key == "thread_extent"
        and isinstance(node, S.IterVar)
        and node.thread_tag == "threadIdx.x"
    ):
        return node.var
    return current


def _thread_x(node: object) -> tuple[E.Var, E.PrimExpr, S.AttrStmt] | None:
    """The first threadIdx.x launch in `node`."""
    found: list[tuple[E.Var, E.PrimExpr, S.AttrStmt]] = []

    class _Finder(Visitor):
        def visit_AttrStmt(self, stmt: S.AttrStmt) -> None:
            node = stmt.node
            if (
                not found
                and stmt.key == "thread_extent"
                and isinstance(node, S.IterVar)
                and node.thread_tag == "threadIdx.x"
            ):
                found.append((node.var, stmt.value, stmt))
            self.generic_visit(stmt)

    _Finder().visit(node)
    return found[0] if found else None


def _check_one_kernel(alloc: S.AllocBuffer, scope: S.Stmt) -> None:
    """An allocation outside every launch serves one kernel: registers die with theirs."""
    data = alloc.buffer.data
    kernels: list[S.AttrStmt] = []

    class _Kernels(Visitor):
        def visit_AttrStmt(self, stmt: S.AttrStmt) -> None:
            if stmt.key != "thread_extent":
                self.generic_visit(stmt)
            elif _uses(stmt.body, data):
                kernels.append(stmt)

    _Kernels().visit(scope)
    if len(kernels) > 1:
        raise DiagnosticError.at(
            alloc.span,
            f"warp memory '{alloc.buffer.name}' is used by {len(kernels)} kernels (separate "
            "thread launches): a lane's registers do not live from one kernel to the next",
            *(Note("used by this kernel", k.span) for k in kernels[:2]),
        )


Bindings = dict[E.Var, E.PrimExpr]


def _record(bindings: Bindings, stmt: S.Bind) -> None:
    """Remembers `stmt`'s value (itself read through the earlier bindings)."""
    bindings[stmt.var] = substitute(stmt.value, bindings)


class _Writes(Visitor):
    """The indices at which a warp buffer is written, and the register operands naming it."""

    def __init__(self, data: E.Var, lane: E.Var, bindings: Bindings) -> None:
        self.data = data
        self.lane = lane  # the threadIdx.x of the write
        self.bindings = bindings
        self.indices: list[tuple[E.PrimExpr, E.Var, object]] = []  # (index, lane, node)

    def visit_AttrStmt(self, stmt: S.AttrStmt) -> None:
        saved, self.lane = self.lane, _launched_lane(stmt, self.lane)
        self.generic_visit(stmt)
        self.lane = saved

    def visit_Bind(self, stmt: S.Bind) -> None:
        _record(self.bindings, stmt)
        self.generic_visit(stmt)

    def _add(self, index: E.PrimExpr, node: object) -> None:
        self.indices.append((substitute(index, self.bindings), self.lane, node))

    def visit_BufferStore(self, stmt: S.BufferStore) -> None:
        if stmt.buffer.data is self.data:
            for index in stmt.indices:
                self._add(index, stmt)
        self.generic_visit(stmt)

    def visit_Call(self, call: E.Call) -> None:
        for position in REGISTER_OPERANDS.get(call.op, ()):
            if position + 1 < len(call.args) and call.args[position] is self.data:
                self._add(cast(E.PrimExpr, call.args[position + 1]), call)
        self.generic_visit(call)


def _coefficient(index: E.PrimExpr, lane: E.Var, analyzer: Analyzer) -> int | None:
    """c where `index` is c * lane + (something free of lane); None when it is not."""
    at = {v: E.IntImm(v, lane.dtype) for v in (0, 1)}
    step = analyzer.simplify(
        E.Sub(substitute(index, {lane: at[1]}), substitute(index, {lane: at[0]}))
    )
    if not isinstance(step, E.IntImm):
        return None
    rest = analyzer.simplify(E.Sub(index, E.Mul(E.IntImm(step.value, _dtype(index)), lane)))
    return None if _uses(rest, lane) else step.value


def _warp(
    alloc: S.AllocBuffer, lane: E.Var, extent: E.PrimExpr, scope: S.Stmt, bindings: Bindings
) -> _Warp:
    """How the allocation's elements lie over the lanes, from its writes in `scope`."""
    buffer = alloc.buffer
    name = buffer.name
    if not (isinstance(extent, E.IntImm) and 0 < extent.value <= WARPGROUP_SIZE) or (
        WARP_SIZE % extent.value and extent.value != WARPGROUP_SIZE
    ):
        raise DiagnosticError.at(
            alloc.span,
            f"warp memory '{name}' needs threadIdx.x to be a constant number of lanes that "
            f"divides the warp size ({WARP_SIZE}), or a warpgroup's {WARPGROUP_SIZE}, not "
            f"{script(extent)}",
        )
    width = extent.value
    shape = buffer.shape
    if len(shape) != 1 or not isinstance(shape[0], E.IntImm) or shape[0].value % width:
        raise DiagnosticError.at(
            alloc.span,
            f"warp memory '{name}' must have a constant flat size that is a multiple of "
            f"{width} lanes (threadIdx.x), not ({', '.join(script(s) for s in shape)})",
        )
    local_size = shape[0].value // width
    analyzer = Analyzer()
    analyzer.bind(lane, Range(E.IntImm(0, lane.dtype), extent))
    writes = _Writes(buffer.data, lane, dict(bindings))
    writes.visit(scope)
    coefficients: set[int] = set()
    for index, write_lane, node in writes.indices:
        analyzer.bind(write_lane, Range(E.IntImm(0, write_lane.dtype), extent))
        coefficient = _coefficient(index, write_lane, analyzer)
        if coefficient is None or coefficient < 0 or (coefficient and local_size % coefficient):
            raise DiagnosticError.at(
                getattr(node, "span", None) or alloc.span,
                f"warp memory '{name}' is written at index {script(index)}: lower-warp-memory "
                "needs c * threadIdx.x + (an offset free of threadIdx.x) with c dividing "
                f"the {local_size} elements a lane holds (c = {local_size}: each lane's "
                "elements together; c = 1: lanes innermost)",
            )
        if coefficient != 0:
            coefficients.add(coefficient)
    if len(coefficients) > 1:
        raise DiagnosticError.at(
            alloc.span,
            f"warp memory '{name}' is written with threadIdx.x coefficients "
            f"{' and '.join(map(str, sorted(coefficients)))}: lanes must hold their elements "
            "in runs of one length",
        )
    run = coefficients.pop() if coefficients else local_size
    new = make_buffer(name, (E.IntImm(local_size, shape[0].dtype),), buffer.dtype, "local")
    return _Warp(buffer, new, lane, width, local_size, run)


class _Rewriter(Mutator):
    """The accesses to one warp buffer, onto the lane's registers and warp shuffles."""

    def __init__(self, warp: _Warp, bindings: Bindings) -> None:
        self.warp = warp
        self.bindings = bindings
        self.analyzer = Analyzer()
        self.lane = warp.lane_var  # the threadIdx.x around the access
        self._bind(self.lane)

    def _bind(self, lane: E.Var) -> None:
        width = E.IntImm(self.warp.width, lane.dtype)
        self.analyzer.bind(lane, Range(E.IntImm(0, lane.dtype), width))

    def visit_AttrStmt(self, stmt: S.AttrStmt) -> S.Stmt:
        lane = _launched_lane(stmt, self.lane)
        if lane is self.lane:
            return self.generic_visit(stmt)
        extent = stmt.value
        if not (isinstance(extent, E.IntImm) and extent.value == self.warp.width):
            raise DiagnosticError.at(
                stmt.span,
                f"threadIdx.x launches {script(extent)} threads here and {self.warp.width} "
                f"where warp memory '{self.warp.old.name}' is first written",
            )
        saved, self.lane = self.lane, lane
        self._bind(lane)
        try:
            return self.generic_visit(stmt)
        finally:
            self.lane = saved

    def visit_For(self, stmt: S.For) -> S.Stmt:
        self.analyzer.bind(stmt.loop_var, Range(stmt.min, stmt.extent))
        return self.generic_visit(stmt)

    def visit_Bind(self, stmt: S.Bind) -> S.Stmt:
        _record(self.bindings, stmt)
        return self.generic_visit(stmt)

    def _split(self, index: E.PrimExpr, node: object) -> tuple[E.PrimExpr, E.PrimExpr]:
        if not _dtype(index).is_scalar:
            raise DiagnosticError.at(
                getattr(node, "span", None),
                f"a vector access to warp memory '{self.warp.old.name}' "
                "(lower-warp-memory rewrites one element at a time)",
            )
        return self.warp.split(substitute(index, self.bindings), self.analyzer)

    def visit_BufferStore(self, stmt: S.BufferStore) -> S.Stmt:
        stmt = self.generic_visit(stmt)
        if stmt.buffer.data is not self.warp.old.data:
            return stmt
        lane, local = self._split(stmt.indices[0], stmt)
        if not self.analyzer.can_prove_equal(lane, self.lane):
            raise DiagnosticError.at(
                stmt.span,
                f"this store writes warp memory '{self.warp.old.name}' of lane "
                f"{script(lane)}, not of the storing lane {self.lane.name}: a lane can only "
                "write its own registers",
            )
        return dataclasses.replace(stmt, buffer=self.warp.new, indices=(local,))

    def visit_BufferLoad(self, load: E.BufferLoad) -> E.PrimExpr:
        load = self.generic_visit(load)
        if load.buffer.data is not self.warp.old.data:
            return load
        lane, local = self._split(load.indices[0], load)
        own = E.BufferLoad(self.warp.new, (local,), span=load.span)
        if self.analyzer.can_prove_equal(lane, self.lane):
            return own
        if _uses(local, self.lane):
            raise DiagnosticError.at(
                load.span,
                f"this load reads warp memory '{self.warp.old.name}' of another lane at a "
                f"register index ({script(local)}) that depends on threadIdx.x; a warp shuffle "
                "sends every lane's register of one index",
            )
        if self.warp.width > WARP_SIZE:
            raise DiagnosticError.at(
                load.span,
                f"this load reads warpgroup memory '{self.warp.old.name}' of another thread; "
                "only a thread's own registers can be read (no shuffle crosses warps)",
            )
        mask = E.Call(dt.UINT32, "tvm_warp_activemask", ())
        width = E.IntImm(self.warp.width, dt.INT32)
        size = E.IntImm(WARP_SIZE, dt.INT32)
        return E.Call(
            load.dtype, "tvm_warp_shuffle", (mask, own, lane, width, size), span=load.span
        )

    def visit_Call(self, call: E.Call) -> E.PrimExpr:
        call = self.generic_visit(call)
        positions = [
            p
            for p in REGISTER_OPERANDS.get(call.op, ())
            if p + 1 < len(call.args) and call.args[p] is self.warp.old.data
        ]
        if not positions:
            return call
        if self.warp.run == 1 and self.warp.local_size > 1:
            raise DiagnosticError.at(
                call.span,
                f"T.{call.op} takes a lane's registers of warp memory '{self.warp.old.name}' "
                "as consecutive elements, but its stores put the lanes innermost",
            )
        args = list(call.args)
        for position in positions:
            args[position] = self.warp.new.data
            offset = cast(E.PrimExpr, args[position + 1])
            args[position + 1] = self._split(offset, call)[1]
        return dataclasses.replace(call, args=tuple(args))


class _Lowering(Mutator):
    """Finds the warp allocations and rewrites each one's scope."""

    def __init__(self) -> None:
        self.lane: tuple[E.Var, E.PrimExpr] | None = None  # the enclosing threadIdx.x
        self.in_kernel = False  # inside some thread launch
        self.lowered = False
        self.bindings: Bindings = {}  # every Bind seen so far (variables are unique)

    def visit_Bind(self, stmt: S.Bind) -> S.Stmt:
        _record(self.bindings, stmt)
        return self.generic_visit(stmt)

    def visit_AttrStmt(self, stmt: S.AttrStmt) -> S.Stmt:
        node = stmt.node
        if stmt.key == "thread_extent" and not self.in_kernel:
            self.in_kernel = True
            try:
                return self.visit_AttrStmt(stmt)
            finally:
                self.in_kernel = False
        if not (
            stmt.key == "thread_extent"
            and isinstance(node, S.IterVar)
            and node.thread_tag == "threadIdx.x"
        ):
            return self.generic_visit(stmt)
        saved, self.lane = self.lane, (node.var, stmt.value)
        try:
            return self.generic_visit(stmt)
        finally:
            self.lane = saved

    def visit_SeqStmt(self, stmt: S.SeqStmt) -> S.Stmt:
        items = stmt.stmts
        for position, item in enumerate(items):
            if isinstance(item, S.AllocBuffer) and item.buffer.scope == "warp":
                before = [self.visit(s) for s in items[:position]]
                rest = S.seq(*items[position + 1 :])
                alloc, rest = self.lower(item, rest)
                return S.seq(*before, alloc, self.visit(rest))
        return self.generic_visit(stmt)

    def visit_AllocBuffer(self, stmt: S.AllocBuffer) -> S.Stmt:
        if stmt.buffer.scope != "warp":
            return stmt
        return self.lower(stmt, S.Evaluate(E.IntImm(0, dt.INT32)))[0]  # used nowhere

    def lower(self, alloc: S.AllocBuffer, scope: S.Stmt) -> tuple[S.Stmt, S.Stmt]:
        """The new allocation, and `scope` (the statements after it) rewritten."""
        if not self.in_kernel:
            _check_one_kernel(alloc, scope)
        lane = self.lane
        if lane is None:
            launch = _thread_x(scope)
            lane = None if launch is None else launch[:2]
        if lane is None:
            raise DiagnosticError.at(
                alloc.span,
                f"warp memory '{alloc.buffer.name}' is not in a kernel with threadIdx.x "
                "(its lanes are the threads of threadIdx.x)",
            )
        warp = _warp(alloc, lane[0], lane[1], scope, self.bindings)
        rewritten = _Rewriter(warp, dict(self.bindings)).visit(scope)
        if _uses(rewritten, warp.old.data):
            raise DiagnosticError.at(
                alloc.span,
                f"warp memory '{warp.old.name}' is used other than by loads, stores and the "
                f"warp-register intrinsics ({', '.join(sorted(REGISTER_OPERANDS))}), which "
                "lower-warp-memory cannot rewrite",
            )
        self.lowered = True
        return dataclasses.replace(alloc, buffer=warp.new), rewritten


@dataclass(frozen=True)
class LowerWarpMemory(FunctionPass):
    name = "lower-warp-memory"
    expects = Dialect.FLAT
    leaves = Dialect.FLAT

    def run_function(self, func: PrimFunc) -> PrimFunc:
        lowering = _Lowering()
        body = lowering.visit(func.body)
        if not lowering.lowered:
            return func
        return dataclasses.replace(func, body=_without_dead_bindings(body, lowering.bindings))


class _Uses(Visitor):
    """The variables a statement reads (a binding's own variable is a definition)."""

    def __init__(self) -> None:
        self.used: set[E.Var] = set()

    def visit_Var(self, node: E.Var) -> None:
        self.used.add(node)

    def visit_Bind(self, node: S.Bind) -> None:
        self.visit(node.value)


class _DropBindings(Mutator):
    def __init__(self, dead: set[E.Var]) -> None:
        self.dead = dead

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        stmt = self.generic_visit(node)
        if not isinstance(stmt, S.SeqStmt):
            return stmt
        kept = [s for s in stmt.stmts if not (isinstance(s, S.Bind) and s.var in self.dead)]
        return stmt if len(kept) == len(stmt.stmts) else S.seq(*kept)


def _calls(expr: E.PrimExpr) -> bool:
    found = False

    class _Calls(Visitor):
        def visit_Call(self, node: E.Call) -> None:
            nonlocal found
            found = True

    _Calls().visit(expr)
    return found


def _without_dead_bindings(body: S.Stmt, bindings: Bindings) -> S.Stmt:
    """`body` without the bindings the rewrite left unused (the lane offsets common-subexpr-elim
    bound for the warp buffers' indices, `x = tx * 8`: the registers' indices no longer
    need them, and nvcc warns of each), until none is left."""
    candidates = {var for var, value in bindings.items() if not _calls(value)}  # pure ones
    while True:
        uses = _Uses()
        uses.visit(body)
        dead = candidates - uses.used
        if not dead:
            return body
        body = _DropBindings(dead).visit(body)
        candidates -= dead
