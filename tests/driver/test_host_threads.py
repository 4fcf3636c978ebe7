# ruff: noqa: E501 -- the programs are written one statement per line, as TVM prints them
"""GPU thread bindings on a CPU target, through the API: a located error at the first loop
bound to a GPU thread (scheduled or lowered code), while virtual threads compile and run."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.host_threads import check_runs_on_cpu
from tirc.driver.run_cpu import jit_function
from tirc.interp import run
from tirc.text import parse

BOUND = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for v in T.thread_binding(2, thread="vthread.x"):
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                with T.sblock("B"):
                    vi = T.axis.spatial(64, v * 32 + bx * 8 + tx)
                    B[vi] = A[vi] + T.float32(1)
"""

LAUNCHED = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    threadIdx_x = T.launch_thread("threadIdx.x", 64)
    B[threadIdx_x] = A[threadIdx_x] + T.float32(1)
"""

VIRTUAL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for v in T.thread_binding(2, thread="vthread.x"):
        for i in range(32):
            with T.sblock("B"):
                vi = T.axis.spatial(64, v * 32 + i)
                B[vi] = A[vi] * T.float32(2)
"""


def _error(text: str) -> DiagnosticError:
    module = parse(text, name="kernel.tir")
    with pytest.raises(DiagnosticError) as caught:
        jit_function(module, "main", "cpu")
    return caught.value


def test_a_gpu_bound_loop_is_refused_at_the_loop() -> None:
    (diagnostic,) = _error(BOUND).diagnostics
    assert diagnostic.message == "the cpu target cannot run a loop bound to blockIdx.x"
    assert diagnostic.span is not None
    assert str(diagnostic.span).startswith("kernel.tir:5:")  # the blockIdx.x loop, not the vthread
    assert any("--target cuda" in note.message for note in diagnostic.notes)


def test_a_launched_thread_of_lowered_code_is_refused_at_the_launch() -> None:
    (diagnostic,) = _error(LAUNCHED).diagnostics
    assert diagnostic.message == "the cpu target cannot run a loop bound to threadIdx.x"
    assert diagnostic.span is not None and str(diagnostic.span).startswith("kernel.tir:4:")


def test_every_function_with_gpu_threads_is_reported() -> None:
    two = "@I.ir_module\nclass Module:\n" + "".join(
        "    " + line.replace("def main", f"def {name}") + "\n"
        for name in ("f", "g")
        for line in BOUND.strip().splitlines()
    )
    with pytest.raises(DiagnosticError) as caught:
        check_runs_on_cpu(parse(two, name="kernel.tir"))
    assert len(caught.value.diagnostics) == 2


def test_virtual_threads_run_on_the_cpu() -> None:
    module = parse(VIRTUAL, name="kernel.tir")
    check_runs_on_cpu(module)
    a = np.arange(64, dtype=np.float32)
    compiled = {"A": a, "B": np.zeros(64, np.float32)}
    reference = {"A": a.copy(), "B": np.zeros(64, np.float32)}
    assert jit_function(module, "main", "cpu")(compiled) == 0
    run(module["main"], reference, module=module)
    np.testing.assert_array_equal(compiled["B"], reference["B"])
    np.testing.assert_array_equal(compiled["B"], a * 2)
