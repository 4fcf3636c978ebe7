"""One kernel as a CUDA C function: signature, dynamic shared memory, body."""

from __future__ import annotations

from tirc.analysis.arith.analyzer import Analyzer
from tirc.analysis.arith.bound import Bound
from tirc.codegen.cuda import types
from tirc.codegen.cuda.cluster import cluster_attribute
from tirc.codegen.cuda.expr import ExprPrinter
from tirc.codegen.cuda.kernels import Kernel, allocation_size, uses_of
from tirc.codegen.cuda.names import NameTable
from tirc.codegen.cuda.stmt import KernelWriter
from tirc.codegen.cuda.tma import tensor_map_params
from tirc.codegen.cuda.writer import Writer
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType
from tirc.ir.functor import walk
from tirc.ir.tma import shared_alignment

SHARED_ALIGNMENT = 16  # bytes; enough for the widest vector access (float4)


STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static shared memory a kernel may declare


def dynamic_shared_layout(kernel: Kernel) -> tuple[dict[Buffer, E.PrimExpr], E.PrimExpr]:
    """Byte offsets of the buffers carved from dynamic shared memory, and the bytes the launch
    must ask for. Those are `shared.dyn` buffers, `shared` ones whose size the launch decides,
    and every shared buffer of a kernel whose static ones would pass CUDA's 48 KiB limit."""
    allocations: list[tuple[Buffer, E.PrimExpr]] = []

    def visit(node: object) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope in ("shared", "shared.dyn"):
            allocations.append((node.buffer, allocation_size(node.buffer)))

    walk(kernel.body, visit)
    static_bytes = sum(
        size.value * _element_bytes(buffer)
        for buffer, size in allocations
        if buffer.scope == "shared" and isinstance(size, E.IntImm)
    )
    all_dynamic = static_bytes > STATIC_SHARED_LIMIT
    offsets: dict[Buffer, E.PrimExpr] = {}
    total: E.PrimExpr = E.IntImm(0, dt.INT64)
    for buffer, size in allocations:
        if buffer.scope == "shared" and isinstance(size, E.IntImm) and not all_dynamic:
            continue
        alignment = shared_alignment(kernel.body, buffer.data)
        if alignment > SHARED_ALIGNMENT:  # a TMA destination (tirc.ir.tma)
            total = _simplify(_round_up(total, alignment))
        offsets[buffer] = total
        element_bytes = E.IntImm(_element_bytes(buffer), dt.INT64)
        total = _simplify(E.Add(total, _round_up(E.Mul(size, element_bytes), SHARED_ALIGNMENT)))
    return offsets, total


def _round_up(expr: E.PrimExpr, alignment: int) -> E.PrimExpr:
    step = E.IntImm(alignment, dt.INT64)
    return E.Mul(E.FloorDiv(E.Add(expr, E.IntImm(alignment - 1, dt.INT64)), step), step)


def dynamic_shared_alignment(kernel: Kernel, offsets: dict[Buffer, E.PrimExpr]) -> int:
    """The alignment dynamic shared memory is declared with: the most its buffers need."""
    return max(
        [SHARED_ALIGNMENT, *(shared_alignment(kernel.body, buffer.data) for buffer in offsets)]
    )


def _element_bytes(buffer: Buffer) -> int:
    return max(1, buffer.dtype.bits * buffer.dtype.lanes // 8)


def _simplify(expr: E.PrimExpr) -> E.PrimExpr:
    return Analyzer().simplify(expr)


def shape_bound(var: E.Var) -> Bound:
    """What a shape variable may be: non-negative, and (so that sums with it are known not to
    wrap) below a quarter of its type's range."""
    return Bound(0, 2 ** (var.dtype.bits - 2))


def pointer_element(var: E.Var, buffers: dict[E.Var, Buffer]) -> DataType | None:
    """The element type a handle points at: its own annotation, or a buffer's over it."""
    if var.pointer is not None and not var.pointer.element.is_void:  # void: kept for its scope
        return var.pointer.element
    buffer = buffers.get(var)
    return buffer.dtype if buffer is not None else None


def kernel_text(kernel: Kernel, *, restrict: bool, sizes: frozenset[E.Var] = frozenset()) -> str:
    """`extern "C" __global__ void name(params) { body }`; `sizes` are variables known to be
    non-negative (shapes), which lets `//` and `%` print as C's `/` and `%`."""
    names = NameTable()
    printer = ExprPrinter(names)
    buffers = uses_of(kernel.body).buffers
    params = []
    for var in kernel.params:
        if var.dtype.is_handle:
            element = pointer_element(var, buffers)
            ctype = types.c_type(element) if element is not None else "void"
            if element is not None:
                printer.pointer_types[var] = element
            qualifier = " __restrict__" if restrict else ""
            params.append(f"{ctype}*{qualifier} {names(var)}")
        else:
            params.append(f"{types.c_type(var.dtype)} {names(var)}")
            if var.is_size_var or var in sizes:
                printer.analyzer.ranges[var] = shape_bound(var)
    params += tensor_map_params(printer, kernel.body)
    offsets, total = dynamic_shared_layout(kernel)
    bounds = _launch_bounds(kernel) + cluster_attribute(kernel.cluster)
    out = Writer()
    signature = f'extern "C" __global__ void{bounds} {kernel.name}({", ".join(params)})'
    with out.block(signature):
        if offsets:
            out.line(
                f"extern __shared__ __align__({dynamic_shared_alignment(kernel, offsets)}) "
                "unsigned char tirc_dynamic_shared[];"
            )
        KernelWriter(kernel, printer, out, offsets).emit(kernel.body)
    del total
    return out.text()


def _launch_bounds(kernel: Kernel) -> str:
    """`__launch_bounds__(threads)`, or `(threads, blocks)` where the kernel needs a bound on
    the blocks an SM holds (Kernel.blocks_per_sm)."""
    threads = kernel.threads_per_block()
    if threads is None:
        return ""
    blocks = kernel.blocks_per_sm()
    return f" __launch_bounds__({threads}{'' if blocks is None else f', {blocks}'})"
