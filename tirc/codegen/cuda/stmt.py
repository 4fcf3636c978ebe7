"""Kernel bodies as CUDA C statements, one IR statement to one (or a few) lines.

Thread launches become `int tx = threadIdx.x;` (guarded where a kernel binds one thread tag at
a smaller extent than it launches with), virtual threads become loops (no pass interleaves
them yet, and with no barrier inside, running them in turn is what they mean), vector stores
become one store per lane except for aligned copies, which use CUDA's vector structs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from tirc.analysis.arith.bound import Bound
from tirc.analysis.wmma_fragments import Shape, fragment_shapes
from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import ExprPrinter
from tirc.codegen.cuda.kernels import Kernel, allocation_size, uses_of
from tirc.codegen.cuda.stage_counter import stage_counters
from tirc.codegen.cuda.wmma import check_fragment_accesses, fragment_declaration
from tirc.codegen.cuda.writer import Writer
from tirc.diagnostics import DiagnosticError
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, Range
from tirc.ir.dtype import DataType
from tirc.ir.functor import Dispatch, walk
from tirc.ir.structural import structural_equal
from tirc.ir.substitute import substitute
from tirc.ir.tma import shared_alignment

WMMA_SCOPES = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")


RULES: Dispatch[KernelWriter, [], None] = Dispatch("CUDA codegen")


class KernelWriter:
    """Emits one kernel's body; `dynamic_shared` maps buffers carved from the dynamic shared
    memory to their byte offsets."""

    def __init__(
        self,
        kernel: Kernel,
        printer: ExprPrinter,
        writer: Writer,
        dynamic_shared: dict[Buffer, E.PrimExpr],
    ) -> None:
        self.kernel = kernel
        self.p = printer
        self.out = writer
        self.dynamic_shared = dynamic_shared
        # wmma fragments' (m, n, k, layout), found on the first fragment access
        self.fragment_shapes: dict[E.Var, Shape] | None = None

    def emit(self, stmt: S.Stmt) -> None:
        rule = RULES.get(type(stmt))
        if rule is None:
            raise DiagnosticError.at(
                stmt.span, f"CUDA codegen: cannot emit {type(stmt).__name__} in a kernel"
            )
        rule(self, stmt)

    def scoped(self, var: E.Var, domain: Range, body: Callable[[], None]) -> None:
        """Runs `body` with `var` known to lie in `domain` (for proofs such as alignment)."""
        ranges = self.p.analyzer.ranges
        previous = ranges.get(var)
        self.p.analyzer.bind(var, domain)
        try:
            body()
        finally:
            if previous is None:
                ranges.pop(var, None)
            else:
                ranges[var] = previous

    def declare(self, var: E.Var) -> str:
        return f"{types.c_type(var.dtype)} {self.p.names(var)}"


@RULES.register(S.SeqStmt)
def _seq(w: KernelWriter, node: S.SeqStmt) -> None:
    for stmt in node.stmts:
        w.emit(stmt)


@RULES.register(S.AttrStmt)
def _attr(w: KernelWriter, node: S.AttrStmt) -> None:
    if node.key == "thread_extent" and isinstance(node.node, S.IterVar):
        _thread(w, node, node.node)
    elif node.key == "virtual_thread" and isinstance(node.node, S.IterVar):
        var = node.node.var
        name = w.p.names(var)
        with w.out.block(f"for ({w.declare(var)} = 0; {name} < {w.p(node.value)}; ++{name})"):
            w.scoped(var, Range(E.IntImm(0, var.dtype), node.value), lambda: w.emit(node.body))
    else:
        w.emit(node.body)  # pragmas and hints: nothing to say in CUDA C


def _thread(w: KernelWriter, node: S.AttrStmt, iter_var: S.IterVar) -> None:
    var, tag = iter_var.var, iter_var.thread_tag
    w.out.line(f"{w.declare(var)} = {_thread_value(tag, var)};")
    launched = w.kernel.dims.get(tag)
    domain = Range(E.IntImm(0, var.dtype), node.value)
    if launched is not None and not structural_equal(launched, node.value):
        with w.out.block(f"if ({w.p.names(var)} < {w.p(node.value)})"):
            w.scoped(var, domain, lambda: w.emit(node.body))
    else:
        w.scoped(var, domain, lambda: w.emit(node.body))


def _thread_value(tag: str, var: E.Var) -> str:
    value = tag  # blockIdx.x, threadIdx.y: CUDA spells them as tirc does
    if var.dtype.bits == 64:
        return f"(long long){value}"
    return f"(int){value}"


@RULES.register(S.For)
def _for(w: KernelWriter, node: S.For) -> None:
    var = node.loop_var
    name = w.p.names(var)
    start = w.p(node.min)
    end = node.extent if E.is_const_int(node.min, 0) else E.Add(node.min, node.extent)
    step = (
        "++" + name
        if node.step is None or E.is_const_int(node.step, 1)
        else (f"{name} += {w.p(node.step)}")
    )
    if node.kind is S.ForKind.UNROLLED:
        w.out.line("#pragma unroll")
    counters, body = stage_counters(node)
    for counter in counters:
        w.out.line(f"{w.declare(counter.var)} = {w.p(counter.start(node.min))};")

    def emit_body() -> None:
        w.emit(body)
        for counter in counters:
            counted = w.p.names(counter.var)
            last = counter.divisor - 1
            w.out.line(f"{counted} = {counted} == {last} ? 0 : {counted} + 1;")

    for counter in counters:
        emit_body = _within(w, counter.var, counter.divisor, emit_body)
    with w.out.block(f"for ({w.declare(var)} = {start}; {name} < {w.p(end)}; {step})"):
        w.scoped(var, Range(node.min, node.extent), emit_body)


def _within(
    w: KernelWriter, var: E.Var, divisor: int, body: Callable[[], None]
) -> Callable[[], None]:
    """`body` run with a stage counter known to lie in [0, divisor)."""
    domain = Range(E.IntImm(0, var.dtype), E.IntImm(divisor, var.dtype))
    return lambda: w.scoped(var, domain, body)


@RULES.register(S.While)
def _while(w: KernelWriter, node: S.While) -> None:
    with w.out.block(f"while ({w.p(node.condition)})"):
        w.emit(node.body)


@RULES.register(S.IfThenElse)
def _if(w: KernelWriter, node: S.IfThenElse) -> None:
    with w.out.block(f"if ({w.p(node.condition)})"):
        w.emit(node.then_case)
    if node.else_case is not None:
        w.out.lines[-1] = w.out.lines[-1] + " else {"
        w.out.depth += 1
        w.emit(node.else_case)
        w.out.depth -= 1
        w.out.line("}")


@RULES.register(S.BufferStore)
def _store(w: KernelWriter, node: S.BufferStore) -> None:
    if len(node.indices) > 1:
        raise DiagnosticError.at(
            node.span, f"CUDA codegen: buffer {node.buffer.name} is not flat; run flatten-buffer"
        )
    index = node.indices[-1] if node.indices else E.IntImm(0)
    pointer = w.p.pointer(node.buffer)
    lanes = node.value.dtype.lanes
    if lanes == 1 or node.buffer.dtype.is_vector:
        w.out.line(f"{pointer}[{w.p(index)}] = {w.p(node.value)};")
        return
    if isinstance(index, E.Ramp) and _is_vector_copy(w, node, index):
        # one 16-, 8- or 4-byte move: a vector struct, or raw words for the types that have none
        vector = types.copy_type(node.value.dtype)
        source = cast(E.BufferLoad, node.value)
        source_index = cast(E.Ramp, source.indices[-1])
        read = f"*({vector}*)({w.p.pointer(source.buffer)} + {w.p(source_index.base)})"
        w.out.line(f"*({vector}*)({pointer} + {w.p(index.base)}) = {read};")
        return
    if isinstance(index, E.Ramp) and _is_vector_map(w, node, index):
        _store_vector_map(w, node, index)
        return
    reads_itself = node.buffer.data in uses_of(node.value).used
    values = [w.p(node.value, lane) for lane in range(lanes)]
    if reads_itself:
        # every lane reads before any lane writes, as one vector store would
        temporary = w.p.names.fresh(f"{node.buffer.name}_lanes")
        element = types.scalar_type(node.value.dtype)
        w.out.line(f"{element} {temporary}[{lanes}] = {{{', '.join(values)}}};")
        values = [f"{temporary}[{lane}]" for lane in range(lanes)]
    for lane, value in enumerate(values):
        store = f"{pointer}[{w.p(index, lane)}] = {value};"
        if node.predicate is not None:
            store = f"if ({w.p(node.predicate, lane)}) {store}"
        w.out.line(store)


def _is_vector_copy(w: KernelWriter, node: S.BufferStore, index: E.PrimExpr) -> bool:
    value = node.value
    return (
        types.copy_type(value.dtype) is not None
        and node.predicate is None
        and isinstance(value, E.BufferLoad)
        and value.predicate is None
        and value.buffer.data is not node.buffer.data
        and w.p.is_contiguous(index)
        and w.p.is_aligned(index)
        and w.p.is_contiguous(value.indices[-1])
        and w.p.is_aligned(value.indices[-1])
        and not value.buffer.dtype.is_vector
        and not node.buffer.dtype.is_vector
    )


def _is_vector_map(w: KernelWriter, node: S.BufferStore, index: E.PrimExpr) -> bool:
    """An aligned contiguous store of lane-wise arithmetic whose unconditional loads are all
    aligned and contiguous, in a type CUDA has a vector struct for (float4, int4, ...)."""
    dtype: DataType = node.value.dtype
    if types.vector_type(dtype) is None:
        return False
    if node.predicate is not None or node.buffer.dtype.is_vector:
        return False
    if not (w.p.is_contiguous(index) and w.p.is_aligned(index)):
        return False
    loads = _vector_loads(node.value)
    return loads is not None and all(
        load.buffer.data is not node.buffer.data
        and load.predicate is None
        and types.vector_type(load.dtype) is not None
        and w.p.is_contiguous(load.indices[-1])
        and w.p.is_aligned(load.indices[-1])
        for load in loads
    )


def _vector_loads(expr: E.PrimExpr) -> list[E.BufferLoad] | None:
    """The vector loads of an expression, or None where one is conditional (if_then_else)."""
    loads: list[E.BufferLoad] = []
    conditional = False

    def visit(node: object) -> None:
        nonlocal conditional
        if isinstance(node, E.Call) and node.op == "if_then_else":
            conditional = True
        if isinstance(node, E.BufferLoad) and node.dtype.is_vector:
            loads.append(node)

    walk(expr, visit)
    return None if conditional else loads


def _store_vector_map(w: KernelWriter, node: S.BufferStore, index: E.Ramp) -> None:
    """`float4 A_v = *(float4*)(A + i); float4 B_v; B_v.x = ...; *(float4*)(B + j) = B_v;`:
    one 16-byte load per input and one store, the arithmetic lane by lane."""
    loads = _vector_loads(node.value) or []
    for load in loads:
        held = w.p.names.fresh(f"{load.buffer.name}_vec")
        w.out.line(f"{types.vector_type(load.dtype)} {held} = {w.p(load)};")
        w.p.held_loads[id(load)] = held
    dtype: DataType = node.value.dtype
    vector = types.vector_type(dtype)
    result = w.p.names.fresh(f"{node.buffer.name}_vec")
    w.out.line(f"{vector} {result};")
    for lane in range(dtype.lanes):
        w.out.line(f"{result}.{types.LANE_FIELDS[lane]} = {w.p(node.value, lane)};")
    base = w.p(index.base)
    w.out.line(f"*({vector}*)({w.p.pointer(node.buffer)} + {base}) = {result};")
    for load in loads:
        del w.p.held_loads[id(load)]


@RULES.register(S.AllocBuffer)
def _alloc(w: KernelWriter, node: S.AllocBuffer) -> None:
    buffer = node.buffer
    name = w.p.names(buffer.data)
    w.p.pointer_types[buffer.data] = buffer.dtype
    element = types.c_type(buffer.dtype)
    scope = buffer.scope
    if scope in WMMA_SCOPES:
        if w.fragment_shapes is None:
            check_fragment_accesses(w.kernel.body)
            w.fragment_shapes = fragment_shapes(w.kernel.body)
        w.out.line(fragment_declaration(w.p, w.fragment_shapes, node))
        return
    if buffer in w.dynamic_shared:
        offset = w.p(w.dynamic_shared[buffer])
        w.out.line(f"{element}* {name} = ({element}*)(tirc_dynamic_shared + {offset});")
        return
    size = allocation_size(buffer)
    if scope in ("shared", "shared.dyn"):
        assert isinstance(size, E.IntImm)  # others are dynamic shared memory
        align = shared_alignment(w.kernel.body, buffer.data)
        w.out.line(f"__shared__ __align__({align}) {element} {name}[{size.value}];")
    elif isinstance(size, E.IntImm):
        w.out.line(f"__align__(16) {element} {name}[{size.value}];")
    else:
        # a per-thread array whose size only the launch knows: the thread's stack holds it
        w.out.line(f"{element}* {name};")
        w.out.line(f"TIRC_ALLOCA({name}, {w.p(size)} * sizeof({element}));")


@RULES.register(S.DeclBuffer)
def _decl(w: KernelWriter, node: S.DeclBuffer) -> None:
    buffer = node.buffer
    if node.data is None or node.data is buffer.data:
        return  # a view of memory already named: accesses use its pointer
    element = types.c_type(buffer.dtype)
    w.p.pointer_types[buffer.data] = buffer.dtype
    w.out.line(f"{element}* {w.p.names(buffer.data)} = ({element}*)({w.p(node.data)});")


@RULES.register(S.Bind)
def _bind(w: KernelWriter, node: S.Bind) -> None:
    var, value = node.var, node.value
    if var.dtype.is_vector:
        w.p.vector_vars.add(var)
        lanes = ", ".join(w.p(value, lane) for lane in range(var.dtype.lanes))
        element = types.scalar_type(var.dtype)
        w.out.line(f"{element} {w.p.names(var)}[{var.dtype.lanes}] = {{{lanes}}};")
        return
    if var.dtype.is_handle:
        pointee = var.pointer.element if var.pointer is not None else None
        if pointee is not None and pointee.is_void:  # `T.handle(storage_scope="shared")`
            pointee = None
        ctype = f"{types.c_type(pointee)}*" if pointee is not None else "void*"
        if pointee is not None:
            w.p.pointer_types[var] = pointee
        w.out.line(f"{ctype} {w.p.names(var)} = ({ctype})({w.p(value)});")
        return
    w.out.line(f"{w.declare(var)} = {w.p(value)};")
    if var.dtype.is_integer:
        known = w.p.bound_values
        w.p.bound_values[var] = substitute(value, known) if known else value
    bound = w.p.analyzer.const_bound(value)
    if bound.min is not None or bound.max is not None:
        w.p.analyzer.ranges[var] = Bound(bound.min, bound.max)


@RULES.register(S.AssertStmt)
def _assert(w: KernelWriter, node: S.AssertStmt) -> None:
    # a kernel cannot return an error code; stopping the kernel is the closest to an assert
    with w.out.block(f"if (!({w.p(node.condition)}))"):
        w.out.line("__trap();")


@RULES.register(S.Evaluate)
def _evaluate(w: KernelWriter, node: S.Evaluate) -> None:
    if isinstance(node.value, (E.IntImm, E.FloatImm)):
        return
    w.out.line(f"{w.p(node.value)};")


@RULES.register(S.Break)
def _break(w: KernelWriter, node: S.Break) -> None:
    w.out.line("break;")


@RULES.register(S.Continue)
def _continue(w: KernelWriter, node: S.Continue) -> None:
    w.out.line("continue;")
