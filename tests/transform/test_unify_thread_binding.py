"""unify-thread-binding (and lift-thread-binding, which it shares) refuses a kernel whose loops
of one tag differ in extent, with the location of both, as TVM 0.27 does
(test_two_thread_x_in_same_kernel_not_equal); the same constant in two index types is one
extent, for the verifier too; nested virtual threads of one tag stay apart, unlike TVM."""

from __future__ import annotations

import numpy as np
import pytest

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import DiagnosticError, Severity
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.text import parse
from tirc.transform.registry import lookup_pass

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.thread_binding(128, thread="blockIdx.x"):
        for j0 in T.thread_binding(128, thread="threadIdx.x"):
            B[i, j0] = A[i, j0] * T.float32(2.0)
        for j1 in T.thread_binding(EXTENT, thread="threadIdx.x"):
            B[i, j1] = A[i, j1] + T.float32(1.0)
"""


@pytest.mark.parametrize("name", ["unify-thread-binding", "lift-thread-binding"])
def test_two_extents_of_one_tag_are_refused(name: str) -> None:
    module = parse(PROGRAM.replace("EXTENT", "64"))
    with pytest.raises(DiagnosticError, match="'threadIdx.x' is bound with another extent") as info:
        lookup_pass(name)().run(module)
    diagnostic = info.value.diagnostics[0]
    assert diagnostic.span is not None and diagnostic.span.line == 7
    assert [note.span.line for note in diagnostic.notes if note.span is not None] == [5]


def test_one_constant_in_two_index_types_is_one_extent() -> None:
    module = parse(PROGRAM.replace("EXTENT", "T.int64(128)"))
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    assert errors == []
    lifted = lookup_pass("unify-thread-binding")().run(module)
    assert [d for d in verify_module(lifted) if d.severity is Severity.ERROR] == []


NESTED_VTHREADS = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i_0 in T.thread_binding(2, thread="vthread.x"):
        for i_1 in T.thread_binding(8, thread="threadIdx.x"):
            for j_0 in T.thread_binding(2, thread="vthread.x"):
                for j_1 in range(8):
                    with T.sblock(""):
                        B[i_0 * 8 + i_1, j_0 * 8 + j_1] = A[i_0 * 8 + i_1, j_0 * 8 + j_1] * 2.0
"""


def test_nested_virtual_threads_stay_apart() -> None:
    """Unlike TVM 0.27 (test_vthread_x), two nested vthread.x loops are not made one: the
    s-tir program runs every pair of their values, and so does what the cuda pipeline makes
    of it (TVM's unified loop would write only the diagonal tiles)."""
    module = parse(NESTED_VTHREADS)
    assert lookup_pass("unify-thread-binding")().run(module) is module
    lowered = lower_module(module, target="cuda")
    args = random_inputs(module["main"], 0)
    want = {name: value.copy() for name, value in args.items()}
    run(module["main"], want, module=module)
    run(lowered["main"], args, module=lowered)
    np.testing.assert_array_equal(args["B"], want["B"])
    np.testing.assert_array_equal(want["B"], want["A"] * 2)
