"""The CUDA C backend's stage counters (tirc.codegen.cuda.stage_counter): a loop's
`floormod(k + c, s)` for s not a power of two, carried by the loop instead of divided out in
every iteration. The rewrite run as the emitted C runs it (the counter in a register, set
before the loop and stepped at the end of each iteration) computes in the interpreter what
the program computes; the emitted CUDA C of the 3-stage GEMM plan reads its counters."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tirc.codegen.cuda.stage_counter import StageCounter, stage_counters
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import make_buffer
from tirc.ir.dtype import parse_dtype
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.text import parse

ROOT = Path(__file__).resolve().parents[2]
INT32 = parse_dtype("int32")

PROGRAM = """\
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((20, 4), "int32")):
        for k in range({low}, {low} + 20):
            v: T.int32 = (k + 2) % 3 * 100 + T.floormod(k - 1, 5) * 10 + (k + 1) % 4
            A[k - {low}, 0] = v
            A[k - {low}, 1] = T.floormod(2 + k, 3) + T.floormod(k + 5, 3) * 10
            for j in range(2):
                A[k - {low}, 2 + j] = k % 7 * 2 + j
"""


def _module(low: int) -> IRModule:
    return parse(PROGRAM.format(low=low), name="stage_counter.tir")


def _loop(module: IRModule) -> S.For:
    found: list[S.For] = []
    walk(module["main"].body, lambda node: found.append(node) if isinstance(node, S.For) else 0)
    return found[0]  # the outer loop: parents come first


def _as_emitted(module: IRModule) -> IRModule:
    """The program as the emitted C runs it: each counter a register (here a local buffer),
    set to its start before the loop and stepped at the end of every iteration."""
    func = module["main"]
    loop = _loop(module)
    counters, body = stage_counters(loop)
    state = make_buffer("stage", (E.IntImm(max(1, len(counters))),), INT32, "local")

    def load(i: int) -> E.PrimExpr:
        return E.BufferLoad(state, (E.IntImm(i),))

    steps: list[S.Stmt] = []
    for i, counter in enumerate(counters):
        last = E.IntImm(counter.divisor - 1)
        stepped = E.Select(E.EQ(load(i), last), E.IntImm(0), E.Add(load(i), E.IntImm(1)))
        steps.append(S.BufferStore(state, stepped, (E.IntImm(i),)))
    reads = [S.Bind(c.var, load(i)) for i, c in enumerate(counters)]
    new_loop = dataclasses.replace(loop, body=S.SeqStmt((*reads, body, *steps)))
    starts = [
        S.BufferStore(state, c.start(loop.min), (E.IntImm(i),)) for i, c in enumerate(counters)
    ]
    assert func.body is loop
    new_body = S.SeqStmt((S.AllocBuffer(state), *starts, new_loop))
    return module.with_function("main", dataclasses.replace(func, body=new_body))


@pytest.mark.parametrize("low", [0, -7, 5])
def test_counters_compute_what_the_loop_computes(low: int) -> None:
    module = _module(low)
    counters, _ = stage_counters(_loop(module))
    # (k + 2) % 3, floormod(2 + k, 3), floormod(k + 5, 3): one counter; k - 1 mod 5; k % 7
    assert sorted((c.offset, c.divisor) for c in counters) == [(0, 7), (2, 3), (4, 5)]
    want = np.zeros((20, 4), np.int32)
    run(module["main"], {"A": want}, module=module)
    k = np.arange(low, low + 20)
    assert (want[:, 0] == (k + 2) % 3 * 100 + (k - 1) % 5 * 10 + (k + 1) % 4).all()
    emitted = _as_emitted(module)
    got = np.zeros((20, 4), np.int32)
    run(emitted["main"], {"A": got}, module=emitted)
    np.testing.assert_array_equal(got, want)


def test_a_symbolic_start_is_computed_once() -> None:
    counter = StageCounter(E.Var("k_stage", INT32), 2, 3)
    n = E.Var("n", INT32)
    start = counter.start(n)
    assert isinstance(start, E.FloorMod) and isinstance(start.a, E.Add) and start.a.a is n
    first = counter.start(E.IntImm(-4))
    assert isinstance(first, E.IntImm) and first.value == 1  # floormod(-4 + 2, 3)


def _with_loop(**changes: object) -> S.For:
    loop = _loop(_module(0))
    return dataclasses.replace(loop, **changes)


def test_loops_that_cannot_carry_a_counter_are_left_alone() -> None:
    loop = _loop(_module(0))
    for changed in (
        dataclasses.replace(loop, step=E.IntImm(2)),
        dataclasses.replace(loop, kind=S.ForKind.UNROLLED),
        dataclasses.replace(loop, body=S.SeqStmt((loop.body, S.Continue()))),
    ):
        counters, body = stage_counters(changed)
        assert counters == [] and body is changed.body
    # a power-of-two divisor is one AND already: nothing to carry
    only_pow2 = "for k in range(8):\n            A[k, 0] = (k + 1) % 4"
    text = PROGRAM.format(low=0).split("for k in")[0] + only_pow2 + "\n"
    module = parse(text, name="pow2.tir")
    counters, body = stage_counters(_loop(module))
    assert counters == [] and body is _loop(module).body


def test_the_three_stage_gemm_reads_counters_in_its_cuda_c() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tirc",
            "compile",
            "samples/gpu/gemm_mma.tir",
            "--plan",
            "samples/gpu/gemm_mma_async3.plan.json",
            "--target",
            "cuda -arch=sm_90",
            "--emit",
            "cu",
            "-o",
            "-",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    text = done.stdout
    assert "int k_0_stage_2 = 2;" in text and "int k_0_stage = 0;" in text
    assert "k_0_stage_2 = k_0_stage_2 == 2 ? 0 : k_0_stage_2 + 1;" in text
    assert "k_0_stage = k_0_stage == 2 ? 0 : k_0_stage + 1;" in text
    assert "% 3" not in text
