"""storage-rewrite's reuse across an allocation scope (`_scope_reuse`): which allocations
share, and where the shared one is made."""

from __future__ import annotations

from tests.transform.helpers import run_passes
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer, make_buffer
from tirc.ir.dtype import parse_dtype
from tirc.ir.expr import IntImm, Var, int_value
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.text import parse
from tirc.transform.passes._scope_reuse import can_share, is_injective

SIBLINGS = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((64,), "float32"), Y: T.Buffer((64,), "float32")):
    with T.launch_thread("threadIdx.x", 8) as tx:
        for i in range(2):
            A = T.alloc_buffer((4,), scope="{scope}")
            for t in range(4):
                A[t] = X[tx * 8 + i * 4 + t]
            Y[tx * 8 + i] = A[0] + A[3]{escape}
        for j in range(2):
            B = T.alloc_buffer((8,), scope="{scope}")
            for t in range(8):
                B[t] = X[tx * 8 + t]
            Y[tx * 8 + j + 2] = B[j * 4]
"""


def _allocations(module: IRModule) -> list[tuple[str, int, bool]]:
    """Each allocation: its name, size and whether it is made inside a loop (False: at the
    top of the launch's body)."""
    in_loops: set[int] = set()
    found: list[S.AllocBuffer] = []

    def inside(node: object) -> None:
        if isinstance(node, S.AllocBuffer):
            in_loops.add(id(node))

    def look(node: object) -> None:
        if isinstance(node, S.For):
            walk(node.body, inside)
        if isinstance(node, S.AllocBuffer):
            found.append(node)

    walk(module["main"].body, look)
    return sorted(
        (node.buffer.name, int_value(node.buffer.shape[0]), id(node) in in_loops) for node in found
    )


def _lowered(scope: str, escape: str = "") -> IRModule:
    return run_passes(parse(SIBLINGS.format(scope=scope, escape=escape)), "storage-rewrite")


def test_tagged_local_buffers_share_one_allocation_at_the_top_of_the_launch() -> None:
    assert _allocations(_lowered("local.L0A")) == [("A", 8, False)]


def test_registers_are_left_to_the_backend() -> None:
    assert _allocations(_lowered("local")) == [("A", 4, True), ("B", 8, True)]


def test_an_address_taken_keeps_its_own_storage() -> None:
    escape = '\n            T.evaluate(T.call_extern("int32", "keep", T.address_of(A[0])))'
    assert _allocations(_lowered("global", escape)) == [("A", 4, True), ("B", 8, True)]


def test_which_dtypes_share_storage() -> None:
    """A later allocation lives in an earlier one's storage where its element size divides
    the earlier's (alignment), in memory rather than registers, and in whole bytes."""

    def buffer(dtype: str, scope: str = "shared") -> Buffer:
        return make_buffer("A", (IntImm(8),), parse_dtype(dtype), scope=scope)

    assert can_share(buffer("float32"), buffer("int16"))
    assert can_share(buffer("float32"), buffer("int8"))
    assert can_share(buffer("float64"), buffer("float32x2"))
    assert not can_share(buffer("float32"), buffer("float64"))
    assert not can_share(buffer("float32"), buffer("bool"))
    assert not can_share(buffer("float32", "local"), buffer("int32", "local"))
    assert can_share(buffer("float32", "local"), buffer("float32", "local"))
    assert not can_share(buffer("float32"), buffer("int16", "global"))


def test_an_index_is_injective_when_its_scales_form_a_mixed_radix() -> None:
    """In-place sharing needs each iteration to write its own element."""
    i, j = Var("i"), Var("j")
    four = {i: 4, j: 4}

    def scaled(var: Var, scale: int) -> E.PrimExpr:
        return E.Mul(var, IntImm(scale))

    assert is_injective(E.Add(E.Add(scaled(i, 4), j), IntImm(3)), four)
    assert is_injective(E.Sub(scaled(j, 4), i), four)
    assert not is_injective(E.Add(i, j), four)
    assert not is_injective(E.Add(scaled(i, 4), j), {i: 4, j: 5})  # (0, 4) and (1, 0) meet
    assert not is_injective(j, four)  # i varies but is not in it
    assert is_injective(j, {i: 1, j: 4})
