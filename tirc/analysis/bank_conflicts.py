"""Shared-memory bank conflicts of a lowered CUDA kernel, from its index expressions alone:
for each access to shared memory (`T.ptx_ldmatrix`, `T.ptx_cp_async`, loads and stores of
shared buffers) the byte address each lane of a warp gives is computed for concrete values
of the other variables, and the warp's request is split into wavefronts as the hardware
serves it.

The model (sm_80 and sm_90): 32 banks of 4 bytes. A request is served in phases: ldmatrix
reads one 8x16-byte matrix per phase, the row addresses of lanes 8m..8m+7 for matrix m; a
16-byte access serves 8 lanes a phase, an 8-byte access 16, narrower ones the whole warp.
A phase takes as many wavefronts as the largest number of distinct 4-byte words it touches
in one bank (lanes reading one word share it); the ideal is one. `excess` counts the
wavefronts beyond the ideal: a phase of 8 ldmatrix rows 32 bytes apart takes 2.

Every shared buffer is taken to start at bank 0: its real start is aligned to at least the
widest access (16 bytes), which moves every lane of a phase by one amount and changes no
count, unless one phase mixes two buffers. Loop and block variables take every value where
they are few and a sample of them otherwise (`exhaustive` says which); only the variables
an address or an enclosing condition depends on are enumerated.

    ldmatrix.x4 at A_shared + (tx % 16 * 16 + tx // 16 * 8) * 2 bytes
    -> 4 phases of 2 wavefronts: wavefronts 8, ideal 4, ways 2
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tirc.analysis.lane_values import NotEvaluable, Values, evaluate
from tirc.diagnostics import Span
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import Visitor, vars_in

BANKS = 32
BANK_BYTES = 4
WARP = 32
SHARED_SCOPES = ("shared", "shared.dyn")
EXHAUSTIVE_EXTENT = 16  # a loop or block index of at most this many values takes them all
MAX_CONTEXTS = 1024  # value assignments evaluated per access and warp

Mask = npt.NDArray[np.bool_]
Request = tuple[tuple[E.PrimExpr, int], ...]  # one warp instruction: sum of expr * scale bytes


@dataclass(frozen=True)
class SharedAccess:
    """One instruction of a kernel that touches shared memory."""

    kernel: str
    instruction: str  # "ldmatrix.x4", "cp.async 16 B", "st.shared 16 B", "ld.shared 4 B"
    buffer: str
    span: Span | None
    width: int  # bytes each lane reads or writes
    buffer_span: Span | None = None  # where the buffer comes from (what it caches)


@dataclass(frozen=True)
class AccessConflicts:
    """The wavefronts an access takes, summed over the warp instructions evaluated (every
    warp of a block, for each value assignment of the variables its address depends on)."""

    access: SharedAccess
    instructions: int = 0
    wavefronts: int = 0
    ideal: int = 0
    ways: int = 0  # the most wavefronts one phase took
    exhaustive: bool = True  # every value of every variable involved was evaluated
    unknown: str | None = None  # why the addresses could not be computed
    assumed: tuple[str, ...] = ()  # conditions that could not be evaluated, taken as true

    @property
    def excess(self) -> int:
        """Wavefronts beyond one a phase: 0 means conflict-free."""
        return self.wavefronts - self.ideal

    @property
    def is_conflict_free(self) -> bool:
        return self.unknown is None and self.excess == 0


def bank_conflicts(
    program: IRModule | PrimFunc,
    values: Mapping[str, int] | None = None,
) -> list[AccessConflicts]:
    """The shared-memory accesses of every kernel of a module lowered for cuda (or of one
    function with its `T.launch_thread`s), in program order, each with its wavefronts.
    `values` gives scalar parameters (shape variables) by name."""
    functions = [("main", program)] if isinstance(program, PrimFunc) else program.functions
    found: list[AccessConflicts] = []
    for name, func in functions:
        collector = _Collector(name)
        collector.visit(func.body)
        known = {
            param: value
            for param in func.params
            if (value := (values or {}).get(param.name)) is not None
        }
        found += [_measure(site, known) for site in collector.sites]
    return found


def phase_wavefronts(
    addresses: Sequence[int] | Values,
    width: int,
    lanes_per_phase: int,
    active: Sequence[bool] | Mask | None = None,
) -> list[int]:
    """The wavefronts of each phase of one warp request: lanes in groups of
    `lanes_per_phase`, each lane touching `width` bytes from its address; a phase with no
    active lane takes none."""
    address = np.asarray(addresses, dtype=np.int64)
    mask = np.ones(len(address), bool) if active is None else np.asarray(active, bool)
    words_per_lane = max(1, width // BANK_BYTES)
    counts: list[int] = []
    for start in range(0, len(address), lanes_per_phase):
        lanes = address[start : start + lanes_per_phase][mask[start : start + lanes_per_phase]]
        if lanes.size == 0:
            counts.append(0)
            continue
        words = np.unique((lanes // BANK_BYTES)[:, None] + np.arange(words_per_lane)[None, :])
        counts.append(int(np.bincount(words % BANKS, minlength=BANKS).max()))
    return counts


def lanes_per_phase(width: int) -> int:
    """Lanes a phase serves for accesses of `width` bytes: 128 bytes a phase."""
    return WARP * BANK_BYTES // max(width, BANK_BYTES)


# --- where the accesses are ----------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """What encloses an access: a thread index (a lane's, over `extent`), a loop over
    [value, value + extent) (a block index too), a binding `var = value`, or a condition
    `value` (negated)."""

    kind: str  # "lane", "loop", "let", "condition"
    var: E.Var | None
    value: E.PrimExpr
    extent: E.PrimExpr | None = None
    tag: str = ""
    negated: bool = False


@dataclass(frozen=True)
class _Site:
    access: SharedAccess
    scope: tuple[_Scope, ...]
    requests: tuple[Request, ...]
    lanes_per_phase: int
    lanes_used: int = WARP  # ldmatrix.x1 reads the addresses of lanes 0-7 only
    unknown: str | None = None


@dataclass
class _Collector(Visitor):
    kernel: str
    sites: list[_Site] = field(default_factory=list)
    scope: list[_Scope] = field(default_factory=list)
    buffers: dict[E.Var, Buffer] = field(default_factory=dict)  # by data, for pointers

    def visit_AllocBuffer(self, node: S.AllocBuffer) -> None:
        self.buffers.setdefault(node.buffer.data, node.buffer)
        self.generic_visit(node)

    def visit_DeclBuffer(self, node: S.DeclBuffer) -> None:
        self.buffers.setdefault(node.buffer.data, node.buffer)
        self.generic_visit(node)

    def visit_SeqStmt(self, node: S.SeqStmt) -> None:
        depth = len(self.scope)  # a Bind holds to the end of its sequence
        for stmt in node.stmts:
            self.visit(stmt)
        del self.scope[depth:]

    def visit_Bind(self, node: S.Bind) -> None:
        self.visit(node.value)
        self.scope.append(_Scope("let", node.var, node.value))

    def visit_AttrStmt(self, node: S.AttrStmt) -> None:
        self.visit(node.value)
        if node.key in ("thread_extent", "virtual_thread") and isinstance(node.node, S.IterVar):
            tag = node.node.thread_tag if node.key == "thread_extent" else ""
            zero = E.IntImm(0, node.node.var.dtype)
            kind = "lane" if tag.startswith("threadIdx") else "loop"  # blockIdx: a loop here
            entry = _Scope(kind, node.node.var, zero, node.value, tag)
            self._within(entry, node.body)
        else:
            self.visit(node.body)

    def visit_For(self, node: S.For) -> None:
        self.visit((node.min, node.extent))
        self._within(_Scope("loop", node.loop_var, node.min, node.extent), node.body)

    def visit_IfThenElse(self, node: S.IfThenElse) -> None:
        self.visit(node.condition)
        self._within(_Scope("condition", None, node.condition), node.then_case)
        if node.else_case is not None:
            self._within(_Scope("condition", None, node.condition, negated=True), node.else_case)

    def _within(self, entry: _Scope, body: S.Stmt) -> None:
        self.scope.append(entry)
        self.visit(body)
        self.scope.pop()

    def visit_BufferStore(self, node: S.BufferStore) -> None:
        self.visit((node.value, node.indices))
        if node.buffer.scope in SHARED_SCOPES:
            self._buffer_site("st.shared", node.buffer, node.indices, node.value.dtype, node.span)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.visit(node.indices)
        if node.buffer.scope in SHARED_SCOPES:
            self._buffer_site("ld.shared", node.buffer, node.indices, node.dtype, node.span)

    def visit_Call(self, node: E.Call) -> None:
        if node.op == "ptx_ldmatrix" and len(node.args) == 7:
            self._ldmatrix_site(node)
        elif node.op == "ptx_cp_async" and len(node.args) >= 5:
            self._cp_async_site(node)
        elif node.op not in ("tvm_access_ptr", "address_of"):  # pointers, not accesses
            self.generic_visit(node)

    def _ldmatrix_site(self, call: E.Call) -> None:
        count, shared, offset = call.args[1], call.args[5], call.args[6]
        matrices = count.value if isinstance(count, E.IntImm) else 4
        trans = call.args[0]
        name = f"ldmatrix.x{matrices}" + (".trans" if E.is_true(trans) else "")
        element = call.dtype.element.bytes
        self._pointer_site(name, call, shared, offset, element, 16, 8, 8 * matrices)

    def _cp_async_site(self, call: E.Call) -> None:
        shared, offset, size = call.args[0], call.args[1], call.args[4]
        width = size.value if isinstance(size, E.IntImm) else 16
        element = call.dtype.element.bytes
        name = f"cp.async {width} B"
        self._pointer_site(name, call, shared, offset, element, width, lanes_per_phase(width))

    def _pointer_site(
        self,
        name: str,
        call: E.Call,
        pointer: object,
        offset: object,
        element: int,
        width: int,
        phase: int,
        lanes_used: int = WARP,
    ) -> None:
        base = _pointer_base(pointer)
        if base is None:
            access = SharedAccess(self.kernel, name, "?", call.span, width)
            self.sites.append(
                _Site(access, (), (), phase, unknown="a shared pointer tirc cannot read")
            )
            return
        buffer_var, terms = base
        if buffer_var.pointer is not None and buffer_var.pointer.scope not in SHARED_SCOPES:
            return
        request = (*terms, (offset, element)) if isinstance(offset, E.PrimExpr) else terms
        buffer = self.buffers.get(buffer_var)
        origin = None if buffer is None else buffer.span
        access = SharedAccess(self.kernel, name, buffer_var.name, call.span, width, origin)
        self.sites.append(_Site(access, tuple(self.scope), (request,), phase, lanes_used))

    def _buffer_site(
        self,
        kind: str,
        buffer: Buffer,
        indices: tuple[E.PrimExpr, ...],
        dtype: object,
        span: Span | None,
    ) -> None:
        element = buffer.dtype.bytes
        flat = _flat_index(buffer, indices)
        if flat is None:
            access = SharedAccess(self.kernel, kind, buffer.name, span, element)
            self.sites.append(
                _Site(access, (), (), WARP, unknown="a shared buffer of symbolic strides")
            )
            return
        offset: Request = () if buffer.elem_offset is None else ((buffer.elem_offset, element),)
        requests: tuple[Request, ...]
        index = flat
        if isinstance(index, E.Ramp) and _constant(index.stride) == 1:
            width = element * index.lanes
            requests = ((*offset, (index.base, element)),)
        elif isinstance(index, E.Ramp):
            width = element
            requests = tuple(
                (*offset, (index.base, element), (index.stride, element * lane))
                for lane in range(index.lanes)
            )
        else:
            base = index.value if isinstance(index, E.Broadcast) else index
            width = element
            requests = ((*offset, (base, element)),)
        name = f"{kind} {width} B"
        access = SharedAccess(self.kernel, name, buffer.name, span, width, buffer.span)
        self.sites.append(_Site(access, tuple(self.scope), requests, lanes_per_phase(width)))


def _constant(expr: E.PrimExpr) -> int | None:
    return expr.value if isinstance(expr, E.IntImm) else None


def _pointer_base(pointer: object) -> tuple[E.Var, tuple[tuple[E.PrimExpr, int], ...]] | None:
    """The buffer a pointer argument points into and its byte offset there, as terms."""
    if isinstance(pointer, E.Var):
        return pointer, ()
    if isinstance(pointer, E.Call) and pointer.op == "tvm_access_ptr" and len(pointer.args) == 5:
        annotation, data, offset = pointer.args[0], pointer.args[1], pointer.args[2]
        if isinstance(data, E.Var) and isinstance(offset, E.PrimExpr):
            size = annotation.dtype.bytes if isinstance(annotation, E.PrimExpr) else 1
            return data, ((offset, size),)
    if isinstance(pointer, E.Call) and pointer.op == "address_of" and pointer.args:
        load = pointer.args[0]
        if isinstance(load, E.BufferLoad):
            flat = _flat_index(load.buffer, load.indices)
            if flat is not None and not isinstance(flat, E.Ramp):
                return load.buffer.data, ((flat, load.buffer.dtype.bytes),)
    return None


def _flat_index(buffer: Buffer, indices: tuple[E.PrimExpr, ...]) -> E.PrimExpr | None:
    """The element index of `buffer[indices]` counted from the buffer's start, or None
    where its strides are not constants."""
    if len(indices) == 1:
        return indices[0]
    strides = [_constant(stride) for stride in buffer.strides]
    if not buffer.strides:
        shape = [_constant(extent) for extent in buffer.shape]
        if any(extent is None for extent in shape):
            return None
        sizes = [extent for extent in shape if extent is not None]
        strides = [math.prod(sizes[axis + 1 :]) for axis in range(len(sizes))]
    if any(
        stride is None or isinstance(index, E.Ramp)
        for stride, index in zip(strides, indices, strict=True)
    ):
        return None
    total: E.PrimExpr = E.IntImm(0, indices[0].dtype)
    for index, stride in zip(indices, strides, strict=True):
        assert stride is not None
        total = E.Add(total, E.Mul(index, E.IntImm(stride, index.dtype)))
    return total


# --- evaluating one access -----------------------------------------------------------------


def _relevant(site: _Site) -> set[E.Var]:
    """The variables that the addresses and the enclosing conditions depend on."""
    needed = vars_in(site.requests)
    for entry in site.scope:
        if entry.kind == "condition":
            needed |= vars_in(entry.value)
    for entry in reversed(site.scope):
        if entry.var in needed:
            needed |= vars_in((entry.value, entry.extent))
    return needed


def _measure(site: _Site, known: Mapping[E.Var, int]) -> AccessConflicts:
    result = AccessConflicts(site.access, unknown=site.unknown)
    if site.unknown is not None:
        return result
    threads = {entry.tag: entry for entry in site.scope if entry.kind == "lane"}
    try:
        extents = [_extent(threads.get(f"threadIdx.{axis}"), known) for axis in "xyz"]
    except NotEvaluable as error:
        return AccessConflicts(site.access, unknown=f"the block size: {error}")
    needed = _relevant(site)
    totals = _Totals()
    block = extents[0] * extents[1] * extents[2]
    try:
        for warp in range(-(-block // WARP)):
            lane = warp * WARP + np.arange(WARP)  # the block's linear thread index
            values: dict[E.Var, Values | int] = dict(known)
            below = 1
            for axis, extent in zip("xyz", extents, strict=True):
                entry = threads.get(f"threadIdx.{axis}")
                if entry is not None and entry.var is not None:
                    values[entry.var] = lane // below % extent
                below *= extent
            totals.contexts = 0
            for context, active in _contexts(site.scope, needed, values, lane < block, totals):
                for request in site.requests:
                    address = sum(
                        (evaluate(expr, context) * scale for expr, scale in request),
                        np.zeros(WARP, np.int64),
                    )
                    totals.add(address, active, site)
    except NotEvaluable as error:
        return AccessConflicts(site.access, unknown=str(error))
    return AccessConflicts(
        site.access,
        totals.instructions,
        totals.wavefronts,
        totals.ideal,
        totals.ways,
        totals.exhaustive,
        None,
        tuple(sorted(totals.assumed)),
    )


def _extent(entry: _Scope | None, known: Mapping[E.Var, int]) -> int:
    if entry is None or entry.extent is None:
        return 1
    return int(np.max(evaluate(entry.extent, known)))


@dataclass
class _Totals:
    instructions: int = 0
    wavefronts: int = 0
    ideal: int = 0
    ways: int = 0
    contexts: int = 0
    exhaustive: bool = True
    assumed: set[str] = field(default_factory=set)

    def add(self, address: Values, active: Mask, site: _Site) -> None:
        used = np.arange(WARP) < site.lanes_used
        address = np.broadcast_to(address, (WARP,))
        counts = phase_wavefronts(
            address[used], site.access.width, site.lanes_per_phase, active[used]
        )
        if not any(counts):
            return
        self.instructions += 1
        self.wavefronts += sum(counts)
        self.ideal += sum(1 for count in counts if count)
        self.ways = max(self.ways, *counts)


def _contexts(
    scope: Sequence[_Scope],
    needed: set[E.Var],
    values: dict[E.Var, Values | int],
    active: Mask,
    totals: _Totals,
) -> Iterator[tuple[dict[E.Var, Values | int], Mask]]:
    """Each assignment of the needed variables in scope, outermost first, with the lanes
    that the enclosing conditions leave active; at most MAX_CONTEXTS of them a warp."""
    if not scope:
        totals.contexts += 1
        yield values, active
        return
    entry, rest = scope[0], scope[1:]
    if entry.kind == "condition":
        try:
            holds = evaluate(entry.value, values) != 0
            active = active & (~holds if entry.negated else holds)
        except NotEvaluable as error:
            totals.assumed.add(str(error))
        yield from _contexts(rest, needed, values, active, totals)
    elif entry.kind == "let" and entry.var in needed:
        assert entry.var is not None
        bound = {**values, entry.var: evaluate(entry.value, values)}
        yield from _contexts(rest, needed, bound, active, totals)
    elif entry.kind == "loop" and entry.var in needed and entry.extent is not None:
        assert entry.var is not None
        start = np.broadcast_to(evaluate(entry.value, values), (WARP,))
        stop = start + np.broadcast_to(evaluate(entry.extent, values), (WARP,))
        low, high = int(start[active].min(initial=0)), int(stop[active].max(initial=0))
        for value in _samples(low, high, totals):
            if totals.contexts >= MAX_CONTEXTS:
                totals.exhaustive = False
                return
            inside = active & (start <= value) & (value < stop)
            yield from _contexts(rest, needed, {**values, entry.var: value}, inside, totals)
    else:
        yield from _contexts(rest, needed, values, active, totals)


def _samples(low: int, high: int, totals: _Totals) -> list[int]:
    """Every value of [low, high) when they are few; else the first four, the middle two
    and the last two."""
    if high - low <= EXHAUSTIVE_EXTENT:
        return list(range(low, high))
    totals.exhaustive = False
    middle = (low + high) // 2
    picked = itertools.chain(range(low, low + 4), (middle - 1, middle), (high - 2, high - 1))
    return sorted(set(picked))
