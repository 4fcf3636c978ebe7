"""plan-buffer-allocation keeps a buffer above a loop whose iterations pass values to one
another through it (`_loop_carried`), and still moves it into loops that do not: each case
is a program and where the buffer ends up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.transform.helpers import lowered_computes_the_same, run_passes
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.text import parse

PROGRAMS = Path(__file__).parent / "programs"

HEADER = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    B = T.sblock_alloc_buffer((64,))
"""

# name -> (the body under `B = ...`, whether B moves into loop i)
CASES = {
    # a copy split by 48 under a predicate fills B exactly, then it is read
    "predicated_fill": (
        """
    for i in range(4):
        for f0 in range(2):
            for f1 in range(48):
                with T.sblock("fill"):
                    vi = T.axis.spatial(4, i)
                    v = T.axis.spatial(64, f0 * 48 + f1)
                    T.where(f0 * 48 + f1 < 64)
                    B[v] = A[v] + T.Cast("float32", vi)
        for j in range(64):
            with T.sblock("use"):
                v = T.axis.spatial(64, j)
                C[v] = C[v] + B[v]
""",
        True,
    ),
    # every other element only: the rest is what the previous iteration left
    "strided_fill": (
        """
    for i in range(4):
        for j in range(32):
            with T.sblock("fill"):
                vi, v = T.axis.remap("SS", [i, j])
                B[v * 2] = A[v * 2] + T.Cast("float32", vi)
        for j in range(64):
            with T.sblock("use"):
                v = T.axis.spatial(64, j)
                C[v] = C[v] + B[v]
""",
        False,
    ),
    # B[i] is read before this iteration writes it, but no other iteration writes there
    "own_element": (
        """
    for i in range(64):
        for k in range(4):
            with T.sblock("acc"):
                vi, vk = T.axis.remap("SS", [i, k])
                if vk == 0:
                    B[vi] = T.float32(0.0)
                B[vi] = B[vi] + A[vi]
        with T.sblock("use"):
            vi = T.axis.spatial(64, i)
            C[vi] = B[vi]
""",
        True,
    ),
    # B[i - 1] is what the previous iteration wrote
    "previous_element": (
        """
    for i in range(64):
        with T.sblock("fill"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi]
        with T.sblock("use"):
            vi = T.axis.spatial(64, i)
            T.where(1 <= i)
            C[vi] = B[vi - 1]
""",
        False,
    ),
    # an extern call gets B's address outside any block that says what it does with it
    "opaque_address": (
        """
    for i in range(4):
        with T.sblock("call"):
            vi = T.axis.spatial(4, i)
            T.reads()
            T.writes()
            T.evaluate(T.call_extern("int32", "fill", B.data, vi))
            with T.sblock("use"):
                C[vi] = B[vi]
""",
        False,
    ),
}


def _allocated_in_loop(module: IRModule, name: str) -> bool:
    """Whether buffer `name` is allocated by a block inside a loop."""
    found: list[bool] = []

    def look(node: object, depth: int) -> None:
        if isinstance(node, S.SBlock) and any(b.name == name for b in node.alloc_buffers):
            found.append(depth > 0)

    def visit(node: object, depth: int) -> None:
        look(node, depth)
        if isinstance(node, S.For):
            visit(node.body, depth + 1)
        elif isinstance(node, S.SeqStmt):
            for stmt in node.stmts:
                visit(stmt, depth)
        elif isinstance(node, S.SBlockRealize):
            visit(node.block, depth)
        elif isinstance(node, S.SBlock):
            visit(node.body, depth)

    visit(module["main"].body, 0)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name", CASES)
def test_buffer_moves_into_the_loop_only_when_no_value_crosses_iterations(name: str) -> None:
    body, moves = CASES[name]
    module = parse(HEADER + body, name=name)
    assert _allocated_in_loop(run_passes(module, "plan-buffer-allocation"), "B") is moves


def test_pipeline_with_fewer_iterations_than_stages_lowers_to_what_it_computes() -> None:
    """TVM's software-pipeline output for two iterations of three stages, lowered for the
    cpu: unroll-loop gave each copy of the loop its own B when B moved inside it."""
    path = PROGRAMS / "pipeline_fewer_iterations_than_stages.tir"
    lowered_computes_the_same(path, seed=0, target="cpu")
