"""A software pipeline over a loop shorter than its stages, or of an extent known only at run
time (inject-software-pipeline), as TVM 0.27 allows (its test_less_loop_than_num_stage,
test_dynamic_compute): each statement of the prologue and epilogue runs only where its
iteration is one of the loop's. Golden pairs: golden/inject_software_pipeline/short_loop and
dynamic_extent; here each extent, 0 included, against the loop itself in the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.interp import random_inputs, run
from tirc.ir.function import IRModule
from tirc.text import parse

# a chain of STAGES statements through one-element buffers, one stage each
CHAIN = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((N,), "float32"), E: T.Buffer((N,), "float32")):
    for i in T.serial(N, annotations={"software_pipeline_stage": [0, 1, 2, 3]}):
        with T.sblock("compute"):
            B = T.sblock_alloc_buffer((1,), scope="shared")
            C = T.sblock_alloc_buffer((1,), scope="shared")
            D = T.sblock_alloc_buffer((1,), scope="shared")
            with T.sblock(""):
                B[0] = A[i] * T.float32(2.0)
            with T.sblock(""):
                C[0] = B[0] + T.float32(3.0)
            with T.sblock(""):
                D[0] = C[0] + T.float32(4.0)
            with T.sblock(""):
                E[i] = D[0] + T.float32(5.0)
"""

# each statement also counts its runs in R: one that ran twice for an iteration shows there
DYNAMIC = """
@T.prim_func(s_tir=True)
def main(a: T.handle, c: T.handle, R: T.Buffer((3,), "int32")):
    k = T.int32()
    A = T.match_buffer(a, (k,), "float32")
    C = T.match_buffer(c, (k,), "float32")
    for i in T.serial(k, annotations={"software_pipeline_stage": STAGES}):
        with T.sblock("compute"):
            B = T.sblock_alloc_buffer((1,), scope="shared")
            D = T.sblock_alloc_buffer((1,), scope="shared")
            with T.sblock(""):
                B[0] = A[i] * T.float32(2.0)
                R[0] = R[0] + 1
            with T.sblock(""):
                D[0] = B[0] + T.float32(1.0)
                R[1] = R[1] + 1
            with T.sblock(""):
                C[i] = D[0] * T.float32(3.0)
                R[2] = R[2] + 1
"""


def same_results(before: IRModule, after: IRModule, sizes: dict[str, int]) -> None:
    results = []
    for module in (before, after):
        func = module.functions[0][1]
        args = random_inputs(func, 0, sizes=sizes)
        run(func, args, module=module)
        results.append(args)
    for name, value in results[0].items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(results[1][name], value, err_msg=name)


@pytest.mark.parametrize("extent", [1, 2, 3, 4, 5])
def test_a_loop_of_any_length_computes_the_same(extent: int) -> None:
    module = parse(CHAIN.replace("N", str(extent)))
    same_results(module, run_passes(module, "inject-software-pipeline"), {})


@pytest.mark.parametrize("stages", ["[0, 1, 1]", "[0, 1, 2]", "[0, 0, 2]"])
def test_an_extent_known_at_run_time_computes_the_same(stages: str) -> None:
    module = parse(DYNAMIC.replace("STAGES", stages))
    after = run_passes(module, "inject-software-pipeline")
    for k in range(5):
        same_results(module, after, {"k": k})


def test_an_async_pipeline_needs_a_loop_of_its_stages() -> None:
    text = CHAIN.replace("N", "2").replace(
        '"software_pipeline_stage": [0, 1, 2, 3]',
        '"software_pipeline_stage": [0, 1, 2, 3], "software_pipeline_async_stages": [0]',
    )
    with pytest.raises(DiagnosticError, match="needs a loop of at least 3 iterations") as error:
        run_passes(parse(text), "inject-software-pipeline")
    span = error.value.diagnostics[0].span
    assert span is not None and span.line == 4
