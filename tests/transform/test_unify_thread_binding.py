"""unify-thread-binding (and lift-thread-binding, which it shares) refuses a kernel whose loops
of one tag differ in extent, with the location of both, as TVM 0.27 does
(test_two_thread_x_in_same_kernel_not_equal); the same constant in two index types is one
extent, for the verifier too."""

from __future__ import annotations

import pytest

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import DiagnosticError, Severity
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
