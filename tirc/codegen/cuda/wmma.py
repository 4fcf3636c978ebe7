"""Tensor-core fragments (`wmma.*` scopes) and the `tvm_*_matrix_sync` calls as nvcuda::wmma.

Fragment shape and layout come from the calls on each fragment buffer (analysis.wmma_fragments,
the fact the NVPTX backend and the interpreter read too). A call on memory that is not a
fragment (a global or local array) is written out as the loops that define it in the
interpreter: fragments row-major, fragment `index` at element index * size.
"""

from __future__ import annotations

from tirc.analysis.wmma_fragments import PLAIN_MMA_SHAPE, Shape
from tirc.codegen.cuda import types
from tirc.codegen.cuda.expr import PRIMARY, Code, ExprPrinter
from tirc.codegen.cuda.kernels import allocation_size
from tirc.diagnostics import Diagnostic, DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import walk

WMMA = "nvcuda::wmma"
_ROLE = {
    "wmma.matrix_a": "matrix_a",
    "wmma.matrix_b": "matrix_b",
    "wmma.accumulator": "accumulator",
}


def check_fragment_accesses(body: S.Stmt) -> None:
    """Raises an error at the first element-by-element access (a load or store of one
    element) of each wmma fragment in `body`: a fragment's layout across the warp is
    opaque, so only the wmma calls can touch it. Such an access is a tensorize step that
    was never applied to the block it sits in."""
    first: dict[E.Var, E.BufferLoad | S.BufferStore] = {}

    def visit(node: object) -> None:
        if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.scope in _ROLE:
            first.setdefault(node.buffer.data, node)

    walk(body, visit)
    problems = [
        Diagnostic.error(
            f"wmma fragment {access.buffer.name} is {_ACCESS[type(access)][0]} element by "
            "element, which tirc cannot lower",
            access.span,
            Note("a fragment is spread over a warp's threads in a layout only wmma calls know"),
            Note(
                f"tensorize the block that {_ACCESS[type(access)][1]} it with a wmma intrinsic "
                "(`tirc intrinsics` lists them: wmma_fill_*, wmma_load_*, wmma_sync_*, "
                "wmma_store_*), or give the buffer scope 'local'"
            ),
        )
        for access in first.values()
    ]
    if problems:
        raise DiagnosticError(problems)


_ACCESS: dict[type, tuple[str, str]] = {
    E.BufferLoad: ("read", "reads"),
    S.BufferStore: ("written", "writes"),
}


def fragment_declaration(p: ExprPrinter, shapes: dict[E.Var, Shape], node: S.AllocBuffer) -> str:
    """The declaration of the fragment that `node` allocates, its shape from `shapes`
    (`fragment_shapes` of the kernel); `p` learns that the buffer is a fragment."""
    buffer = node.buffer
    shape = shapes.get(buffer.data)
    if shape is None:
        raise DiagnosticError.at(
            node.span, f"CUDA codegen: no wmma call says the shape of fragment {buffer.name}"
        )
    m, n, k, layout = shape
    role = _ROLE[buffer.scope]
    rows_cols = {"matrix_a": m * k, "matrix_b": k * n, "accumulator": m * n}[role]
    size = allocation_size(buffer)
    if not isinstance(size, E.IntImm):
        raise DiagnosticError.at(node.span, f"fragment {buffer.name} needs a constant size")
    count = max(1, size.value // rows_cols)
    element = types.scalar_type(buffer.dtype)
    layout_arg = "" if role == "accumulator" else f", {WMMA}::{layout}"
    fragment = f"{WMMA}::fragment<{WMMA}::{role}, {m}, {n}, {k}, {element}{layout_arg}>"
    p.fragments.add(buffer.data)
    if role == "accumulator":
        p.accumulators.add(buffer.data)
    return f"{fragment} {p.names(buffer.data)}[{count}];"


def print_wmma_call(p: ExprPrinter, call: E.Call) -> Code:
    fragments = p.fragments
    args = call.args
    if not (isinstance(args[0], E.Var) and args[0] in fragments):
        return _plain(p, call)
    if call.op == "tvm_fill_fragment":
        target, index, value = args[0], args[4], args[5]
        element = types.scalar_type(p.pointer_types[target])
        return f"{WMMA}::fill_fragment({p(target)}[{p(index)}], ({element}){p(value)})", PRIMARY
    if call.op == "tvm_load_matrix_sync":
        target, index, pointer, stride = args[0], args[4], args[5], args[6]
        layout = ""
        if target in p.accumulators:
            layout = f", {WMMA}::mem_{_layout(args[7])}"
        return (
            f"{WMMA}::load_matrix_sync({p(target)}[{p(index)}], {p(pointer)}, {p(stride)}{layout})",
            PRIMARY,
        )
    if call.op == "tvm_store_matrix_sync":
        source, index, pointer, stride = args[0], args[4], args[5], args[6]
        return (
            f"{WMMA}::store_matrix_sync({p(pointer)}, {p(source)}[{p(index)}], {p(stride)}, "
            f"{WMMA}::mem_{_layout(args[7])})",
            PRIMARY,
        )
    d, di, a, ai, b, bi, c, ci = args
    return (
        f"{WMMA}::mma_sync({p(d)}[{p(di)}], {p(a)}[{p(ai)}], {p(b)}[{p(bi)}], {p(c)}[{p(ci)}])",
        PRIMARY,
    )


def _layout(arg: object) -> str:
    return arg.value if isinstance(arg, E.StringImm) else "row_major"


def _plain(p: ExprPrinter, call: E.Call) -> Code:
    args = call.args
    if call.op == "tvm_fill_fragment":
        m, n = E.int_value(args[1]), E.int_value(args[2])
        return f"tirc_fill_fragment({p(args[0])}, {m * n}, {p(args[4])}, {p(args[5])})", PRIMARY
    if call.op in ("tvm_load_matrix_sync", "tvm_store_matrix_sync"):
        m, n, k = (E.int_value(a) for a in args[1:4])
        row_major = "true" if _layout(args[7]) == "row_major" else "false"
        name = call.op.replace("tvm_", "tirc_")
        rows, cols = m, n
        return (
            f"{name}({p(args[0])}, {rows}, {cols}, {p(args[4])}, {p(args[5])}, {p(args[6])}, "
            f"{row_major})",
            PRIMARY,
        )
    m, n, k = PLAIN_MMA_SHAPE
    return f"tirc_mma_sync({', '.join(p(arg) for arg in args)}, {m}, {n}, {k})", PRIMARY
