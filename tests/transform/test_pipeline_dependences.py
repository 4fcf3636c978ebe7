"""inject-software-pipeline refuses, at the reading statement, a stage or order that would
make a statement read another iteration's value of what an earlier statement writes, as TVM
0.27 does (its test_error_reorder); the same program in an order that keeps the dependence is
pipelined and computes what the loop does."""

from __future__ import annotations

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs, run
from tirc.text import parse

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    for tx in T.thread_binding(16, thread="threadIdx.x"):
        for i in T.serial(16, annotations={ANNOTATIONS}):
            with T.sblock(""):
                B = T.sblock_alloc_buffer((16, 1), scope="shared")
                C = T.sblock_alloc_buffer((16, 1), scope="shared")
                with T.sblock(""):
                    B[tx, 0] = A[tx, i] * T.float32(2.0)
                with T.sblock(""):
                    C[tx, 0] = B[tx, 0] + T.float32(2.0)
                with T.sblock(""):
                    D[tx, i] = C[tx, 0] + T.float32(1.0)
"""


def program(order: str, stage: str) -> str:
    annotations = f'"software_pipeline_order": {order}, "software_pipeline_stage": {stage}'
    return PROGRAM.replace("ANNOTATIONS", annotations)


@pytest.mark.parametrize(
    ("order", "stage", "message", "line", "note_line"),
    [
        ("[0, 2, 1]", "[0, 1, 1]", "two dependent statements of one stage cannot be", 13, 11),
        ("[0, 1, 2]", "[0, 1, 0]", "cannot read what a later stage writes", 13, 11),
    ],
)
def test_a_broken_dependence_is_refused(
    order: str, stage: str, message: str, line: int, note_line: int
) -> None:
    with pytest.raises(DiagnosticError, match=message) as error:
        run_passes(parse(program(order, stage)), "inject-software-pipeline")
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.span is not None and diagnostic.span.line == line
    assert [note.span.line for note in diagnostic.notes if note.span] == [note_line]


def test_a_kept_dependence_computes_the_same() -> None:
    module = parse(program("[0, 1, 2]", "[0, 1, 1]"))
    after = run_passes(module, "inject-software-pipeline")
    results = []
    for each in (module, after):
        func = each.functions[0][1]
        args = random_inputs(func, 0)
        run(func, args, module=each)
        results.append(args["D"])
    np.testing.assert_array_equal(results[1], results[0])
