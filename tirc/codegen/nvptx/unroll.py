"""Which loops --ptx-via llvm emits unrolled: a loop of constant bounds whose variable indexes a
per-thread array. Only constant indices let LLVM keep such an array (an alloca) in registers;
nvcc unrolls these loops by itself, so without this a wgmma or mma accumulator that the CUDA C
path keeps in registers would live in local memory here, and ptxas would serialize the wgmmas
that read it.

    float acc[128]; for (i = 0; i < 128; ++i) C[f(i)] = acc[i];
    -> C[f(0)] = acc[0]; C[f(1)] = acc[1]; ... C[f(127)] = acc[127];

An intrinsic names an array by its data handle followed by the element offset (ptx_mma,
ptx_ldmatrix, ptx_wgmma, mma_store, tvm_access_ptr...): the offset is what must be constant.
"""

from __future__ import annotations

from tirc.codegen.cuda.kernels import allocation_size
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import uses_var, walk
from tirc.ir.node import Node

MAX_STATEMENTS = 2048  # what one unrolled loop may emit: its body's statements times its trips
_KINDS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)


def register_arrays(body: S.Stmt) -> set[E.Var]:
    """The data handles of the per-thread arrays of constant size that `body` allocates."""
    found: set[E.Var] = set()

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope == "local":
            if isinstance(allocation_size(node.buffer), E.IntImm):
                found.add(node.buffer.data)

    walk(body, visit)
    return found


def unrolled_extent(loop: S.For, registers: set[E.Var]) -> int | None:
    """How many copies of its body to emit for `loop`, or None to emit it as a loop."""
    if not registers or loop.kind not in _KINDS:
        return None
    if not (isinstance(loop.min, E.IntImm) and isinstance(loop.extent, E.IntImm)):
        return None
    if loop.step is not None and not E.is_const_int(loop.step, 1):
        return None
    statements, trips, once = 0, loop.extent.value, False

    def count(node: Node) -> None:
        nonlocal statements, trips, once
        if isinstance(node, S.Stmt):
            statements += 1
        if isinstance(node, S.For) and isinstance(node.extent, E.IntImm):
            trips *= max(1, node.extent.value)
        # what must be emitted once: a jump out of this loop, an allocation
        once |= isinstance(node, (S.Break, S.Continue, S.AllocBuffer))

    walk(loop.body, count)
    if once or statements * trips > MAX_STATEMENTS:
        return None
    return loop.extent.value if _indexes(loop.body, loop.loop_var, registers) else None


def _indexes(body: S.Stmt, var: E.Var, registers: set[E.Var]) -> bool:
    """Whether an access in `body` to one of `registers` has an index that uses `var`, or a
    variable bound from it (common subexpressions are bound before their uses)."""
    found = False
    derived = {var}

    def visit(node: Node) -> None:
        nonlocal found
        if isinstance(node, S.Bind) and uses_var(node.value, derived):
            derived.add(node.var)
        elif isinstance(node, (E.BufferLoad, S.BufferStore)):
            if node.buffer.data in registers and uses_var(node.indices, derived):
                found = True
        elif isinstance(node, E.Call):
            args = node.args
            for data, offset in zip(args, args[1:], strict=False):
                if isinstance(data, E.Var) and data in registers and uses_var(offset, derived):
                    found = True

    walk(body, visit)
    return found
