"""Both GPU backends refuse fragments of two shapes where the interpreter does, with its
message and at its line (analysis.wmma_fragments, the one fact the three read): an mma whose
B is another shape than D, a fragment that a later call names with another shape, an mma
mixing plain memory with fragments."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.interp.test_wmma_shapes import REFUSAL_IDS, REFUSALS, SECOND_FRAGMENT
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.ir.function import IRModule
from tirc.text import parse

BACKENDS: dict[str, Callable[[IRModule], object]] = {
    "cuda-c": emit_cuda,
    "llvm": lambda module: emit_ptx(module, arch="sm_80"),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize(("old", "new", "message", "line"), REFUSALS, ids=REFUSAL_IDS)
def test_fragments_that_disagree_are_refused_at_the_call(
    backend: str, old: str, new: str, message: str, line: int
) -> None:
    module = lower_module(parse(SECOND_FRAGMENT.replace(old, new)), target="cuda")
    with pytest.raises(DiagnosticError) as caught:
        BACKENDS[backend](module)
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.message == message
    assert diagnostic.span is not None and diagnostic.span.line == line


# the mma each backend writes for the program in its one shape (m32n8k16)
MMA = {
    "cuda-c": "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 32, 8, 16, float> c[2];",
    "llvm": "wmma.mma.sync.aligned.row.row.m32n8k16.f32.f32",
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_same_program_in_one_shape_compiles(backend: str) -> None:
    module = lower_module(parse(SECOND_FRAGMENT), target="cuda")
    assert str(BACKENDS[backend](module)).count(MMA[backend]) == 1
