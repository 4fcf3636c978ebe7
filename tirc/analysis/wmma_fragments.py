"""The shape of wmma fragments (tensor-core tiles): one fact read by the CUDA C and NVPTX
backends and by both interpreter models. A fragment buffer's (m, n, k) and layout come from
the `tvm_fill_fragment` / `tvm_*_matrix_sync` calls that name it; an mma takes D's shape, and
A, B and C must agree. On memory that is not a fragment, an mma is PLAIN_MMA_SHAPE.
"""

from __future__ import annotations

from tirc.diagnostics import DiagnosticError, Note
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import walk

FRAGMENT_SCOPES = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")
# tvm_mma_sync's (m, n, k) are not arguments: on plain memory (no fragment names a shape) it
# is the common wmma shape, in the interpreter and in both backends' element loops alike.
PLAIN_MMA_SHAPE = (16, 16, 16)
# the (m, n, k) the backends give tensor cores, by the input dtype (wmma in the PTX ISA)
SHAPES = {
    "float16": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "bfloat16": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "int8": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "uint8": ((16, 16, 16), (32, 8, 16), (8, 32, 16)),
    "float64": ((8, 8, 4),),
}
_SHAPED_CALLS = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync")

Shape = tuple[int, int, int, str]  # (m, n, k, layout)


def operand_shape(scope: str | None, m: int, n: int, k: int) -> tuple[int, int]:
    """(rows, cols) of one fragment of an m x n x k mma in a buffer of this scope."""
    if scope == "wmma.matrix_a":
        return m, k
    if scope == "wmma.matrix_b":
        return k, n
    return m, n


def is_fragment(data: object) -> bool:
    """Whether `data` is the data variable of a buffer in a wmma scope."""
    return (
        isinstance(data, E.Var)
        and data.pointer is not None
        and data.pointer.scope in FRAGMENT_SCOPES
    )


def fragment_shapes(body: S.Stmt) -> dict[E.Var, Shape]:
    """(m, n, k, layout) of each fragment, from the calls that name it, the fragment's match
    buffers (a tensorized block's view of it) sharing its shape; a located error where two
    calls give one fragment different shapes (a fragment has one), or an mma's fragments
    differ (mma_shape)."""
    calls: list[E.Call] = []
    aliases: dict[E.Var, E.Var] = {}  # a match buffer's data -> its source's

    def visit(node: object) -> None:
        if isinstance(node, S.SBlock):
            for match in node.match_buffers:
                aliases[match.buffer.data] = match.source.buffer.data
        elif isinstance(node, E.Call) and node.op in (*_SHAPED_CALLS, "tvm_mma_sync"):
            calls.append(node)

    walk(body, visit)

    def root(var: E.Var) -> E.Var:
        while var in aliases:
            var = aliases[var]
        return var

    shapes: dict[E.Var, Shape] = {}
    first: dict[E.Var, E.Call] = {}
    for call in calls:
        target, m, n, k = call.args[0], call.args[1], call.args[2], call.args[3]
        if call.op == "tvm_mma_sync" or not (
            isinstance(m, E.IntImm)
            and isinstance(n, E.IntImm)
            and isinstance(k, E.IntImm)
            and isinstance(target, E.Var)
        ):
            continue
        layout = "row_major"
        if call.op == "tvm_load_matrix_sync" and isinstance(call.args[-1], E.StringImm):
            layout = call.args[-1].value
        fragment = root(target)
        known = shapes.setdefault(fragment, (m.value, n.value, k.value, layout))
        if known[:3] != (m.value, n.value, k.value) and is_fragment(target):
            raise DiagnosticError.at(
                call.span,
                f"T.{call.op}: m{m.value}n{n.value}k{k.value} on fragment {target.name}, which "
                f"an earlier call makes m{known[0]}n{known[1]}k{known[2]} (a fragment has one "
                "shape)",
                Note("the earlier call", first[fragment].span),
            )
        first.setdefault(fragment, call)
    for alias in aliases:
        if root(alias) in shapes:
            shapes[alias] = shapes[root(alias)]
    for call in calls:
        if call.op == "tvm_mma_sync":
            mma_shape(call, shapes)
    return shapes


def mma_shape(call: E.Call, shapes: dict[E.Var, Shape]) -> tuple[int, int, int]:
    """(m, n, k) of `T.tvm_mma_sync(D, d, A, a, B, b, C, c)`: D's, with `shapes` from
    `fragment_shapes`; a located error where A, B or C has another shape or is not a fragment
    as D is (or is one where D is not), or D is a fragment no call gives a shape.
    PLAIN_MMA_SHAPE when no operand is a fragment."""
    operands = [call.args[i] for i in (0, 2, 4, 6)]
    if not any(is_fragment(arg) for arg in operands):
        return PLAIN_MMA_SHAPE
    d = operands[0]
    for arg in operands[1:]:
        if is_fragment(arg) != is_fragment(d):  # plain loops would read registers as elements
            what = arg.name if isinstance(arg, E.Var) else "an operand"
            if is_fragment(d):
                message = f"{what} is not a wmma fragment, and the call's first operand is"
            else:
                message = f"{what} is a wmma fragment, and the call's first operand is not"
            raise DiagnosticError.at(call.span, f"T.tvm_mma_sync: {message}")
    if not isinstance(d, E.Var) or d not in shapes:
        name = d.name if isinstance(d, E.Var) else "D"
        raise DiagnosticError.at(
            call.span, f"T.tvm_mma_sync: no wmma call says the shape of fragment {name}"
        )
    m, n, k, _ = shapes[d]
    for role, arg in zip("ABC", operands[1:], strict=True):
        shape = shapes.get(arg) if isinstance(arg, E.Var) else None
        if shape is not None and shape[:3] != (m, n, k):
            assert isinstance(arg, E.Var)  # shapes holds variables only
            raise DiagnosticError.at(
                call.span,
                f"T.tvm_mma_sync: {role} ({arg.name}) is m{shape[0]}n{shape[1]}k{shape[2]} and "
                f"D ({d.name}) m{m}n{n}k{k} (an mma's fragments have one shape)",
            )
    return m, n, k
