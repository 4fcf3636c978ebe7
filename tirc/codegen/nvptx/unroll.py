"""Which loops --ptx-via llvm emits unrolled: a loop of constant bounds whose variable indexes a
per-thread array. Only constant indices let LLVM keep such an array (an alloca) in registers;
nvcc unrolls these loops by itself, so without this a wgmma or mma accumulator that the CUDA C
path keeps in registers would live in local memory here, and ptxas would serialize the wgmmas
that read it.

    float acc[128]; for (i = 0; i < 128; ++i) C[f(i)] = acc[i];
    -> C[f(0)] = acc[0]; C[f(1)] = acc[1]; ... C[f(127)] = acc[127];

An intrinsic names an array by its data handle followed by the element offset (ptx_mma,
ptx_ldmatrix, ptx_wgmma, mma_store, tvm_access_ptr...): the offset is what must be constant.
wmma fragments (tirc.codegen.nvptx.wmma) are such arrays too, named by their data and the
fragment index (tvm_mma_sync's pairs; the fifth operand of the fill, load and store).
"""

from __future__ import annotations

from tirc.codegen.cuda.kernels import allocation_size
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import Visitor, uses_var, walk
from tirc.ir.node import Node

MAX_STATEMENTS = 2048  # what one unrolled loop may emit, its inner loops unrolled too
_KINDS = (S.ForKind.SERIAL, S.ForKind.UNROLLED)
_SCOPES = ("local", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")
_FRAGMENT_CALLS = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync")


def register_arrays(body: S.Stmt) -> set[E.Var]:
    """The data handles of the per-thread arrays (and wmma fragments) of constant size that
    `body` allocates."""
    found: set[E.Var] = set()

    def visit(node: Node) -> None:
        if isinstance(node, S.AllocBuffer) and node.buffer.scope in _SCOPES:
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
    size = _Size()
    size.visit(loop.body)
    if size.once or loop.extent.value * size.statements > MAX_STATEMENTS:
        return None
    return loop.extent.value if _indexes(loop.body, loop.loop_var, registers) else None


class _Size(Visitor):
    """The statements some code would emit with every loop of constant extent in it unrolled
    (a bound: not all will be), and whether it holds what must be emitted once: a jump out of
    the loop, an allocation."""

    def __init__(self) -> None:
        self.statements = 0
        self.once = False

    def visit(self, node: object) -> None:
        if isinstance(node, S.For):
            inner = _Size()
            inner.visit(node.body)
            trips = node.extent.value if isinstance(node.extent, E.IntImm) else 1
            self.statements += 1 + trips * inner.statements
            self.once |= inner.once
            return
        if isinstance(node, S.Stmt):
            self.statements += 1
            self.once |= isinstance(node, (S.Break, S.Continue, S.AllocBuffer))
        super().visit(node)


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
            if node.op in _FRAGMENT_CALLS and len(args) > 4:
                args = (args[0], args[4])
            for data, offset in zip(args, args[1:], strict=False):
                if isinstance(data, E.Var) and data in registers and uses_var(offset, derived):
                    found = True

    walk(body, visit)
    return found
